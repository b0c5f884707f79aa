"""Act on what DataHub learned about the models, under the pipeline's policy and lock.

Every version whose training instant DataHub history now shows covered by a failure its passport did not know
of is marked at risk: an incident on its mlModel linked to the failure (`datahub.model_risk`) and the MLflow tag
`kintsugi.at_risk`. An unsafe champion is rolled back to the newest earlier version that is clean at its own
instant and whose signed evidence verifies — at once (auto), as a proposal that waits for `kintsugi approve`
(ratify: a paused record with a `RollbackCheckpoint`), or only in the report (dry-run). A champion that cannot
be rolled back (or whose rollback was rejected or undone) is flagged: the DataHub tag `unsafe-champion` and the
MLflow tag `kintsugi.flagged`.

Level-based: `plan` reads the current state, `apply` writes only what differs, in a record of its own with every
write in its ledger. A rollback record is undone by `kintsugi undo` like any run: the champion goes back to the
version it left, if nobody moved it since (a standing rollback excludes the version it left, an undone one no
longer does); a rollback cut short is recovered forward, never back onto the version it left.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.incident_records import IncidentState
from controlplane.datahub.model_risk import Cause, RiskWrite, flag_mcps, risk_write
from controlplane.datahub.port import AspectWrite, MetadataPort
from controlplane.models.champion_health import (
    Decision,
    VersionHealth,
    cause_of,
    decide,
    drift_since,
    prior_rollbacks,
    versions_health,
)
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.models.passport import evidence_refusal
from controlplane.runs.context import RunContext, open_run
from controlplane.runs.facts import Rollback
from controlplane.runs.journal import RunRecord, new_run_id
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import PipelineSpec
from controlplane.stages.checkpoint import RollbackCheckpoint, save_checkpoint
from controlplane.stages.conclude import Approval, move_champion
from controlplane.takeback.recovery import recover_pipeline
from controlplane.takeback.rollback import ABANDONED_KEY, UNDONE_KEY
from controlplane.vocab import LedgerKind, Policy, RunKind, RunStatus, Stage, Verdict
from controlplane.workspace import Workspace

if TYPE_CHECKING:
    from training.registry import ModelStore

__all__ = [
    "Mark",
    "Plan",
    "ChampionOutcome",
    "plan",
    "reconcile_champion",
    "resume_rollback",
    "reject_rollback",
    "AT_RISK_KEY",
    "FLAG_KEY",
]

AT_RISK_KEY = "kintsugi.at_risk"
FLAG_KEY = "kintsugi.flagged"
_ACTIVE, _RESOLVED = IncidentState.ACTIVE.value, IncidentState.RESOLVED.value


@dataclass(frozen=True)
class Mark:
    """One version at risk from one cause."""

    version: int
    cause: Cause
    trained_at_ms: int


@dataclass
class Plan:
    spec: PipelineSpec
    champion: int | None
    decision: Decision
    marks: list[Mark]
    versions: dict[int, dict[str, str]]  # MLflow tags by version
    health: list[VersionHealth] = field(default_factory=list)

    @property
    def flagged(self) -> int | None:
        """The version that should carry the flag: a champion kept unsafe (flagged, or waiting for approval)."""
        keeps = self.decision.action in ("flag", "waiting") or (
            self.decision.action == "rollback" and self.spec.policy is not Policy.AUTO
        )
        return self.champion if keeps else None

    @property
    def after(self) -> int | None:
        """The champion once the plan is applied under auto."""
        return self.decision.target if self.decision.action == "rollback" else self.champion


@dataclass(frozen=True)
class ChampionOutcome:
    pipeline: str
    decision: Decision
    at_risk: tuple[str, ...]  # "v2 <- urn" per mark
    action: str  # healthy | rolled-back | proposed | waiting | flagged | reported | none
    record: str | None = None
    message: str = ""


def _eligible(tags: dict[str, str] | None) -> bool:
    if not tags:
        return False
    return (
        tags.get("kintsugi.verdict") == Verdict.APPROVED.value and UNDONE_KEY not in tags and ABANDONED_KEY not in tags
    )


def plan(ws: Workspace, spec: PipelineSpec, metadata: MetadataPort, store: ModelStore, policy: Policy) -> Plan:
    """Read the versions' health, the champion, the rollbacks recorded, and decide."""
    name = spec.name
    with training_errors_mapped():
        champion, versions = store.champion_version(name), store.versions(name)
    health = versions_health(metadata, name)
    by_version = {h.version: h for h in health}
    current = (
        None
        if champion is None
        else by_version.get(champion)
        or VersionHealth(name, champion, 0, (), (), (), None, "DataHub holds no mlModel for it")
    )
    earlier = [h for h in health if h.version != champion and _eligible(versions.get(h.version))]
    decision = decide(current, earlier, prior_rollbacks(ws, name), lambda v: evidence_refusal(ws, store, name, v))
    marks = [Mark(h.version, cause_of(metadata, c), h.trained_at_ms) for h in health for c in h.learned]
    if current is not None and champion is not None and current.unreadable is None:
        marks += [Mark(champion, cause, current.trained_at_ms) for cause in drift_since(metadata, current)]
    chosen = spec if spec.policy is policy else _with_policy(spec, policy)
    return Plan(chosen, champion, decision, marks, versions, health)


