"""Crash recovery from the write-ahead ledger.

A run is interrupted when its record says it is running but no live process holds its pipeline's lock (the
lock dies with its process). The next writer of the pipeline — or `kintsugi recover RUN_ID` — brings it to a
consistent state: a run that had concluded (its verdict recorded) is rolled forward to that verdict; any other
is rolled back: the table's previous bytes restored, its MLflow runs marked FAILED and its versions abandoned,
the champion put back where the run found it (only if the run moved it and it is still where the run left it),
the incidents it resolved reopened. An interrupted undo (a run left `undoing`) is finished the same way, its
versions marked undone.
"""

from __future__ import annotations

import logging
import time

from controlplane.errors import DamagedRecord, DataError, one_line
from controlplane.runs.context import open_run
from controlplane.runs.journal import DONE, ROLLED_BACK, LedgerEntry, RunJournal, RunRecord, list_runs, load_run
from controlplane.runs.locks import lock_holder, pipeline_lock
from controlplane.spec import load_spec
from controlplane.stages.pin import live_hash, version_replaced
from controlplane.takeback.rollback import ABANDONED_KEY, UNDONE_KEY, plan_take_back, take_back
from controlplane.vocab import ChangedTable, LedgerKind, RunStatus, Stage, Verdict
from controlplane.workspace import Workspace

__all__ = ["recover_pipeline", "recover_run", "is_interrupted", "needs_recovery"]

log = logging.getLogger(__name__)
_LIVE_ON_PAPER = (RunStatus.RUNNING, RunStatus.UNDOING)


def is_interrupted(ws: Workspace, record: RunRecord) -> bool:
    """Running (or undoing) on paper, but no live process holds the pipeline's lock for it."""
    if record.status is RunStatus.INTERRUPTED:
        return True
    if record.status not in _LIVE_ON_PAPER:
        return False
    holder = lock_holder(ws, record.pipeline)
    return holder is None or record.run_id not in holder


def _dangling(record: RunRecord) -> bool:
    return any(e.state not in ("done", ROLLED_BACK) for e in record.ledger)


def needs_recovery(record: RunRecord) -> bool:
    """Under the pipeline's lock: every run left mid-way, or failed with a write whose outcome is unknown."""
    return record.status in (*_LIVE_ON_PAPER, RunStatus.INTERRUPTED) or (
        record.status is RunStatus.FAILED and _dangling(record)
    )


def recover_pipeline(
    ws: Workspace, pipeline: str, *, own: str | None = None, changed: ChangedTable = ChangedTable.REFUSE
) -> list[RunRecord]:
    """Bring every interrupted run of a pipeline to a consistent state. The caller holds the pipeline's lock.

    A run whose record is damaged (`DamagedRecord`: refused before anything was changed) is reported on one line
    and left as it is: the command goes on — unless it is the command's `own` run, whose refusal is the command's.
    Any other failure (a store, the table) stops the command: it concerns what every run of the pipeline shares.
    `changed`: what the `own` run's take-back does with a table changed since it published (others refuse)."""
    recovered = []
    for record in list_runs(ws):
        if record.pipeline != pipeline or not needs_recovery(record):
            continue
        try:
            recovered.append(_recover(ws, record, changed if record.run_id == own else ChangedTable.REFUSE))
        except DamagedRecord as exc:
            if record.run_id == own:
                raise
            log.warning("%s; %s", one_line(exc.message), one_line(exc.fix))
    return recovered


def recover_run(ws: Workspace, run_id: str, *, changed: ChangedTable = ChangedTable.REFUSE) -> RunRecord:
    """`kintsugi recover RUN_ID`: the run (and any other interrupted run of its pipeline) made consistent."""
    record = load_run(ws, run_id)
    with pipeline_lock(ws, record.pipeline, f"recover {run_id}"):
        recover_pipeline(ws, record.pipeline, own=run_id, changed=changed)
    return load_run(ws, run_id)


