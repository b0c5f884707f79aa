"""Accept a block as the new normal, and take it back: the way out of a block that is not a failure of the data.

A run the guard blocked never kept its batch, so every later batch is compared with a history that lacks the
change (a new tariff that steps a level up, a real step in volume, a new range) and blocks again. A person
names each blocking finding of the run (`kintsugi accept RUN_ID --finding KIND:COLUMN --reason TEXT`); when
they cover every block of the run, the run's batch — profiled again from the run's pinned snapshot, never the
live table — joins the reference exactly as a passed batch does (`controlplane.stages.publish.keep_batch`), an
`Acceptance` per finding is kept beside the reference (`controlplane.stages.acceptances`), the incident the block
raised is resolved (an open incident on the table would block every later candidate at the gate), and DataHub's
institutional memory of the dataset says who and why. The next champion's passport names it.

`--undo` takes it back: the batch leaves the reference again (only while it is the newest kept batch), each
acceptance is marked withdrawn (kept on record), its incident is ACTIVE again, and a DataHub note says who withdrew
it and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controlplane.datahub.incidents import read_incidents, reopen_incident, resolve_incident
from controlplane.datahub.notes import memory_link_mcps
from controlplane.datahub.port import MetadataPort
from controlplane.errors import InputError, RunStateError, TableChanged, WorkspaceError
from controlplane.runs.context import RunContext, open_run
from controlplane.runs.journal import RunRecord, load_run
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import load_spec
from controlplane.stages.acceptances import Acceptance, acceptances_path, load_acceptances, save_acceptances
from controlplane.stages.guarding import contract_keys
from controlplane.stages.kept_reference import ReferenceState, load_state
from controlplane.stages.pin import reading_pinned
from controlplane.stages.publish import forget_batch, keep_batch
from controlplane.takeback.recovery import recover_pipeline
from controlplane.vocab import LedgerKind, RunStatus, Stage
from controlplane.workspace import Workspace
from guard.findings import Finding
from guard.kinds import NOT_THE_DATA
from profiles.profile import BatchProfile, TimeWindow
from profiles.snapshot_types import Snapshot

__all__ = [
    "blocks_of",
    "accept_blocks",
    "withdraw",
    "remember",
    "kept_state",
    "active_incidents",
    "store_acceptances",
    "pinned_snapshot",
    "record_acceptances",
    "record_withdrawals",
    "ACCEPTED_URL",
]

ACCEPTED_URL = "kintsugi://accepted/"  # the institutional-memory links of accepted blocks and their withdrawals


def _label(finding: Finding) -> str:
    return f"{finding.kind.value}:{finding.column or ''}"


def _named(finding: Finding, picks: list[str]) -> bool:
    return _label(finding) in picks or finding.kind.value in picks


def blocks_of(record: RunRecord) -> list[Finding]:
    """The blocking findings of the guard on the data as the run found it (detect)."""
    event = record.last_event(Stage.DETECT)
    found = [Finding.from_dict(f) for f in (event.evidence.get("findings", []) if event else [])]
    return [f for f in found if f.severity.value == "block"]


@dataclass(frozen=True)
class _Batch:
    id: str
    after_ms: int | None
    rows: int


def _batch_of_run(record: RunRecord) -> _Batch:
    event = record.last_event(Stage.DETECT)
    evidence = event.evidence if event is not None else {}
    if not evidence.get("batch"):
        raise RunStateError(
            f"run {record.run_id} guarded no new batch of its own (the whole table, or a run made before blocks "
            "could be accepted)",
            "run the pipeline again and accept the new run's block",
        )
    return _Batch(str(evidence["batch"]), evidence.get("batch_after_ms"), int(evidence.get("rows", -1)))


def _chosen(record: RunRecord, picks: list[str]) -> list[Finding]:
    """The blocks named, checked: the run ended blocked at the guard, unhealed; each pick is one of its blocks
    and a change in the data of its batch; no other block of the run stands."""
    run_id, blocks = record.run_id, blocks_of(record)
    listed = ", ".join(_label(f) for f in blocks) or "none"
    unknown = [p for p in picks if not any(_named(f, [p]) for f in blocks)]
    if unknown:
        raise InputError(
            f"run {run_id} was not blocked by the guard on {', '.join(unknown)}", f"its blocking findings: {listed}"
        )
    if record.entries(LedgerKind.PUBLISH, done_only=False) or record.last_event(Stage.PUBLISH) is not None:
        raise RunStateError(
            f"run {run_id} was healed: its blocks were corrected in the data, not a new normal",
            f"accept its warnings, or take the heal back with `kintsugi undo {run_id}`",
        )
    if record.status is not RunStatus.BLOCKED:
        raise RunStateError(
            f"run {run_id} is {record.status.value}; a block is accepted on a run that ended blocked at the guard",
            "see `kintsugi runs`",
        )
    chosen = [f for f in blocks if _named(f, picks)]
    judged = [f for f in chosen if f.kind in NOT_THE_DATA]
    if judged:
        raise RunStateError(
            f"{', '.join(_label(f) for f in judged)} of run {run_id} is not a change in the new batch's data "
            "(the guard could not judge it, or it concerns rows that passed earlier)",
            "fix it upstream and run again; rows that passed earlier and were rewritten rightly are accepted as "
            f"the history on their own: `kintsugi accept {run_id} --finding history_changed --reason TEXT`",
        )
    standing = [f for f in blocks if f not in chosen]
    if standing:
        raise RunStateError(
            f"run {run_id} is also blocked by {', '.join(_label(f) for f in standing)}: its batch cannot join the "
            "reference while another failure stands",
            "name each with --finding if it too is the new normal, or fix it upstream and run again",
        )
    return chosen


def kept_state(ws: Workspace, pipeline: str) -> ReferenceState:
    state = load_state(ws, pipeline)
    if state is None:
        raise WorkspaceError(
            f"pipeline {pipeline!r} keeps no reference of batches (a workspace made before them)",
            "take the reference again with `kintsugi init --force`",
        )
    return state


def _check_joinable(record: RunRecord, batch: _Batch, state: ReferenceState) -> None:
    """The run's batch is what comes next after the reference as it stands (or is its newest batch already: a
    retry of an acceptance that was interrupted)."""
    if batch.id in state.batches[-1:]:
        return
    if batch.id in state.batches or batch.after_ms != state.watermark_ms:
        raise RunStateError(
            f"the reference moved since run {record.run_id}: batches were kept after the rows it guarded",
            "accept the block of the newest run of the pipeline",
        )


def _profile_batch(run: RunContext, record: RunRecord, batch: _Batch, state: ReferenceState) -> BatchProfile:
    """The run's batch profiled again from its pinned snapshot (the bytes the guard judged, never the live table)."""
    window = TimeWindow(state.time_column, batch.after_ms, None)
    snapshot = pinned_snapshot(run, record, window, batch.id)
    if snapshot.batch is None or snapshot.profile.row_count != batch.rows:
        raise RunStateError(
            f"the batch of run {record.run_id} cannot be found again in its snapshot",
            "run the pipeline again and accept the new run's block",
        )
    return snapshot.batch


