"""Undo: take back what a finished run did — the exact previous bytes of the table, its versions (marked undone,
never champion again), the champion (back to the one it found, if the run moved it and nobody has since), the
incidents it resolved.

Everything is checked before anything is touched, so a refused undo changes nothing, its run's status
included. An undo that is interrupted leaves the run `undoing`; the next writer of the pipeline (or `kintsugi
undo` again) finishes it.
"""

from __future__ import annotations

import time

from controlplane.errors import RunStateError
from controlplane.runs.journal import RunJournal, RunRecord, load_run
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import load_spec
from controlplane.takeback.recovery import recover_pipeline
from controlplane.takeback.rollback import plan_take_back
from controlplane.vocab import ChangedTable, LedgerKind, RunStatus
from controlplane.workspace import Workspace

__all__ = ["undo"]

_UNDOABLE = (
    RunStatus.PROMOTED,
    RunStatus.KEPT,
    RunStatus.UNCHANGED,
    RunStatus.NEEDS_REVIEW,
    RunStatus.BLOCKED,
    RunStatus.REJECTED,
    RunStatus.FAILED,
    RunStatus.ROLLED_BACK,
)


def undo(
    ws: Workspace, run_id: str, *, now_ms: int | None = None, changed: ChangedTable = ChangedTable.REFUSE
) -> RunRecord:
    spec = load_spec(ws, load_run(ws, run_id).pipeline)
    with pipeline_lock(ws, spec.name, f"undo {run_id}"):
        record = load_run(ws, run_id)
        _refuse_unless_undoable(record)
        plan_take_back(ws, spec, record, unfinished=False, changed=changed)  # refuses before anything changes
        record.status, record.now_ms = RunStatus.UNDOING, now_ms or int(time.time() * 1000)
        RunJournal(ws, record).save()
        recover_pipeline(
            ws, spec.name, own=run_id, changed=changed
        )  # finishes this undo (and any run of the pipeline left mid-way)
    return load_run(ws, run_id)


def _refuse_unless_undoable(record: RunRecord) -> None:
    if record.status is RunStatus.UNDONE:
        raise RunStateError(f"run {record.run_id} was already undone", "nothing left to take back")
    if record.status is RunStatus.PAUSED:
        raise RunStateError(
            f"run {record.run_id} is paused at a gate",
            f"reject it instead: `kintsugi reject {record.run_id} --reason ...`",
        )
    if record.status is RunStatus.RECOVERED:  # recovery took back all it had written (or settled a command)
        raise RunStateError(
            f"run {record.run_id} was recovered already ({record.outcome})", "nothing left to take back"
        )
    if record.status in (RunStatus.INTERRUPTED, RunStatus.UNDOING, RunStatus.RUNNING):
        return  # an interrupted run or undo (the lock is ours: no process runs it): taken back, or finished
    if record.status not in _UNDOABLE:
        raise RunStateError(f"run {record.run_id} is {record.status.value}", "there is nothing to undo")
    if not (record.entries(LedgerKind.PUBLISH) or record.entries(LedgerKind.ALIAS)):
        raise RunStateError(f"run {record.run_id} published nothing and moved no alias", "there is nothing to undo")