def _with_policy(spec: PipelineSpec, policy: Policy) -> PipelineSpec:
    return replace(spec, policy=policy)


def _mark_writes(metadata: MetadataPort, plan_: Plan, champion: int | None, note: str, now_ms: int) -> list[RiskWrite]:
    """At-risk incidents to write so that the champion's are ACTIVE and the others RESOLVED."""
    writes = []
    for mark in plan_.marks:
        state = _ACTIVE if mark.version == champion else _RESOLVED
        message = _message(plan_.spec.name, mark.version, champion, state, note)
        write = risk_write(
            metadata, plan_.spec.name, mark.version, mark.cause, mark.trained_at_ms, state, message, now_ms
        )
        if write is not None:
            writes.append(write)
    return writes


def _message(pipeline: str, version: int, champion: int | None, state: str, note: str) -> str:
    if state == _ACTIVE:
        return f"v{version} is the champion of {pipeline}: a model trained on this data is serving"
    return note or (
        f"v{version} is not the champion of {pipeline} (" + (f"v{champion} is)" if champion else "it has none)")
    )


def _tag_writes(plan_: Plan) -> dict[int, str]:
    wanted: dict[int, list[str]] = {}
    for mark in plan_.marks:
        wanted.setdefault(mark.version, []).append(mark.cause.urn)
    values = {v: "; ".join(sorted(set(causes)))[:4000] for v, causes in wanted.items()}
    return {v: text for v, text in values.items() if plan_.versions.get(v, {}).get(AT_RISK_KEY) != text}


def _flag_changes(metadata: MetadataPort, plan_: Plan) -> tuple[list[AspectWrite], dict[int, str | None]]:
    """DataHub tag writes and MLflow flag changes (None: remove) so that only `plan_.flagged` is flagged."""
    flagged = plan_.flagged
    tagged = {v for v, tags in plan_.versions.items() if FLAG_KEY in tags}
    wanted = {v: v == flagged for v in plan_.versions}
    mlflow: dict[int, str | None] = {v: None for v in tagged if v != flagged}
    if flagged is not None and plan_.versions.get(flagged, {}).get(FLAG_KEY) != plan_.decision.why[:4000]:
        mlflow[flagged] = plan_.decision.why[:4000]
    return flag_mcps(metadata, plan_.spec.name, wanted), mlflow


def pending(metadata: MetadataPort, plan_: Plan, now_ms: int) -> bool:
    """Whether applying the plan would write anything."""
    mcps, mlflow = _flag_changes(metadata, plan_)
    return (
        plan_.decision.action == "rollback"
        or bool(mcps)
        or bool(mlflow)
        or bool(_tag_writes(plan_))
        or bool(_mark_writes(metadata, plan_, plan_.champion, "", now_ms))
    )