def pinned_snapshot(run: RunContext, record: RunRecord, window: TimeWindow, batch_id: str) -> Snapshot:
    """The rows of `window` in the run's pinned snapshot, profiled as the guard profiles a batch, from bytes checked
    as they are read (`reading_pinned`); a snapshot gone or changed is refused."""
    pinned = record.pinned
    if pinned is None or not pinned.path(run.ws).is_file():
        raise RunStateError(
            f"the pinned snapshot of run {record.run_id} is gone",
            "run the pipeline again and accept the new run's block",
        )
    keys = contract_keys(run.metadata, run.spec)  # sampled and hashed as the guard read the batch
    try:
        with reading_pinned(run.ws, pinned.table, pinned.table_hash, "accepting", by_path=run.engine.spark) as table:
            return run.engine.snapshot(table, keys=keys, window=window, batch_id=batch_id)
    except TableChanged as exc:
        raise RunStateError(
            f"the pinned snapshot of run {record.run_id} changed: {exc.message}",
            "run the pipeline again and accept the new run's block",
        ) from exc


def _previous(record: RunRecord, batch_id: str) -> dict[str, Any] | None:
    """Where the reference stood before the batch joined it, as an earlier (interrupted) acceptance recorded it."""
    kept = [e for e in record.entries(LedgerKind.REFERENCE, done_only=False) if e.detail.get("batch") == batch_id]
    return record.need(kept[-1], "previous") if kept else None


