"""The loop: detect -> incident -> heal (sandbox) -> verify -> publish -> resolve -> train -> promote.

Each stage reads what it needs, calls a pure decision, writes, and appends to the run journal.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from datahub.metadata.schema_classes import IncidentInfoClass

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.estate import active_incidents_on, profile_mcps
from controlplane.datahub.incidents import IncidentRef, incident_key, open_incident, resolve_incident
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import assertion_urn
from controlplane.detect import guard_context, record_guard_run
from controlplane.errors import DataError
from controlplane.journal import Event, RunJournal, RunRecord, new_run_id
from controlplane.locks import pipeline_lock
from controlplane.spec import PipelineSpec
from controlplane.train import train_and_promote
from controlplane.workspace import Workspace
from guard.context import GuardContext
from guard.findings import Finding, GuardReport, Verdict
from guard.registry import CHECKS
from guard.runner import run_guard
from guard.snapshot import SnapshotError, read_snapshot
from remediations.registry import HealStep
from remediations.sandbox import HealOutcome, content_hash, heal_copy, publish

__all__ = ["run_pipeline", "LoopState", "open_state", "publish_and_train", "verify_heal", "heal_from_dict",
           "ref_from_dict"]


@dataclass
class LoopState:
    ws: Workspace
    spec: PipelineSpec
    metadata: MetadataPort
    journal: RunJournal
    now_ms: int

    @property
    def writes(self) -> bool:
        return self.journal.record.policy != "dry-run"

    @property
    def run_id(self) -> str:
        return self.journal.record.run_id


def run_pipeline(ws: Workspace, spec: PipelineSpec, *, policy: str | None = None, now_ms: int | None = None,
                 listener: Callable[[Event], None] | None = None, run_id: str | None = None) -> RunRecord:
    """One run of the loop; `run_id` may be chosen by the caller (an API that answers before the run ends)."""
    now_ms = now_ms or int(time.time() * 1000)
    record = RunRecord(run_id or new_run_id(now_ms), spec.name, policy or spec.policy, now_ms)
    with pipeline_lock(ws, spec.name, record.run_id):
        journal = RunJournal(ws, record, listener)
        journal.save()  # on disk from its first instant: a front door can answer with its id
        with open_state(ws, spec, journal, now_ms) as state:
            _loop(state)
    return record


@contextmanager
def open_state(ws: Workspace, spec: PipelineSpec, journal: RunJournal, now_ms: int) -> Iterator[LoopState]:
    """Open the stores for one stretch of a run; any error is recorded in the run and re-raised."""
    with metadata_session(ws, read_only=journal.record.policy == "dry-run") as metadata:
        try:
            yield LoopState(ws, spec, metadata, journal, now_ms)
        except Exception as exc:
            journal.event("error", "failed", str(exc))
            journal.finish("failed", str(exc))
            raise


def _loop(state: LoopState) -> None:
    context, report = _detect(state)
    if report.verdict is Verdict.CLEAN:
        _resolve_cleared(state, report)
        _remember_reference(state, context)
        train_and_promote(state, report, heal=None, incidents=[])
        return
    incidents = _raise_incidents(state, report)
    outcome = _heal(state, context, report)
    if outcome is None:
        return
    verified = verify_heal(state, context, outcome)
    if verified is None:
        return
    if not state.writes:
        state.journal.finish("planned", "dry-run: the heal verifies; nothing was published or written")
        return
    if state.journal.record.policy == "ratify":
        state.journal.record.state.update(gate="publish", heal=heal_to_dict(outcome),
                                          incident_refs=[ref_to_dict(r) for r in incidents])
        state.journal.event("publish", "paused", f"ratify: the heal verifies; waiting for "
                            f"`kintsugi approve {state.run_id}` before publishing", healed=str(outcome.healed_path))
        state.journal.finish("paused", "paused at the publish gate (heal verified, nothing published)")
        return
    publish_and_train(state, verified, outcome, incidents)


def publish_and_train(state: LoopState, verified: GuardContext, outcome: HealOutcome,
                      incidents: list[IncidentRef]) -> None:
    """Everything after a verified heal: publish, resolve, remember the reference, train, promote."""
    _publish(state, outcome)
    _resolve(state, incidents, outcome)
    _remember_reference(state, verified)
    train_and_promote(state, run_guard(verified), heal=outcome, incidents=incidents)


def _detect(state: LoopState) -> tuple[GuardContext, GuardReport]:
    data = state.spec.data
    if not data.is_file():
        raise DataError(f"data file {data} of pipeline {state.spec.name!r} does not exist",
                        f"check `data:` in {state.spec.source}, or re-seed with `kintsugi demo`")
    try:
        snapshot = read_snapshot(data)
    except SnapshotError as exc:
        raise DataError(str(exc), f"replace {data} with a readable parquet file") from exc
    context = guard_context(state.metadata, state.spec.feature_table, snapshot, state.now_ms)
    report = run_guard(context)
    state.journal.record.state["source_hash"] = content_hash(data)
    if state.writes:
        written = record_guard_run(state.metadata, report, state.run_id, state.now_ms)
        state.journal.ledger("datahub-aspect", state.spec.feature_table, what="assertions+run events", count=written)
    state.journal.event("detect", report.verdict.value, _summary(report), verdict=report.verdict.value,
                        findings=[f.to_dict() for f in report.findings], rows=snapshot.profile.row_count,
                        snapshot=str(data), content_hash=state.journal.record.state["source_hash"])
    return context, report


def _summary(report: GuardReport) -> str:
    if not report.findings:
        return f"guard CLEAN: {len(report.outcomes)} checks passed"
    return f"guard {report.verdict.value}: " + "; ".join(f.message for f in report.findings)


def _raise_incidents(state: LoopState, report: GuardReport) -> list[IncidentRef]:
    if not state.writes:
        state.journal.event("incident", "skipped", "dry-run: would raise an incident per blocking finding",
                            would_raise=[list(f.key) for f in report.blocking])
        return []
    refs = []
    for finding in report.blocking:
        refs.append(open_incident(state.metadata, finding, _assertion_of(finding), state.run_id, state.now_ms))
        state.journal.ledger("datahub-aspect", refs[-1].urn, aspect="incidentInfo", created=refs[-1].created)
    state.journal.event("incident", "raised", ", ".join(
        f"{'new' if r.created else 'reused'} {r.urn} ({r.key[1]} on {r.key[2] or 'dataset'})" for r in refs),
        incidents=[ref_to_dict(r) for r in refs])
    state.journal.record.state["incidents"] = [r.urn for r in refs]
    return refs


def _assertion_of(finding: Finding) -> str:
    """The assertion that recorded this failure: its check, on its column for per-column checks."""
    check = CHECKS.get(finding.check)
    column = finding.column if check is not None and check.per_column else None
    return assertion_urn(finding.dataset, finding.check or "guard", column)


def _heal(state: LoopState, context: GuardContext, report: GuardReport) -> HealOutcome | None:
    assert context.contract is not None
    sandbox = state.ws.run_dir(state.run_id) / "sandbox"
    outcome = heal_copy(state.spec.data, sandbox, report.blocking, context.contract, context.reference)
    evidence = {"steps": [s.__dict__ for s in outcome.steps], "before_hash": outcome.before_hash,
                "after_hash": outcome.after_hash, "unhealable": [f.to_dict() for f in outcome.unhealable],
                "refused": [{"finding": f.to_dict(), "why": why} for f, why in outcome.refused]}
    if not outcome.complete:
        why = [f"no safe playbook for {f.kind.value}" for f in outcome.unhealable] + [w for _, w in outcome.refused]
        state.journal.event("heal", "failed", "cannot heal: " + "; ".join(why), **evidence)
        state.journal.finish("blocked", "BLOCKED: " + "; ".join(why) + " (incident stays open)")
        return None
    state.journal.event("heal", "healed", "sandbox: " + "; ".join(
        f"{s.playbook} on {s.column} ({s.rows_touched} rows, {s.params})" for s in outcome.steps), **evidence)
    return outcome


def heal_to_dict(outcome: HealOutcome) -> dict[str, Any]:
    return {"healed_path": str(outcome.healed_path), "before_hash": outcome.before_hash,
            "after_hash": outcome.after_hash, "steps": [asdict(s) for s in outcome.steps]}


def heal_from_dict(data: dict[str, Any]) -> HealOutcome:
    return HealOutcome(Path(data["healed_path"]), data["before_hash"], data["after_hash"],
                       tuple(HealStep(**s) for s in data["steps"]))


def ref_to_dict(ref: IncidentRef) -> dict[str, Any]:
    return {"urn": ref.urn, "key": list(ref.key), "created": ref.created, "previous": ref.previous}


def ref_from_dict(data: dict[str, Any]) -> IncidentRef:
    return IncidentRef(data["urn"], tuple(data["key"]), data["created"], data["previous"])  # type: ignore[arg-type]


def verify_heal(state: LoopState, context: GuardContext, outcome: HealOutcome) -> GuardContext | None:
    try:
        healed = read_snapshot(outcome.healed_path)
    except SnapshotError as exc:
        state.journal.event("verify", "failed", f"healed copy unreadable: {exc}")
        state.journal.finish("blocked", "BLOCKED: the healed copy could not be read (incident stays open)")
        return None
    verified = GuardContext(**{**context.__dict__, "snapshot": healed})
    report = run_guard(verified)
    state.journal.event("verify", report.verdict.value, _summary(report), verdict=report.verdict.value,
                        findings=[f.to_dict() for f in report.findings])
    if report.verdict is not Verdict.CLEAN:
        state.journal.finish("blocked", "BLOCKED: the heal did not verify (incident stays open)")
        return None
    return verified


def _publish(state: LoopState, outcome: HealOutcome) -> None:
    backup = state.ws.run_dir(state.run_id) / "previous.parquet"
    before, after = publish(outcome.healed_path, state.spec.data, backup)
    state.journal.ledger("publish", str(state.spec.data), backup=str(backup), before_hash=before, after_hash=after)
    state.journal.event("publish", "published", f"healed table published to {state.spec.data}",
                        before_hash=before, after_hash=after, backup=str(backup))


def _resolve(state: LoopState, incidents: list[IncidentRef], outcome: HealOutcome) -> None:
    notes = "; ".join(f"{s.playbook} {s.params} on {s.column}, {s.rows_touched} rows" for s in outcome.steps)
    note = f"healed by run {state.run_id}: {notes}; before {outcome.before_hash} after {outcome.after_hash}; verified CLEAN"
    for ref in incidents:
        resolve_incident(state.metadata, ref.urn, note, state.now_ms)
        state.journal.ledger("datahub-aspect", ref.urn, aspect="incidentInfo", state="RESOLVED")
    state.journal.event("resolve", "resolved", f"{len(incidents)} incident(s) RESOLVED with heal notes",
                        incidents=[r.urn for r in incidents], note=note)


def _resolve_cleared(state: LoopState, report: GuardReport) -> None:
    """ACTIVE incidents of this dataset whose failure the guard no longer sees: cleared at the source."""
    if not state.writes:
        return
    failing = {f.key for f in report.blocking}
    for urn in active_incidents_on(state.metadata, state.spec.feature_table):
        info = state.metadata.aspect(urn, IncidentInfoClass)
        key = incident_key(info) if info else None
        if key is not None and key not in failing:
            resolve_incident(state.metadata, urn, f"cleared at the source: run {state.run_id} no longer sees it",
                             state.now_ms)
            state.journal.ledger("datahub-aspect", urn, aspect="incidentInfo", state="RESOLVED")
            state.journal.event("resolve", "cleared", f"{urn} cleared at the source", incident=urn)


def _remember_reference(state: LoopState, context: GuardContext) -> None:
    if state.writes and context.snapshot is not None:
        state.metadata.emit(profile_mcps(state.spec.feature_table, context.snapshot.profile, state.now_ms), state.now_ms)
        state.journal.ledger("datahub-aspect", state.spec.feature_table, aspect="datasetProfile")
