"""Accept rows that passed earlier, rewritten since, as the history: the way out of `history_changed`.

A batch the guard passed is kept with its profile. When its rows in the table change in a way no check names,
every later run blocks on `history_changed`: the guard cannot tell a producer restating a batch from a silent
rewrite, and no playbook restores rows it no longer has. A person who knows the rewrite is right names it
(`kintsugi accept RUN_ID --finding history_changed --reason TEXT`). Every batch the run's `history_changed` blocks
lie on is profiled again from the run's pinned snapshot (the bytes the guard read, read through
`reading_pinned`) over the batch's own window, and that profile replaces the kept one; the profile it replaces is
kept in the run's folder and journaled, so `--undo` puts it back. The incident is resolved, DataHub's institutional
memory of the dataset says who and why, and an `Acceptance` per batch is kept beside the reference. The run itself
stays BLOCKED (nothing of it was trained); the next run guards its new rows against the history as it is now.

Refused, with the way on: a run blocked by anything else as well (each block has its own way), rows that lie in
no batch (late rows: `kintsugi init --force` once they are checked), a batch whose rows a heal set aside (its
kept profile is of the rows less those), and a run whose snapshot no longer holds what its guard counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controlplane.errors import InputError, RunStateError
from controlplane.onboard.accept_block import (
    active_incidents,
    blocks_of,
    kept_state,
    pinned_snapshot,
    record_acceptances,
    record_withdrawals,
)
from controlplane.runs.context import RunContext, open_run
from controlplane.runs.journal import RunRecord, load_run
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import load_spec
from controlplane.stages.acceptances import Acceptance, load_acceptances
from controlplane.stages.kept_reference import (
    KeptBatches,
    ReferenceState,
    batch_text,
    kept_asides,
    replace_batch,
)
from controlplane.stages.publish import emit_reference_profile
from controlplane.takeback.recovery import recover_pipeline
from controlplane.vocab import LedgerKind, RunStatus, Stage
from controlplane.workspace import Workspace
from guard.findings import Finding
from guard.kinds import FindingKind
from profiles.profile import BatchProfile

__all__ = ["names_a_rewrite", "accept_rewrite", "withdraw_rewrite", "REWRITE"]

REWRITE = FindingKind.HISTORY_CHANGED


def names_a_rewrite(record: RunRecord, picks: list[str]) -> bool:
    """`picks` name the run's `history_changed` blocks (and nothing else): the rewrite's way, and its refusals."""
    return bool(picks) and all(_is_rewrite(p) for p in picks) and bool(_rewrites(record))


def _is_rewrite(pick: str) -> bool:
    """`--finding history_changed`, with or without its (empty) column."""
    return pick in (REWRITE.value, f"{REWRITE.value}:")


def _rewrites(record: RunRecord) -> list[Finding]:
    return [f for f in blocks_of(record) if f.kind is REWRITE]


@dataclass(frozen=True)
class _Rewritten:
    finding: Finding
    batch: BatchProfile  # as kept


def _chosen(ws: Workspace, record: RunRecord, state: ReferenceState) -> list[_Rewritten]:
    """Each kept batch the run's `history_changed` blocks lie on, checked: the run ended blocked at the guard and
    unhealed, no other block stands, every block lies on kept batches, none of them holds rows set aside."""
    run_id, blocks = record.run_id, blocks_of(record)
    if record.status is not RunStatus.BLOCKED or record.last_event(Stage.PUBLISH) is not None:
        raise RunStateError(
            f"run {run_id} is {record.status.value}; a rewrite is accepted on a run that ended blocked at the guard",
            "see `kintsugi runs`",
        )
    others = [f for f in blocks if f.kind is not REWRITE]
    if others:
        listed = ", ".join(f"{f.kind.value}:{f.column or ''}" for f in others)
        raise RunStateError(
            f"run {run_id} is also blocked by {listed}: the history is accepted on a run blocked by nothing else",
            "fix those upstream (or accept them on their own run) and run again",
        )
    kept = KeptBatches(ws, record.pipeline)
    batches = [kept.batch(b) for b in state.batches]
    chosen: list[_Rewritten] = []
    for finding in _rewrites(record):
        lies_on = [b for b in batches if _within(b, finding)] if finding.rows is not None else []
        if not lies_on:
            raise RunStateError(
                f"run {run_id}: {finding.message}",
                "these rows lie in no batch that passed: drop them, or once they are checked take the reference "
                "again from the whole table with `kintsugi init --force`",
            )
        chosen += [_Rewritten(finding, b) for b in lies_on]
    asides = kept_asides(ws, record.pipeline, state)
    held = [r.batch.batch_id for r in chosen if r.batch.batch_id in asides]
    if held:
        raise RunStateError(
            f"batch {', '.join(held)} holds rows a heal set aside: its kept profile is of the rows less those",
            "take the reference again from the whole table with `kintsugi init --force`",
        )
    return chosen


def _within(batch: BatchProfile, finding: Finding) -> bool:
    window, rows = batch.window, finding.rows
    if window is None or rows is None or window.column != rows.column:
        return False
    low, high = rows.bounds
    starts_in = low is None or (window.after_ms is not None and window.after_ms >= low)
    ends_in = high is None or (window.through_ms is not None and window.through_ms <= high)
    return starts_in and ends_in


def _profiled_again(run: RunContext, record: RunRecord, kept: BatchProfile) -> BatchProfile:
    """The batch's window as the run's pinned snapshot holds it, profiled as the guard profiles a batch."""
    assert kept.window is not None  # `_within` chose batches with a window
    snapshot = pinned_snapshot(run, record, kept.window, kept.batch_id)
    if snapshot.batch is None or snapshot.batch.profile.row_count == 0:
        raise RunStateError(
            f"the rows of batch {kept.batch_id} cannot be found in the snapshot of run {record.run_id}",
            "run the pipeline again and accept the new run's block",
        )
    return snapshot.batch


def _kept_before(run_dir: Path, batch_id: str) -> Path:
    """Where the run keeps a batch's JSON as it stood before the rewrite was accepted."""
    return run_dir / "history" / f"{batch_id.replace('/', '_')}.json"