def accept_blocks(
    ws: Workspace, run_id: str, reason: str, picks: list[str], *, by: str, now_ms: int
) -> tuple[Acceptance, ...]:
    """Accept the named blocks of a run blocked at the guard; its batch joins the reference. The caller checked
    that `picks` name blocks; everything is refused before anything is written."""
    spec = load_spec(ws, load_run(ws, run_id).pipeline)
    with pipeline_lock(ws, spec.name, f"accept {run_id}"):
        recover_pipeline(ws, spec.name)  # as every writer: a run of the pipeline left mid-way is made consistent first
        record = load_run(ws, run_id)
        chosen, batch = _chosen(record, picks), _batch_of_run(record)
        state = kept_state(ws, spec.name)
        _check_joinable(record, batch, state)
        kept = load_acceptances(ws, spec.name)
        already = [a.finding for a in kept if a.run_id == run_id and a.in_force]
        if already:
            raise RunStateError(
                f"run {run_id} was accepted already ({', '.join(already)})",
                f"take it back first with `kintsugi accept {run_id} --undo --reason TEXT`",
            )
        status, outcome = record.status, record.outcome
        with open_run(ws, spec, record, on_error=None) as run:
            profile = _profile_batch(run, record, batch, state)
            keep_batch(run, profile, state, previous=_previous(record, batch.id))
            note = (
                f"accepted as the new normal by {by} (run {run_id}, batch {batch.id}): "
                + ", ".join(f"{f.kind.value} on {f.column or 'the dataset'}" for f in chosen)
                + f" — {reason}"
            )
            open_incidents = active_incidents(run.metadata, spec.feature_table)
            accepted = tuple(
                Acceptance(run_id, f.kind, f.column or "", by, reason, now_ms, batch.id, open_incidents.get(f.key, ""))
                for f in chosen
            )
            joined = f"{note}; the batch joined the reference"
            chosen_found = [f.to_dict() for f in chosen]
            record_acceptances(
                run, accepted, kept, note, by, now_ms, joined, accepted=chosen_found, batch=batch.id, reason=reason
            )
            run.finish(status, outcome)
    return accepted


def _said(acceptance: Acceptance) -> str:
    return f"{acceptance.kind.value} on {acceptance.column or 'the dataset'}"


def _withdrawn(ws: Workspace, record: RunRecord, picks: list[str]) -> list[Acceptance]:
    """The run's acceptances in force, all of them (its batch leaves the reference with every one)."""
    standing = [a for a in load_acceptances(ws, record.pipeline) if a.run_id == record.run_id and a.in_force]
    if not standing:
        raise RunStateError(f"run {record.run_id} has no acceptance in force to take back", "see `kintsugi runs`")
    unknown = [p for p in picks if not any(p in (a.finding, a.kind.value) for a in standing)]
    if unknown:
        listed = ", ".join(a.finding for a in standing)
        raise InputError(f"run {record.run_id} has no acceptance of {', '.join(unknown)} in force", f"it has {listed}")
    left = [a for a in standing if picks and not any(p in (a.finding, a.kind.value) for p in picks)]
    if left:
        raise RunStateError(
            f"the batch of run {record.run_id} was accepted with {', '.join(a.finding for a in left)} too: it "
            "leaves the reference with all of them",
            "name each with --finding, or leave --finding out to take back them all",
        )
    return standing


def withdraw(
    ws: Workspace, run_id: str, reason: str, picks: list[str], *, by: str, now_ms: int
) -> tuple[Acceptance, ...]:
    """Take back the acceptances of a run: its batch leaves the reference; each is marked withdrawn, kept."""
    spec = load_spec(ws, load_run(ws, run_id).pipeline)
    with pipeline_lock(ws, spec.name, f"accept --undo {run_id}"):
        recover_pipeline(ws, spec.name)
        record = load_run(ws, run_id)
        standing = _withdrawn(ws, record, picks)
        batch, state = standing[0].batch, kept_state(ws, spec.name)
        previous = _previous(record, batch)
        if batch in state.batches and (state.batches[-1] != batch or previous is None):
            raise RunStateError(
                f"batches were kept after batch {batch} of run {run_id}",
                "undo the later runs first, newest first; nothing was changed",
            )
        withdrawn = {a.key: a.withdraw(by, reason, now_ms) for a in standing}
        status, outcome = record.status, record.outcome
        with open_run(ws, spec, record, on_error=None) as run:
            if batch in state.batches and previous is not None:
                forget_batch(run, batch, previous)
            note = (
                f"withdrawn by {by} (run {run_id}, batch {batch}): "
                + ", ".join(f"{_said(a)} (accepted by {a.by})" for a in standing)
                + f" is no longer taken as the new normal — {reason}"
            )
            record_withdrawals(
                run,
                standing,
                withdrawn,
                note,
                by,
                now_ms,
                f"{note}; the batch left the reference",
                batch=batch,
                reason=reason,
            )
            run.finish(status, outcome)
    return tuple(withdrawn.values())


