"""Accept a finding as the new normal: recorded in DataHub with who and why, so nobody re-applies a contract
by hand to silence the guard.

A warning (drift, a value beyond the reference batches but plausible, a category the reference never saw) of a
run that went on: the run already added its batch to the reference (so the next batch is compared with it); the
acceptance records the person's word: a note on the dataset in DataHub (institutional memory: the run, the
findings, who and why) and an event in the run. With no --finding, every warning of the run is accepted. A
candidate held for review by those warnings is then promoted with `kintsugi approve RUN_ID --reason ...`.

A block of a run that ended BLOCKED at the guard, when it is not a failure of the data but its new normal (a
new tariff that steps a level up, a real step in volume): each blocking finding must be named with
--finding, and all of the run's blocks together; its batch then joins the reference as a passed batch does, an
`Acceptance` is kept beside the reference, the block's incident is resolved and the next champion's passport names it
(`controlplane.onboard.accept_block`). `--undo` takes such an acceptance back. A healed run's blocks were
corrected, not accepted.

Rows that passed earlier and were rewritten since (`history_changed`) are not a new normal of the new batch: a
person who knows the rewrite is right accepts it as the history (`--finding history_changed`): each rewritten
batch is profiled again from the run's snapshot and kept so (`controlplane.onboard.accept_rewrite`); `--undo`
puts the profiles back.
"""

from __future__ import annotations

import time

from controlplane.errors import InputError, RunStateError
from controlplane.onboard.accept_block import accept_blocks, blocks_of, remember, withdraw
from controlplane.onboard.accept_rewrite import REWRITE, accept_rewrite, names_a_rewrite, withdraw_rewrite
from controlplane.runs.context import open_run
from controlplane.runs.journal import RunRecord, load_run
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import load_spec
from controlplane.stages.acceptances import load_acceptances
from controlplane.takeback.recovery import recover_pipeline
from controlplane.vocab import LedgerKind, RunStatus, Stage
from controlplane.workspace import Workspace
from guard.findings import Finding

__all__ = ["accept", "warned"]


def warned(record: RunRecord) -> list[Finding]:
    """The warnings of the guard on the data the run went on with (verify after a heal, else detect)."""
    event = record.last_event(Stage.VERIFY) or record.last_event(Stage.DETECT)
    found = [Finding.from_dict(f) for f in (event.evidence.get("findings", []) if event else [])]
    return [f for f in found if f.severity.value == "warn"]


def _chosen(record: RunRecord, picks: list[str]) -> list[Finding]:
    warnings = warned(record)
    if not warnings:
        raise RunStateError(
            f"run {record.run_id} raised no warning to accept",
            "accept takes a warned change; a block that is the new normal is named with --finding KIND:COLUMN",
        )
    if not picks:
        return warnings
    chosen = [f for f in warnings if f"{f.kind.value}:{f.column or ''}" in picks or f.kind.value in picks]
    missing = sorted(set(picks) - {f"{f.kind.value}:{f.column or ''}" for f in chosen} - {f.kind.value for f in chosen})
    if missing:
        listed = ", ".join(f"{f.kind.value}:{f.column or ''}" for f in warnings)
        raise InputError(f"run {record.run_id} warned of no {', '.join(missing)}", f"choose among: {listed}")
    return chosen


def _names_a_block(record: RunRecord, picks: list[str]) -> bool:
    """Picks that are not all warnings of the run, on a run the guard blocked: the block's way (and its refusals)."""
    warnings = warned(record)
    all_warnings = all(any(p in (f"{f.kind.value}:{f.column or ''}", f.kind.value) for f in warnings) for p in picks)
    return bool(picks) and bool(blocks_of(record)) and not all_warnings


def accept(
    ws: Workspace,
    run_id: str,
    reason: str,
    *,
    findings: list[str] | None = None,
    by: str,
    now_ms: int | None = None,
    undo: bool = False,
) -> RunRecord:
    """Accept the run's warnings (or the named ones), or its named blocks; `undo`: take accepted blocks back."""
    record, picks, at_ms = load_run(ws, run_id), findings or [], now_ms or int(time.time() * 1000)
    if undo:
        rewritten = any(
            a.run_id == run_id and a.in_force and a.kind is REWRITE for a in load_acceptances(ws, record.pipeline)
        )
        (withdraw_rewrite if rewritten else withdraw)(ws, run_id, reason, picks, by=by, now_ms=at_ms)
        return load_run(ws, run_id)
    if names_a_rewrite(record, picks):
        accept_rewrite(ws, run_id, reason, by=by, now_ms=at_ms)
        return load_run(ws, run_id)
    if _names_a_block(record, picks):
        accept_blocks(ws, run_id, reason, picks, by=by, now_ms=at_ms)
        return load_run(ws, run_id)
    spec = load_spec(ws, record.pipeline)
    with pipeline_lock(ws, spec.name, f"accept {run_id}"):
        recover_pipeline(ws, spec.name)  # as every writer: a run of the pipeline left mid-way is made consistent first
        record = load_run(ws, run_id)
        if record.status in (RunStatus.RUNNING, RunStatus.UNDOING, RunStatus.INTERRUPTED):
            raise RunStateError(f"run {run_id} is {record.status.value}", "accept a run once it has finished")
        chosen = _chosen(record, findings or [])
        now_ms = now_ms or int(time.time() * 1000)
        note = (
            f"accepted as the new normal by {by} (run {run_id}): "
            + ", ".join(f"{f.kind.value} on {f.column or 'the dataset'}" for f in chosen)
            + f" — {reason}"
        )
        status = record.status
        with open_run(ws, spec, record, on_error=None) as run:
            with run.journal.writing(LedgerKind.DATAHUB, spec.feature_table, aspect="institutionalMemory"):
                remember(run.metadata, spec.feature_table, str(now_ms), note, by, now_ms, once=False)
            run.event(Stage.APPROVE, "accepted", note, accepted=[f.to_dict() for f in chosen], reason=reason, by=by)
            run.finish(status, record.outcome)
    return record