def _recover(ws: Workspace, record: RunRecord, changed: ChangedTable) -> RunRecord:
    if record.kind.command:  # an interrupted init or land: no publish, no model version to take back
        return _settle_command(ws, record)
    undoing = record.status is RunStatus.UNDOING
    unfinished = _dangling(record) or not undoing
    spec = load_spec(ws, record.pipeline)
    verdict = None if undoing else _concluded(record)  # read, like the plan, before anything is changed
    plan = plan_take_back(ws, spec, record, unfinished=unfinished, changed=changed)
    last = record.events[-1].stage if record.events else "its start"
    if not undoing:
        record.status = RunStatus.INTERRUPTED
    record.now_ms = int(time.time() * 1000)
    RunJournal(ws, record).save()
    with open_run(ws, spec, record, on_error=None) as run:
        if verdict is not None:
            run.event(Stage.RECOVER, "rolled-forward", f"the run had concluded {verdict.value}; its record is finished")
            run.finish(
                verdict.run_status(_kept(record)), f"recovered: it concluded {verdict.value} before it was interrupted"
            )
            return record
        why = f"undo of run {record.run_id}" if undoing else f"run {record.run_id} was interrupted"
        retired = take_back(run, plan, retire=UNDONE_KEY if undoing else ABANDONED_KEY, why=why, unfinished=unfinished)
        for entry in record.ledger:
            if entry.state not in ("done", ROLLED_BACK):
                entry.state = ROLLED_BACK
        restored = sum(not r.kept for r in plan.restores)
        kept = "".join(f"; {spec.data_text} kept as changed since ({r.kept})" for r in plan.restores if r.kept)
        versions = [v for r in plan.restores if r.needed and not r.kept and (v := version_replaced(r.backup))]
        kept += "".join(f"; {spec.data_text} back at the rows of {v}" for v in versions)
        if undoing:
            run.finish(
                RunStatus.UNDONE,
                f"undone: {restored} publish(es) taken back, {retired} version(s) retired, champion settled{kept}",
            )
        else:
            run.event(
                Stage.RECOVER,
                "rolled-back",
                f"interrupted after {last}: {restored} publish(es) taken back, {retired} version(s) abandoned",
            )
            run.finish(RunStatus.RECOVERED, f"interrupted after {last}; rolled back to a consistent state{kept}")
    return record


def _settle_command(ws: Workspace, record: RunRecord) -> RunRecord:
    command = record.kind.value
    went_in = _settle_appends(ws, record)
    unsure = [f"{e.kind} {e.target}" for e in record.ledger if e.state not in ("done", ROLLED_BACK)]
    journal = RunJournal(ws, record)
    journal.event(
        Stage.RECOVER, "settled", f"{command} was interrupted; unsure: {', '.join(unsure) or 'nothing'}", unsure=unsure
    )
    journal.finish(
        RunStatus.RECOVERED,
        f"interrupted {command}: "
        + (
            f"its batch went in ({', '.join(went_in)}; its DataHub load record may be missing): landing it again "
            "changes nothing"
            if went_in
            else (f"{', '.join(unsure)} may or may not have been written; " if unsure else "")
            + f"run `kintsugi {command}` again (init: with --force)"
        ),
    )
    return record


def _settle_appends(ws: Workspace, record: RunRecord) -> list[str]:
    """A land's append begun and never recorded done: done (created) when the table is no longer the bytes it
    found — under the lock nothing else wrote it — so landing the batch again does not put it in twice. An append
    recorded without the bytes it found (an older record) stays unsure."""
    went_in = []
    for entry in record.entries(LedgerKind.APPEND, done_only=False):
        if entry.state in (DONE, ROLLED_BACK):
            continue
        before = entry.detail.get("before_hash")
        if before is None:
            continue  # written before appends kept the bytes they found: it may or may not have gone in
        try:
            now: str | None = live_hash(ws, load_spec(ws, record.pipeline))
        except DataError:
            now = None  # still no table: the first batch did not go in
        if now != before:
            entry.state = DONE
            entry.result.update(created=True, settled_hash=now)
            went_in.append(f"{entry.target} now {now}")
    return went_in


def _verdict_entry(record: RunRecord) -> LedgerEntry | None:
    """The ledger entry of the conclusion's verdict tag (the last one), if the run got that far."""
    tags = [e for e in record.entries(LedgerKind.MLFLOW_TAGS, done_only=False) if "verdict" in e.detail]
    return tags[-1] if tags else None


def _kept(record: RunRecord) -> bool:
    """Whether the conclusion kept the champion (its verdict tag's ledger entry says so)."""
    entry = _verdict_entry(record)
    return bool(entry is not None and entry.detail.get("kept"))


def _concluded(record: RunRecord) -> Verdict | None:
    """The verdict, when the conclusion's last writes (the verdict tag and, for APPROVED, the alias) are done."""
    entry = _verdict_entry(record)
    if entry is None or not entry.done:
        return None
    said = entry.detail["verdict"]
    if said not in {v.value for v in Verdict}:
        raise record.damaged(entry, f"records verdict {str(said)[:40]!r}, which is none of the gate's")
    verdict = Verdict(said)
    champion_writes = [e for e in record.ledger if e.target.endswith("@champion") and not e.detail.get("restore")]
    if verdict is Verdict.APPROVED and len(champion_writes) < 2:
        return None  # the alias (MLflow, then DataHub) had not both been written
    return verdict if all(e.done for e in champion_writes) else None