def reconcile_champion(ws: Workspace, spec: PipelineSpec, policy: Policy, now_ms: int) -> ChampionOutcome:
    """One pipeline's pass, under its lock: plan from the current state; under a writing policy, apply."""
    run_id = new_run_id(now_ms)
    with pipeline_lock(ws, spec.name, f"watch {run_id}"):
        recover_pipeline(ws, spec.name)
        with training_errors_mapped():
            store = open_store(ws)
        with metadata_session(ws, read_only=True) as metadata:
            found = plan(ws, spec, metadata, store, policy)
            needed = policy.writes and pending(metadata, found, now_ms)
        marks = tuple(f"v{m.version} <- {m.cause.urn}" for m in found.marks)
        if not needed:
            return ChampionOutcome(
                spec.name, found.decision, marks, _quiet_action(found, policy), message=found.decision.why
            )
        record = _new_record(run_id, spec, found, policy, now_ms)
        with open_run(ws, found.spec, record) as run:
            action = _apply(run, found)
        return ChampionOutcome(spec.name, found.decision, marks, action, record.run_id, record.outcome)


def _quiet_action(found: Plan, policy: Policy) -> str:
    """What a pass that writes nothing reports."""
    action = found.decision.action
    if not policy.writes and action == "rollback":
        return "reported"
    return {"flag": "flagged", "rollback": "proposed"}.get(action, action)


def _new_record(run_id: str, spec: PipelineSpec, found: Plan, policy: Policy, now_ms: int) -> RunRecord:
    decision = found.decision
    record = RunRecord(run_id, spec.name, policy, int(time.time() * 1000), now_ms, pid=os.getpid(), kind=RunKind.WATCH)
    if decision.action == "rollback" and decision.champion is not None:  # a rollback moves a champion, always
        record.kind = RunKind.ROLLBACK
        record.rollback = Rollback(decision.champion, decision.target, tuple(decision.causes))
    return record


def _apply(run: RunContext, found: Plan) -> str:
    """Write the plan; returns what happened (rolled-back, proposed, flagged, watched)."""
    decision, name = found.decision, run.spec.name
    run.event(
        Stage.WATCH,
        decision.action,
        decision.why,
        champion=decision.champion,
        causes=list(decision.causes),
        at_risk=[f"v{m.version} <- {m.cause.urn}" for m in found.marks],
    )
    _write_marks(run, found, found.champion, "")
    if decision.action == "rollback" and run.policy is Policy.AUTO:
        return _roll_back(run, found, decision.target, None)  # type: ignore[arg-type]
    _write_tags_and_flags(run, found)
    if decision.action == "rollback":
        checkpoint = RollbackCheckpoint(decision.champion, decision.target, decision.causes)  # type: ignore[arg-type]
        save_checkpoint(run.record, checkpoint)
        run.event(
            Stage.ROLLBACK,
            "paused",
            f"proposed: champion of {name} from v{decision.champion} back to "
            f"v{decision.target} ({decision.why}); waiting for `kintsugi approve {run.run_id} --reason ...` or "
            f"`kintsugi reject {run.run_id} --reason ...`",
            version=decision.target,
            previous=decision.champion,
        )
        run.finish(
            RunStatus.PAUSED,
            f"paused at the rollback gate: v{decision.champion} -> v{decision.target} "
            f"proposed; v{decision.champion} stays champion, flagged, until then",
        )
        return "proposed"
    flagged = found.flagged
    run.finish(
        RunStatus.WATCHED,
        (
            f"v{flagged} kept as champion, flagged: {decision.why}"
            if flagged
            else f"{len(found.marks)} version(s) at risk recorded; {decision.why}"
        ),
    )
    return "flagged" if flagged else "watched"