def accept_rewrite(ws: Workspace, run_id: str, reason: str, *, by: str, now_ms: int) -> tuple[Acceptance, ...]:
    """Accept the rewritten batches of a run blocked only by `history_changed` as the history (everything is
    checked before anything is written; a retry after an interruption finishes what was begun)."""
    spec = load_spec(ws, load_run(ws, run_id).pipeline)
    with pipeline_lock(ws, spec.name, f"accept {run_id}"):
        recover_pipeline(ws, spec.name)
        record = load_run(ws, run_id)
        state = kept_state(ws, spec.name)
        chosen = _chosen(ws, record, state)
        kept = load_acceptances(ws, spec.name)
        if any(a.run_id == run_id and a.in_force for a in kept):
            raise RunStateError(
                f"run {run_id} was accepted already",
                f"take it back first with `kintsugi accept {run_id} --undo --reason TEXT`",
            )
        status, outcome = record.status, record.outcome
        with open_run(ws, spec, record, on_error=None) as run:
            profiles = [(r, _profiled_again(run, record, r.batch)) for r in chosen]
            for rewritten, profile in profiles:
                _replace(run, rewritten.batch.batch_id, profile.to_json())
            emit_reference_profile(run)
            said = ", ".join(f"batch {r.batch.batch_id}" for r in chosen)
            note = f"the rewrite of {said} accepted as the history by {by} (run {run_id}) — {reason}"
            incidents = active_incidents(run.metadata, spec.feature_table)
            accepted = tuple(
                Acceptance(run_id, REWRITE, "", by, reason, now_ms, r.batch.batch_id, incidents.get(r.finding.key, ""))
                for r in chosen
            )
            done = f"{note}; the next run guards its new rows against the history as it is now"
            batches = [r.batch.batch_id for r in chosen]
            record_acceptances(run, accepted, kept, note, by, now_ms, done, rewritten=batches, reason=reason)
            run.finish(status, outcome)
    return accepted


def _replace(run: RunContext, batch_id: str, text: str) -> None:
    """The batch's JSON replaced, journaled with where the JSON it replaces is kept (kept once: a retry keeps the
    first)."""
    before = _kept_before(run.journal.run_dir, batch_id)
    if not before.is_file():
        with run.journal.writing(LedgerKind.WORKSPACE_FILE, run.ws.rel(before), kept_before=batch_id):
            before.parent.mkdir(parents=True, exist_ok=True)
            before.write_text(batch_text(run.ws, run.spec.name, batch_id))
    with run.journal.writing(LedgerKind.REFERENCE, run.spec.name, rewrite=batch_id, previous=run.ws.rel(before)):
        replace_batch(run.ws, run.spec.name, batch_id, text)


def withdraw_rewrite(
    ws: Workspace, run_id: str, reason: str, picks: list[str], *, by: str, now_ms: int
) -> tuple[Acceptance, ...]:
    """Take back an accepted rewrite: each batch's JSON as it stood before is put back, each acceptance marked
    withdrawn (kept on record), the incident ACTIVE again."""
    spec = load_spec(ws, load_run(ws, run_id).pipeline)
    with pipeline_lock(ws, spec.name, f"accept --undo {run_id}"):
        recover_pipeline(ws, spec.name)
        record = load_run(ws, run_id)
        standing = [a for a in load_acceptances(ws, spec.name) if a.run_id == run_id and a.in_force]
        unknown = [p for p in picks if not _is_rewrite(p)]
        if unknown:
            raise InputError(f"run {run_id} has no acceptance of {', '.join(unknown)} in force", "leave --finding out")
        state = kept_state(ws, spec.name)
        gone = [a.batch for a in standing if a.batch not in state.batches]
        if gone:
            raise RunStateError(
                f"batch {', '.join(gone)} is no longer kept", "nothing was changed; see `kintsugi runs`"
            )
        kept_before = {a.batch: _kept_before(ws.run_dir(run_id), a.batch) for a in standing}
        lost = [ws.rel(path) for path in kept_before.values() if not path.is_file()]
        if lost:  # checked for every batch before any is put back: nothing half-written
            raise RunStateError(
                f"the profile each batch had before the rewrite is gone ({', '.join(lost)}); nothing was changed",
                "take the reference again with `kintsugi init --force`",
            )
        withdrawn = {a.key: a.withdraw(by, reason, now_ms) for a in standing}
        status, outcome = record.status, record.outcome
        with open_run(ws, spec, record, on_error=None) as run:
            for batch_id, before in kept_before.items():
                with run.journal.writing(LedgerKind.REFERENCE, spec.name, rewrite_back=batch_id):
                    replace_batch(run.ws, spec.name, batch_id, before.read_text())
            emit_reference_profile(run)
            note = (
                f"withdrawn by {by} (run {run_id}): the rewrite of "
                + ", ".join(f"batch {a.batch}" for a in standing)
                + f" is no longer the history — {reason}"
            )
            done = f"{note}; each batch's profile as it stood before is back"
            record_withdrawals(run, standing, withdrawn, note, by, now_ms, done, reason=reason)
            run.finish(status, outcome)
    return tuple(withdrawn.values())
