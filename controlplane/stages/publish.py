"""Publish, resolve and remember: put the verified heal in place of the table (compare-and-swap on the pinned
hash, previous bytes kept), resolve the incidents with heal notes, and record the passed data's profile."""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Any

import pandas as pd

from controlplane.datahub.datasets import profile_mcps
from controlplane.datahub.incidents import IncidentRef, note_incident, read_incidents, resolve_incident
from controlplane.runs.context import RunContext, crash_point
from controlplane.stages.detect import TrainingView
from controlplane.stages.heal import Healed, heal_notes, quarantine_note
from controlplane.stages.kept_reference import (
    KeptBatches,
    ReferenceState,
    forget_after,
    kept_asides,
    kept_batches,
    load_reference,
    load_state,
    save_aside,
    save_batch,
    set_aside_rules,
    with_window_closed,
)
from controlplane.stages.memory import resolution_line
from controlplane.stages.pin import Pinned, publish_table, verify_file
from controlplane.vocab import LedgerKind, Stage
from guard.findings import GuardReport
from profiles.engines.keys import KeyHashes
from profiles.fingerprints import fingerprint_windows
from profiles.profile import BatchProfile, DatasetProfile, TimeWindow
from profiles.relations import epoch_ms_of
from remediations.aside import KeptAside, RowsAside
from remediations.rows import window_mask

__all__ = [
    "publish",
    "resolve",
    "resolve_cleared",
    "remember_reference",
    "keep_batch",
    "forget_batch",
    "emit_reference_profile",
]


def publish(run: RunContext, pinned: Pinned, healed: Healed) -> tuple[str, str]:
    """Publish the healed copy in place of the table, if the table is still what was guarded (compare-and-swap
    on the pinned content hash); the previous bytes are kept in the run. Returns the table's new content hash and
    the version published where its format names one ("" for files)."""
    verify_file(run.ws, pinned.table, pinned.table_hash, "publishing")
    verify_file(run.ws, healed.healed_path, healed.after_hash, "publishing")
    backup = run.journal.run_dir / "backup"
    with run.journal.writing(
        LedgerKind.PUBLISH,
        run.spec.data_text,
        backup=run.ws.rel(backup),
        before_hash=pinned.content_hash,
        healed_hash=healed.after_hash,
    ) as entry:
        crash_point("publish:before-swap")
        published = publish_table(run.ws, run.spec, run.ws.path(healed.healed_path), pinned.content_hash, backup)
        before, after, snapshot = published.before_hash, published.after_hash, published.snapshot or ""
        entry.result["after_hash"] = after
        if snapshot:
            entry.result["snapshot"] = snapshot
        crash_point("publish:after-swap")
    run.record.published_hash = after
    run.event(
        Stage.PUBLISH,
        "published",
        f"healed table published to {run.spec.data_text}" + (f" as {snapshot}" if snapshot else ""),
        before_hash=before,
        after_hash=after,
        backup=run.ws.rel(backup),
        **({"snapshot": snapshot} if snapshot else {}),
    )
    return after, snapshot


def resolve(run: RunContext, incidents: tuple[IncidentRef, ...], healed: Healed) -> None:
    """Resolve the incidents whose cause the heal corrected, each note ending with the verified heal that memory
    re-uses next time (`controlplane.stages.memory`); those only set aside (quarantined) stay open."""
    note, still_open = heal_notes(run.run_id, healed), set(healed.open_keys)
    steps = [asdict(step) for step in healed.steps]
    memory = run.record.memory  # what raise_incidents recalled, kept on the record across a publish gate
    resolved = [r for r in incidents if r.key not in still_open]
    for ref in resolved:
        line = resolution_line(memory, ref.urn, run.run_id, steps)
        with run.journal.writing(LedgerKind.DATAHUB, ref.urn, aspect="incidentInfo", state="RESOLVED"):
            resolve_incident(run.metadata, ref.urn, f"{note}\n{line}", run.now_ms)
    for ref in (r for r in incidents if r.key in still_open):
        with run.journal.writing(LedgerKind.DATAHUB, ref.urn, aspect="incidentInfo", state="ACTIVE"):
            note_incident(run.metadata, ref.urn, quarantine_note(run.run_id, healed), run.now_ms)
    run.record.resolved = tuple(r.urn for r in resolved)
    kept = len(incidents) - len(resolved)
    run.event(
        Stage.RESOLVE,
        "resolved",
        f"{len(resolved)} incident(s) RESOLVED with heal notes"
        + (f"; {kept} left open: rows quarantined, not corrected" if kept else ""),
        incidents=[r.urn for r in resolved],
        note=note,
        left_open=[r.urn for r in incidents if r.key in still_open],
    )


def resolve_cleared(run: RunContext, report: GuardReport) -> None:
    """ACTIVE incidents this guard raised on the table whose failure it no longer sees: cleared at the source. Not
    one whose rows are still set aside (`remediations.aside`): the guard no longer reads them, they are not fixed."""
    if not run.writes:
        return
    failing = {f.key for f in report.blocking}
    failing |= {rule.key(run.spec.feature_table) for rule in set_aside_rules(run.ws, run.spec.name)}
    cleared = []
    for row in read_incidents(run.metadata):
        if row.state == "ACTIVE" and run.spec.feature_table in row.datasets and row.key and row.key not in failing:
            with run.journal.writing(LedgerKind.DATAHUB, row.urn, aspect="incidentInfo", state="RESOLVED"):
                resolve_incident(
                    run.metadata, row.urn, f"cleared at the source: run {run.run_id} no longer sees it", run.now_ms
                )
            cleared.append(row.urn)
    run.record.resolved = tuple(cleared)
    for urn in cleared:
        run.event(Stage.RESOLVE, "cleared", f"{urn} cleared at the source", incident=urn)