def _roll_back(run: RunContext, found: Plan, target: int, approval: Approval | None) -> str:
    decision, name = found.decision, run.spec.name
    move_champion(run, target)
    note = f"rolled back: the champion of {name} moved from v{decision.champion} to v{target} by run {run.run_id}"
    if approval is not None:
        note += f", approved by {approval.by}" + (f": {approval.reason}" if approval.reason else "")
    found.champion = target
    found.decision = Decision("healthy", target, None, (), f"v{target} is clean at its training instant")
    _write_marks(run, found, target, note)
    _write_tags_and_flags(run, found)
    run.event(
        Stage.ROLLBACK,
        "rolled-back",
        note + f" ({decision.why})",
        version=target,
        previous=decision.champion,
        causes=list(decision.causes),
    )
    run.finish(RunStatus.ROLLED_BACK, note)
    return "rolled-back"


def _write_marks(run: RunContext, found: Plan, champion: int | None, note: str) -> None:
    for write in _mark_writes(run.metadata, found, champion, note, run.now_ms):
        with run.journal.writing(
            LedgerKind.DATAHUB, write.urn, aspect="incidentInfo", state=write.state, at_risk=write.model
        ):
            run.metadata.emit([write.write], run.now_ms)


def _write_tags_and_flags(run: RunContext, found: Plan) -> None:
    name = run.spec.name
    with training_errors_mapped():
        store = open_store(run.ws)
        for version, text in sorted(_tag_writes(found).items()):
            with run.journal.writing(LedgerKind.MLFLOW_TAGS, f"{name}/{version}", tag=AT_RISK_KEY):
                store.set_version_tags(name, version, {AT_RISK_KEY: text})
    mcps, mlflow = _flag_changes(run.metadata, found)
    if mcps:
        with run.journal.writing(
            LedgerKind.DATAHUB, f"{name}@unsafe-champion", aspect="globalTags", flagged=found.flagged
        ):
            run.metadata.emit(mcps, run.now_ms)
    with training_errors_mapped():
        for version, why in sorted(mlflow.items()):
            with run.journal.writing(
                LedgerKind.MLFLOW_TAGS, f"{name}/{version}", tag=FLAG_KEY, flagged=why is not None
            ):
                if why is None:
                    store.delete_version_tags(name, version, [FLAG_KEY])
                else:
                    store.set_version_tags(name, version, {FLAG_KEY: why})


def resume_rollback(run: RunContext, checkpoint: RollbackCheckpoint, approval: Approval) -> None:
    """`approve` of a proposed rollback: decide again on the current state, then move (or say why not)."""
    with training_errors_mapped():
        store = open_store(run.ws)
    found = plan(run.ws, run.spec, run.metadata, store, run.policy)
    decision = found.decision
    if found.champion != checkpoint.from_version:
        run.event(
            Stage.ROLLBACK,
            "skipped",
            f"the champion moved since the proposal (now v{found.champion}); nothing was rolled back",
        )
        run.finish(
            RunStatus.WATCHED,
            f"nothing rolled back: the champion is v{found.champion} now, not v{checkpoint.from_version}",
        )
        return
    if decision.action == "rollback":
        if decision.target != checkpoint.to_version:
            run.event(
                Stage.APPROVE,
                "re-decided",
                f"v{checkpoint.to_version} is no longer the newest clean version; rolling back to v{decision.target}",
            )
        _roll_back(run, found, decision.target, approval)  # type: ignore[arg-type]
        return
    _write_marks(run, found, found.champion, "")
    _write_tags_and_flags(run, found)
    status = RunStatus.BLOCKED if decision.action == "flag" else RunStatus.WATCHED
    run.event(Stage.ROLLBACK, decision.action, f"not rolled back: {decision.why}")
    run.finish(status, f"not rolled back: {decision.why}")


def reject_rollback(run: RunContext, checkpoint: RollbackCheckpoint, reason: str, by: str) -> None:
    run.finish(
        RunStatus.REJECTED,
        f"rollback of v{checkpoint.from_version} to v{checkpoint.to_version} rejected by "
        f"{by}: {reason}; v{checkpoint.from_version} stays champion, flagged",
    )
