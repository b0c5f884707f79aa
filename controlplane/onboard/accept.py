"""Accept a warned change as the new normal: recorded in DataHub with who and why, so nobody re-applies a
contract by hand to silence the guard.

Only warnings can be accepted (drift, a value beyond the reference batches but plausible, a category the
reference never saw): a block is evidence of a failure and needs a heal or a fix upstream. A run that passed
with warnings already added its batch to the reference (so the next batch is compared with it); the
acceptance records the person's word: a note on the dataset in DataHub (institutional memory: the run, the
findings, who and why) and an event in the run. A candidate held for review by those warnings is then
promoted with `kintsugi approve RUN_ID --reason ...`.
"""

from __future__ import annotations

import time

from controlplane.datahub.notes import memory_link_mcps
from controlplane.datahub.port import MetadataPort
from controlplane.errors import InputError, RunStateError
from controlplane.runs.context import open_run
from controlplane.runs.journal import RunRecord, load_run
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import load_spec
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
            "accept takes a warned change; a block needs a heal or a fix upstream",
        )
    if not picks:
        return warnings
    chosen = [f for f in warnings if f"{f.kind.value}:{f.column or ''}" in picks or f.kind.value in picks]
    missing = sorted(set(picks) - {f"{f.kind.value}:{f.column or ''}" for f in chosen} - {f.kind.value for f in chosen})
    if missing:
        listed = ", ".join(f"{f.kind.value}:{f.column or ''}" for f in warnings)
        raise InputError(f"run {record.run_id} warned of no {', '.join(missing)}", f"choose among: {listed}")
    return chosen


def accept(
    ws: Workspace,
    run_id: str,
    reason: str,
    *,
    findings: list[str] | None = None,
    by: str = "operator",
    now_ms: int | None = None,
) -> RunRecord:
    record = load_run(ws, run_id)
    spec = load_spec(ws, record.pipeline)
    with pipeline_lock(ws, spec.name, f"accept {run_id}"):
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
                _remember(run.metadata, spec.feature_table, note, by, now_ms)
            run.event(Stage.APPROVE, "accepted", note, accepted=[f.to_dict() for f in chosen], reason=reason, by=by)
            run.finish(status, record.outcome)
    return record


def _remember(metadata: MetadataPort, dataset: str, note: str, by: str, now_ms: int) -> None:
    link = memory_link_mcps(
        metadata,
        dataset,
        url=f"kintsugi://accepted/{now_ms}",
        description=note[:2000],
        at_ms=now_ms,
        by=f"urn:li:corpuser:{by}",
    )
    metadata.emit(link, now_ms)