def remember_reference(run: RunContext, view: TrainingView) -> None:
    """The passed batch joins the reference the next batch is compared with (kept in the workspace, summarised
    in DataHub); without a kept reference (an old workspace), the passed table's profile is DataHub's."""
    if not run.writes:
        return
    state = load_state(run.ws, run.spec.name)
    if state is not None and view.batch is not None:
        batch, aside = _with_set_aside(run, view, view.batch)
        keep_batch(run, batch, state, keys=view.keys, aside=aside)
        _keep_aside_in_earlier_batches(run, view, state)
        return
    reference = load_reference(run.ws, run.spec.name) if state is not None else None
    profile = reference.profile if reference is not None else view.profile
    if profile is not None:
        _emit_profile(run, profile)


def _with_set_aside(run: RunContext, view: TrainingView, batch: BatchProfile) -> tuple[BatchProfile, KeptAside | None]:
    """The batch as it is kept, and what the run set aside. The batch's window reaches the published table's last
    new row (a row set aside may be the last: it stays in the table, so in the batch that passed); what was set aside
    is kept with the fingerprint of that window as the published table holds it."""
    if not view.set_aside or not view.published or batch.window is None:
        return batch, None
    path = run.ws.path(view.published)
    last = _last_ms(pd.read_parquet(path, columns=[batch.window.column]), batch.window)
    if last is not None and (batch.end_ms is None or last > batch.end_ms):
        batch = replace(batch, end_ms=last)
    window = with_window_closed(batch).window
    assert window is not None
    held = fingerprint_windows(path, [window])[0][0]
    return batch, KeptAside(tuple(rule.through(window) for rule in view.set_aside), held)


def _keep_aside_in_earlier_batches(run: RunContext, view: TrainingView, state: ReferenceState) -> None:
    """Rows the run set aside among batches that passed earlier are kept with those batches: each rule bounded by
    the batch's window, and the window's fingerprint as the published table holds it. The next run's history check
    then finds those batches as published, and every training leaves the rows out, as for the run's own batch.
    Each write is journaled with what the batch held before (`previous_aside`), which a take-back puts back."""
    if not view.set_aside or not view.published:
        return
    path = run.ws.path(view.published)
    aside = RowsAside.read(path, view.set_aside, state.time_column)
    earlier = kept_batches(run.ws, run.spec.name, state, KeptBatches(run.ws, run.spec.name))
    reached = [b for b in earlier if b.window is not None and aside.within(b.window)]
    if not reached:
        return
    held, _ = fingerprint_windows(path, [b.window for b in reached if b.window is not None])
    before = kept_asides(run.ws, run.spec.name, state)
    for batch, fingerprint in zip(reached, held):
        assert batch.window is not None
        previous = before.get(batch.batch_id)
        rules = list(previous.rules) if previous is not None else []
        rules += [r for r in (rule.within(batch.window) for rule in view.set_aside) if r not in rules]
        detail = {"aside": batch.batch_id, "previous_aside": previous.to_dict() if previous is not None else None}
        with run.journal.writing(LedgerKind.REFERENCE, run.spec.name, **detail):
            save_aside(run.ws, run.spec.name, batch.batch_id, KeptAside(tuple(rules), fingerprint))


def _last_ms(times: pd.DataFrame, window: TimeWindow) -> int | None:
    """The latest instant (epoch ms) of the rows in the window, or None when it holds none."""
    stamps, _ = epoch_ms_of(times[window.column])
    inside = window_mask(times, window)
    return int(stamps[inside].max()) if inside.any() else None


def keep_batch(
    run: RunContext,
    batch: BatchProfile,
    state: ReferenceState,
    *,
    previous: dict[str, Any] | None = None,
    keys: KeyHashes | None = None,
    aside: KeptAside | None = None,
) -> None:
    """A batch joins the reference: kept in the workspace, journaled with where the reference stood before (what
    an undo goes back to; `previous`, when a retry finds the batch kept already), and the merged reference written
    as DataHub's datasetProfile. The one way in, for a batch that passed and for a block accepted as the new normal.
    `keys`: the batch's keys as its guard hashed them, for the key index beside the reference."""
    before = previous or {"batches": len(state.batches), "watermark_ms": state.watermark_ms}
    with run.journal.writing(LedgerKind.REFERENCE, run.spec.name, batch=batch.batch_id, previous=before):
        save_batch(run.ws, run.spec.name, batch, state, keys=keys, aside=aside)
    emit_reference_profile(run)


def emit_reference_profile(run: RunContext) -> None:
    """DataHub's datasetProfile of the table: the reference as it is kept now."""
    reference = load_reference(run.ws, run.spec.name)
    if reference is not None:
        _emit_profile(run, reference.profile)


def forget_batch(run: RunContext, batch_id: str, previous: dict[str, Any]) -> None:
    """A kept batch leaves the reference again (journaled): the reference goes back to where it stood before the
    batch joined it (`previous`, as `keep_batch` recorded it), and DataHub's datasetProfile with it."""
    with run.journal.writing(LedgerKind.REFERENCE, run.spec.name, forget=batch_id):
        forget_after(run.ws, run.spec.name, previous["batches"], previous["watermark_ms"])
    emit_reference_profile(run)


def _emit_profile(run: RunContext, profile: DatasetProfile) -> None:
    with run.journal.writing(LedgerKind.DATAHUB, run.spec.feature_table, aspect="datasetProfile"):
        run.metadata.emit(profile_mcps(run.spec.feature_table, profile, run.now_ms), run.now_ms)
