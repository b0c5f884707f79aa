"""The loop as one story: detect -> incident -> heal -> verify -> publish -> resolve -> train -> promote.

    run:      detect ─ CLEAN ─────────────────────────────────────────────────► train ─► assess ─► conclude
                 └ BLOCKED ─► incident ─► heal ─► verify ─► [publish gate] ─► publish ─► resolve ─┘   │
                              not healed / not verified: BLOCKED, the incident stays open    [promote gate]
    approve:  resume at a gate by reading the current state again and deciding anew
    reject:   stop at a gate; nothing more is published or promoted

Each stage takes the previous stage's typed result and returns its own (`controlplane.stages`). The guard runs
once per snapshot: on the pinned table at detect, on the healed copy at verify. Policy `ratify` pauses at both
gates; a NEEDS_REVIEW candidate pauses at the promote gate under any policy. A candidate that would be fit on
exactly the rows and spec the champion was is not trained: the run ends UNCHANGED, the champion standing. Every
writer holds the pipeline's lock; every external write is journaled before it is made
(`controlplane.runs.journal`), and a run whose process died is rolled back by the next writer
(`controlplane.takeback.recovery`).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import asdict, replace
from typing import Callable, Iterator

from controlplane.champion.rollout import reject_rollback, resume_rollback
from controlplane.datahub.incidents import IncidentRef
from controlplane.errors import TableChanged
from controlplane.models.modelstore import open_store
from controlplane.runs.context import RunContext, open_run
from controlplane.runs.journal import Event, RunJournal, RunRecord, load_run, new_run_id, raise_if_not
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import PipelineSpec, load_spec
from controlplane.stages.blocked import Blocked
from controlplane.stages.checkpoint import (
    Checkpoint,
    PromoteCheckpoint,
    PublishCheckpoint,
    RollbackCheckpoint,
    load_checkpoint,
    save_checkpoint,
)
from controlplane.stages.conclude import Approval, Concluded, conclude, passport_draft
from controlplane.stages.detect import TrainingView, detect
from controlplane.stages.heal import Healed, heal, raise_incidents, verify
from controlplane.stages.impact import measure_impact
from controlplane.stages.pin import Pinned, live_hash, verify_file
from controlplane.stages.publish import publish, remember_reference, resolve, resolve_cleared
from controlplane.stages.train import ChampionStands, Trained, assess, rescore_champion, train
from controlplane.takeback.recovery import recover_pipeline
from controlplane.vocab import Policy, RunStatus, Stage, Verdict
from controlplane.workspace import Workspace
from guard.findings import Verdict as GuardVerdict

__all__ = ["run_pipeline", "approve", "reject"]

Listener = Callable[[Event], None]


def run_pipeline(
    ws: Workspace,
    spec: PipelineSpec,
    *,
    policy: Policy | str | None = None,
    now_ms: int | None = None,
    listener: Listener | None = None,
    run_id: str | None = None,
) -> RunRecord:
    """One run of the loop, to its end or a gate; `run_id` may be chosen by the caller (an API answering early)."""
    now_ms = now_ms or int(time.time() * 1000)
    record = RunRecord(
        run_id or new_run_id(now_ms),
        spec.name,
        Policy(policy or spec.policy),
        started_ms=int(time.time() * 1000),
        now_ms=now_ms,
        pid=os.getpid(),
    )
    with pipeline_lock(ws, spec.name, f"run {record.run_id}"):
        recover_pipeline(ws, spec.name)
        RunJournal(ws, record).save()  # on disk from its first instant: a front door can answer with its id
        with open_run(ws, spec, record, listener) as run, _blocked_on_change(run):
            _story(run)
    return record


def _story(run: RunContext) -> None:
    detected = detect(run)
    if detected.report.verdict is GuardVerdict.CLEAN:
        resolve_cleared(run, detected.report)
        _train_and_promote(run, detected.view, detected.report.to_dict(), (), ())
        return
    raised = raise_incidents(run, detected.report)
    healed = heal(run, detected, raised)
    if isinstance(healed, Blocked):
        _stop(run, healed)
        return
    view = verify(run, healed)
    if isinstance(view, Blocked):
        _stop(run, view)
        return
    if not run.writes:
        run.finish(RunStatus.PLANNED, "dry-run: the heal verifies; nothing was published or written")
        return
    if run.policy is Policy.RATIFY:
        _pause(
            run,
            PublishCheckpoint(detected.pinned, healed, raised.incidents, detected.report.to_dict()),
            "the heal verifies",
            healed=healed.healed_path,
        )
        return
    _publish_and_train(run, detected.pinned, healed, view, raised.incidents, detected.report.to_dict())


def _publish_and_train(
    run: RunContext,
    pinned: Pinned,
    healed: Healed,
    view: TrainingView,
    incidents: tuple[IncidentRef, ...],
    detect_report: dict,
) -> None:
    published, snapshot = publish(run, pinned, healed)
    resolve(run, incidents, healed)
    view = replace(view, location_hash=published, location_version=snapshot)
    _train_and_promote(run, view, detect_report, incidents, tuple(asdict(s) for s in healed.steps))


def _train_and_promote(
    run: RunContext,
    view: TrainingView,
    detect_report: dict,
    incidents: tuple[IncidentRef, ...],
    remediations: tuple[dict, ...],
) -> None:
    if not run.writes:
        run.event(Stage.TRAIN, "skipped", "dry-run: no training, no MLflow writes")
        run.finish(RunStatus.PLANNED, f"dry-run: guard {view.report.verdict.value}; nothing was written")
        return
    remember_reference(run, view)
    trained = train(run, view, detect_report, incidents, remediations)
    if isinstance(trained, ChampionStands):
        run.event(Stage.TRAIN, "unchanged", trained.summary, champion_version=trained.version)
        run.finish(RunStatus.UNCHANGED, trained.summary)
        return
    measure_impact(run, trained)
    assessment = assess(run, trained)
    verdict = assessment.decision.verdict
    if verdict is Verdict.NEEDS_REVIEW or (verdict is Verdict.APPROVED and run.policy is Policy.RATIFY):
        _pause(
            run,
            PromoteCheckpoint(
                trained,
                verdict.value,
                assessment.decision.reasons,
                passport_draft=passport_draft(run, trained, assessment),
            ),
            f"v{trained.version} is {verdict.value}: " + "; ".join(assessment.decision.reasons),
            version=trained.version,
            verdict=verdict.value,
        )
        return
    _end(run, conclude(run, trained, assessment))


def _end(run: RunContext, concluded: Concluded) -> None:
    run.finish(concluded.run_status, concluded.summary)


def _stop(run: RunContext, blocked: Blocked) -> None:
    """End the run where a stage said it cannot go on (its incidents stay open)."""
    run.finish(RunStatus.BLOCKED, blocked.reason)


def _pause(run: RunContext, checkpoint: Checkpoint, why: str, **evidence: object) -> None:
    save_checkpoint(run.record, checkpoint)
    gate = checkpoint.gate.value
    run.event(
        Stage(gate),
        "paused",
        f"{why}; waiting for `kintsugi approve {run.run_id} --reason ...` "
        f"or `kintsugi reject {run.run_id} --reason ...`",
        **evidence,
    )
    run.finish(RunStatus.PAUSED, f"paused at the {gate} gate ({why})")


@contextmanager
def _blocked_on_change(run: RunContext) -> Iterator[None]:
    """A table that changed during the run ends it BLOCKED (nothing more is written), not as an error."""
    try:
        yield
    except TableChanged as exc:
        run.event(Stage.ERROR, "blocked", exc.message)
        run.finish(RunStatus.BLOCKED, f"BLOCKED: {exc.message}")


def _paused(ws: Workspace, run_id: str, action: str) -> RunRecord:
    record = load_run(ws, run_id)
    raise_if_not(
        record,
        RunStatus.PAUSED,
        action=action,
        fix="only a run paused at a gate can be approved or rejected; see `kintsugi runs`",
    )
    return record


def _decided(run: RunContext, stage: Stage, checkpoint: Checkpoint, reason: str, by: str) -> None:
    """The run's event of a person's decision at its gate: `stage` is APPROVE or REJECT."""
    done = "approved" if stage is Stage.APPROVE else "rejected"
    run.event(stage, done, f"{done} at the {checkpoint.gate.value} gate by {by}: {reason}", reason=reason, by=by)


def _claim(ws: Workspace, run_id: str, action: str) -> tuple[RunRecord, Checkpoint]:
    """Under the pipeline's lock: the run must still be paused; it becomes running (one of two racers wins).
    Its checkpoint is read first: one that cannot be read refuses the claim and leaves the run paused."""
    record = _paused(ws, run_id, action)
    checkpoint = load_checkpoint(record)
    record.status = RunStatus.RUNNING
    RunJournal(ws, record).save()
    return record, checkpoint


def approve(
    ws: Workspace,
    run_id: str,
    *,
    reason: str,
    by: str,
    now_ms: int | None = None,
    listener: Listener | None = None,
) -> RunRecord:
    """Continue a paused run past its gate, deciding again on the current state; it may pause at the next gate.
    `reason` and `by` are a person's, checked by the front door's service layer."""
    spec = load_spec(ws, _paused(ws, run_id, "approve").pipeline)
    with pipeline_lock(ws, spec.name, f"approve {run_id}"):
        recover_pipeline(ws, spec.name)  # as every writer: a run of the pipeline left mid-way is made consistent first
        record, checkpoint = _claim(ws, run_id, "approve")
        record.now_ms = now_ms or int(time.time() * 1000)
        with open_run(ws, spec, record, listener) as run, _blocked_on_change(run):
            save_checkpoint(record, None)
            _decided(run, Stage.APPROVE, checkpoint, reason, by)
            if isinstance(checkpoint, PublishCheckpoint):
                _resume_publish(run, checkpoint)
            elif isinstance(checkpoint, RollbackCheckpoint):
                resume_rollback(run, checkpoint, Approval(True, reason, by))
            else:
                _resume_promote(run, checkpoint, Approval(True, reason, by))
    return record


def _resume_publish(run: RunContext, checkpoint: PublishCheckpoint) -> None:
    """Publish only if the table, its pinned copy and the heal are as they were, and the heal verifies now."""
    verify_file(run.ws, checkpoint.pinned.table, checkpoint.pinned.table_hash, "publishing")
    if live_hash(run.ws, run.spec) != checkpoint.pinned.content_hash:
        raise TableChanged(
            f"{run.spec.data_text} changed since run {run.run_id} healed it",
            "reject this run and start a new one on the current data",
        )
    view = verify(run, checkpoint.healed)
    if isinstance(view, Blocked):
        _stop(run, view)
        return
    _publish_and_train(run, checkpoint.pinned, checkpoint.healed, view, checkpoint.incidents, checkpoint.detect_report)


def _resume_promote(run: RunContext, checkpoint: PromoteCheckpoint, approval: Approval) -> None:
    """Decide again on the current facts: the data, the champion and its score, the incidents."""
    trained = checkpoint.trained
    verify_file(run.ws, trained.view.table, trained.view.table_hash, "promoting")
    if live_hash(run.ws, run.spec) != trained.view.location_hash:
        raise TableChanged(
            f"{run.spec.data_text} changed since run {run.run_id} trained on it",
            "reject this run and start a new one on the current data",
        )
    trained, changes = _rescore_if_champion_moved(run, trained)
    assessment = assess(run, trained, also_now=True)
    if assessment.decision.verdict.value != checkpoint.verdict:
        changes.append(
            f"the gate now says {assessment.decision.verdict.value} (was {checkpoint.verdict}): "
            + "; ".join(assessment.decision.reasons)
        )
    if changes:
        run.event(Stage.APPROVE, "re-decided", "; ".join(changes), changes=changes)
    _end(run, conclude(run, trained, assessment, approval))


def _rescore_if_champion_moved(run: RunContext, trained: Trained) -> tuple[Trained, list[str]]:
    store = open_store(run.ws)
    if store.champion_version(run.spec.name) == trained.champion_version:
        return trained, []
    scored = rescore_champion(run, store, trained.view, trained.version)
    change = f"the champion moved from v{trained.champion_version} to v{scored.version} since the pause; rescored"
    moved = replace(
        trained, champion_version=scored.version, champion_metrics=scored.metrics, gain_error=scored.gain_error
    )
    return moved, [change]


def reject(ws: Workspace, run_id: str, reason: str, *, by: str) -> RunRecord:
    """Stop a paused run: nothing more is published or promoted; open incidents stay open."""
    spec = load_spec(ws, _paused(ws, run_id, "reject").pipeline)
    with pipeline_lock(ws, spec.name, f"reject {run_id}"):
        recover_pipeline(ws, spec.name)
        record, checkpoint = _claim(ws, run_id, "reject")
        with open_run(ws, spec, record) as run:
            save_checkpoint(record, None)
            _decided(run, Stage.REJECT, checkpoint, reason, by)
            if isinstance(checkpoint, PromoteCheckpoint):
                rejected = Approval(False, reason, by)
                _end(run, conclude(run, checkpoint.trained, assess(run, checkpoint.trained), rejected))
            elif isinstance(checkpoint, RollbackCheckpoint):
                reject_rollback(run, checkpoint, reason, by)
            else:
                run.finish(
                    RunStatus.REJECTED,
                    f"rejected at the publish gate: nothing was published; the incident stays open ({reason})",
                )
    return record