def active_incidents(metadata: MetadataPort, dataset: str) -> dict[tuple[str, str, str], str]:
    """The ACTIVE incidents on the dataset, by the key of the finding that raised them."""
    return {
        row.key: row.urn
        for row in read_incidents(metadata)
        if row.state == "ACTIVE" and dataset in row.datasets and row.key is not None
    }


def record_acceptances(
    run: RunContext,
    made: tuple[Acceptance, ...],
    kept: tuple[Acceptance, ...],
    note: str,
    by: str,
    now_ms: int,
    summary: str,
    **evidence: object,
) -> None:
    """What every acceptance writes once the data it accepts is kept: the incidents its blocks raised resolved, the
    person's word in DataHub's institutional memory of the dataset, the acceptances kept (each write journaled),
    and the run's event saying so."""
    table = run.spec.feature_table
    for urn in dict.fromkeys(a.incident for a in made if a.incident):
        with run.journal.writing(LedgerKind.DATAHUB, urn, aspect="incidentInfo", state="RESOLVED"):
            resolve_incident(run.metadata, urn, note, now_ms)
    with run.journal.writing(LedgerKind.DATAHUB, table, aspect="institutionalMemory"):
        remember(run.metadata, table, f"{run.run_id}/{now_ms}", note, by, now_ms)
    store_acceptances(run, run.spec.name, [*kept, *made])
    run.event(Stage.APPROVE, "accepted", summary, acceptances=[a.to_dict() for a in made], by=by, **evidence)


def record_withdrawals(
    run: RunContext,
    standing: list[Acceptance],
    withdrawn: dict[tuple[str, str, str, str], Acceptance],
    note: str,
    by: str,
    now_ms: int,
    summary: str,
    **evidence: object,
) -> None:
    """What every withdrawal writes once the data it took back is out: the word in DataHub, the incidents ACTIVE
    again, each acceptance kept marked withdrawn (each write journaled), and the run's event saying so."""
    table = run.spec.feature_table
    with run.journal.writing(LedgerKind.DATAHUB, table, aspect="institutionalMemory"):
        remember(run.metadata, table, f"{run.run_id}/{now_ms}/withdrawn", note, by, now_ms)
    for urn in dict.fromkeys(a.incident for a in standing if a.incident):
        with run.journal.writing(LedgerKind.DATAHUB, urn, aspect="incidentInfo", state="ACTIVE"):
            reopen_incident(run.metadata, urn, note, now_ms)
    everyone = load_acceptances(run.ws, run.spec.name)
    store_acceptances(run, run.spec.name, [withdrawn.get(a.key, a) for a in everyone])
    run.event(
        Stage.UNDO, "withdrawn", summary, acceptances=[a.to_dict() for a in withdrawn.values()], by=by, **evidence
    )


def store_acceptances(run: RunContext, pipeline: str, acceptances: list[Acceptance]) -> None:
    path = run.ws.rel(acceptances_path(run.ws, pipeline))
    with run.journal.writing(LedgerKind.WORKSPACE_FILE, path, acceptances=len(acceptances)):
        save_acceptances(run.ws, pipeline, acceptances)


def remember(
    metadata: MetadataPort, dataset: str, key: str, note: str, by: str, now_ms: int, *, once: bool = True
) -> None:
    """The person's word in DataHub's institutional memory of the dataset: a link `ACCEPTED_URL + key` (written
    `once`: a retried acceptance does not repeat it)."""
    link = memory_link_mcps(
        metadata,
        dataset,
        url=f"{ACCEPTED_URL}{key}",
        description=note[:2000],
        at_ms=now_ms,
        by=f"urn:li:corpuser:{by}",
        once=once,
    )
    metadata.emit(link, now_ms)
