"""How the control plane guards a table: its new batch against the reference, its history against itself.

With a reference kept in the workspace (`controlplane.stages.kept_reference`), the guard reads only the rows after the
watermark — the new batch — and compares them with the last clean batches; whole-table invariants (duplicate
keys across batches) see the whole table. The batches already in the reference are profiled again and
compared with what was kept when they passed: rows that changed since (a rewrite of the whole table in other
units) are guarded against their own kept profile, so the change is named exactly, with its rows. Every
finding names the rows it concerns (`Finding.rows`: a time window). A workspace without a kept reference
(made before batches) is guarded as a whole table against DataHub's datasetProfile. Snapshots are computed by the
pipeline's engine (`controlplane.runs.engine`: arrow, or spark), with the same windows and batches either way.

What a guard costs follows the batch, not the history, and it reads the batch once: the engine samples by the
contract's key and hashes it in the profile's pass (`TableEngine.snapshot`), so the batch's duplicate keys are
counted from those hashes; each kept batch's JSON is read once (`KeptBatches`), and the reference merged from them
comes from its cache (merged when the last batch was kept); the history's fingerprints come from the row groups'
cache, so only changed row groups of kept batches are read (the new rows' by their footer, none); and while the
history is intact (every kept batch as it passed, no row outside them), duplicates across batches
are counted from the new batch's key hashes and the key index beside the reference
(`controlplane.stages.key_history`), never from the rest of the table's rows. The new batch's hashed keys go back
with the result (`Guarded.keys`), for the index to take when the batch is kept. Caches are written only by a guard
that may write (`keep_caches`: a run's).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Callable

import remediations.playbooks  # noqa: F401  (registers the playbooks whose plans name a failure)
from controlplane.datahub.datasets import read_profile, walk_upstream
from controlplane.datahub.port import MetadataPort
from controlplane.documents.odcs import read_contract
from controlplane.runs.engine import TableEngine
from controlplane.spec import PipelineSpec
from controlplane.stages.batchshift import pin_batch_shift
from controlplane.stages.kept_reference import (
    History,
    KeptBatches,
    ReferenceState,
    changed_batches,
    fingerprint_cache_path,
    kept_batches,
    load_reference,
    load_state,
    new_rows_window,
    windows_of,
)
from controlplane.stages.key_history import current_index
from controlplane.stages.tableshift import pin_table_shift
from controlplane.workspace import Workspace
from guard.checks.duplicates import repeats_asked
from guard.context import GuardContext
from guard.contract import Contract
from guard.findings import Finding, GuardReport, RowSelector, make_finding
from guard.kinds import FindingKind
from guard.runner import run_guard
from profiles.engines.keys import KeyHashes
from profiles.fingerprints import FingerprintCache, fingerprint_of_profile
from profiles.profile import BatchProfile, TimeWindow
from profiles.reference import build_reference
from profiles.repeats import count_repeats, count_repeats_indexed
from profiles.repeats_types import Repeats
from profiles.snapshot import Snapshot, SnapshotError
from remediations.aside import RowsAside
from remediations.registry import playbook_for

__all__ = ["Guarded", "guard_table", "context_without_snapshot", "coalesce", "with_repeats_counted", "contract_keys"]

# what a batch that passed earlier is NOT judged on again: its age (freshness, upstream SLAs) and its size
# against a cadence (it is compared with itself, as it was). Its share of unlabelled rows is judged again: that is
# a property of its rows, and labels that were there when it passed and are gone since went missing.
_NOT_HISTORY = frozenset(
    {
        FindingKind.LABEL_STALE,
        FindingKind.TIMESTAMP_UNPARSEABLE,
        FindingKind.VOLUME_DROP,
        FindingKind.VOLUME_SPIKE,
        FindingKind.UPSTREAM_UNKNOWN,
        FindingKind.UPSTREAM_DEPRECATED,
        FindingKind.UPSTREAM_INCIDENT,
        FindingKind.UPSTREAM_STALE,
    }
)


@dataclass(frozen=True)
class Guarded:
    context: GuardContext  # the new batch's (or the whole table's)
    report: GuardReport  # every finding: the new batch's and the changed history's
    batch: BatchProfile | None  # the new batch, kept in the reference when it passes; None: nothing new to keep
    keys: KeyHashes | None = None  # every complete key of the new batch, hashed, when the key index was used (not
    # above 16M rows, where the profile keeps a sample by key: the index then catches the batch up from the table)


def context_without_snapshot(
    ws: Workspace,
    metadata: MetadataPort,
    spec: PipelineSpec,
    now_ms: int,
    snapshot: Snapshot | None = None,
    snapshot_error: str | None = None,
    kept: KeptBatches | None = None,
    contract_read: tuple[Contract | None, str | None] | None = None,
    keep_cache: bool = False,
) -> GuardContext:
    """The guard's context of `spec`'s table from DataHub and the kept reference; `contract_read`: the contract
    as `read_contract` gave it already (else it is read here); `keep_cache`: a reference merged here is cached
    for the next guard (a writer's, under the pipeline's lock)."""
    contract, contract_error = contract_read or read_contract(metadata, spec.feature_table)
    reference = load_reference(ws, spec.name, kept, keep_cache=keep_cache) or read_profile(metadata, spec.feature_table)
    return GuardContext(
        dataset_urn=spec.feature_table,
        contract=contract,
        snapshot=snapshot,
        reference=reference,
        lineage=walk_upstream(metadata, spec.feature_table),
        now_ms=now_ms,
        snapshot_error=snapshot_error,
        contract_error=contract_error,
    )


def contract_keys(metadata: MetadataPort, spec: PipelineSpec) -> tuple[str, ...]:
    """The key columns of the table's contract in DataHub (none without a contract or a key): the columns an engine
    samples by and hashes in the profile's pass (`TableEngine.snapshot`)."""
    contract, _ = read_contract(metadata, spec.feature_table)
    return _keys_of(contract)


def _keys_of(contract: Contract | None) -> tuple[str, ...]:
    return tuple(contract.key_columns) if contract is not None else ()


def with_repeats_counted(context: GuardContext) -> GuardContext:
    """The context with its batch's repeats counted (`profiles.repeats`), exactly what the duplicates check will
    judge (`guard.checks.duplicates.repeats_asked`: the declared key against the table's history, or whole rows
    only where the reference makes them a double load). Call it once the snapshot, reference and table paths are
    set: the check refuses counts made for another context. The batch's own repeats come from the key hashes its
    snapshot kept in the profile's pass (`Snapshot.keys`), with no second read of the table."""
    hashed = context.snapshot.keys if context.snapshot is not None else None
    return replace(context, repeats=count_repeats(repeats_asked(context), hashed))


def _with_rows(findings: tuple[Finding, ...], window: TimeWindow | None) -> tuple[Finding, ...]:
    """Each finding that names no rows of its own is about the rows of `window`, the batch it was read from."""
    if window is None:
        return findings
    return tuple(f if f.rows is not None else f.with_rows(RowSelector.of_window(window)) for f in findings)


def guard_table(
    ws: Workspace,
    metadata: MetadataPort,
    spec: PipelineSpec,
    table: Path,
    now_ms: int,
    *,
    as_batch: bool = False,
    engine: TableEngine | None = None,
    keep_caches: bool = False,
    contract_read: tuple[Contract | None, str | None] | None = None,
    aside: RowsAside | None = None,
) -> Guarded:
    """The guard over a local parquet file of the table (`as_batch`: the file IS the new batch, e.g. `guard
    --data BATCH`), profiled by `engine` (a run's; else the spec's, for this call). An unreadable file is a
    blocking finding, never a pass; an engine that cannot start is a DataError. `keep_caches`: the row groups'
    fingerprints and the key index it made are kept for the next guard (a run's guard, under the pipeline's
    lock); else they are used and not written. `contract_read`: the table's contract as `read_contract` gives
    it, when the caller read it already (detect parses it while the table is pinned). `aside`: `table` is the
    training view of a healed table, less the rows these rules set aside (a heal's verify): a batch that passed
    earlier and lacks exactly those rows, the rest passing against its kept profile, is not a rewrite of history."""
    if engine is None:
        engine = TableEngine.of(spec)
        try:
            return guard_table(
                ws,
                metadata,
                spec,
                table,
                now_ms,
                as_batch=as_batch,
                engine=engine,
                keep_caches=keep_caches,
                contract_read=contract_read,
                aside=aside,
            )
        finally:
            engine.close()
    state, kept = load_state(ws, spec.name), KeptBatches(ws, spec.name)
    contract_read = contract_read or read_contract(metadata, spec.feature_table)
    read = partial(engine.snapshot, keys=_keys_of(contract_read[0]))
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="guard-history") as beside:
        # the kept batches' fingerprints (and their cache) need no row of the new batch: taken while it is profiled
        later = None if state is None or as_batch else beside.submit(_history, ws, spec.name, table, state, read, kept)
        try:
            snapshot, window = _read(read, table, state, as_batch)
        except SnapshotError as exc:
            context = context_without_snapshot(
                ws, metadata, spec, now_ms, None, str(exc), kept, contract_read, keep_cache=keep_caches
            )
            return Guarded(context, run_guard(context), None)
        history, cache = later.result() if later is not None else (None, FingerprintCache())
    context = context_without_snapshot(
        ws, metadata, spec, now_ms, snapshot, kept=kept, contract_read=contract_read, keep_cache=keep_caches
    )
    if aside is not None and window is not None:  # a heal's training view: the batch's rows it set aside are its
        context = replace(context, rows_set_aside=aside.within(window))
    if state is None or history is None:
        context = with_repeats_counted(context)
        report = run_guard(context)
        return Guarded(context, replace(report, findings=_with_rows(report.findings, window)), None)
    context = replace(context, table_paths=(str(table),))
    context, keys = _repeats_counted(ws, spec, table, state, context, history, kept, keep_caches)
    report = run_guard(context)
    batches = kept_batches(ws, spec.name, state, kept)
    findings = coalesce(
        _with_rows(report.findings, window) + _history_findings(state, context, history, aside),
        windows_of(batches, state),
    )
    findings = pin_table_shift(findings, table, batches, new_rows_window(state))
    findings = pin_batch_shift(findings, table, batches, new_rows_window(state), cache)
    if keep_caches:
        cache.save(fingerprint_cache_path(ws, spec.name))
    batch = snapshot.batch if window is not None else None
    return Guarded(context, replace(report, findings=findings), batch, keys if batch is not None else None)


def _history(
    ws: Workspace, pipeline: str, table: Path, state: ReferenceState, read: Callable[..., Snapshot], kept: KeptBatches
) -> tuple[History, FingerprintCache]:
    """What became of the kept batches (`changed_batches`), with the row groups' fingerprint cache it read from."""
    cache = FingerprintCache.load(fingerprint_cache_path(ws, pipeline))
    return changed_batches(ws, pipeline, table, state, read=read, kept=kept, cache=cache), cache


def _repeats_counted(
    ws: Workspace,
    spec: PipelineSpec,
    table: Path,
    state: ReferenceState,
    context: GuardContext,
    history: History,
    kept: KeptBatches,
    keep_caches: bool,
) -> tuple[GuardContext, KeyHashes | None]:
    """The context with its repeats counted, as `with_repeats_counted` counts them; a new batch's declared key
    against the rest of the table from the key index (and the batch's hashed keys with it), when the index can
    stand for the rest: the history is intact, so the rest is exactly the kept batches' rows."""
    asked = repeats_asked(context)
    rest = (str(table),)
    if (
        asked is None
        or asked.whole_rows
        or not history.intact
        or asked.window != new_rows_window(state)
        or (asked.files, asked.history) != (rest, rest)
    ):
        return replace(context, repeats=count_repeats(asked)), None
    try:
        index = current_index(ws, spec.name, table, asked.columns, kept.covered(state), save=keep_caches)
    except SnapshotError as exc:  # the kept rows' keys cannot be read: the duplicates check blocks on it
        return replace(context, repeats=Repeats(asked, error=str(exc))), None
    repeats, keys = count_repeats_indexed(asked, index, context.snapshot.keys if context.snapshot else None)
    return replace(context, repeats=repeats), keys


def _same_failure(finding: Finding) -> tuple[object, ...]:
    """What makes two findings on adjacent rows one failure: kind, column, severity, and the playbook with its
    plan (the params that instruct it, `remediations.registry.Playbook.plan`), never the evidence around it."""
    playbook = playbook_for(finding)
    plan = playbook.plan_of(finding) if playbook is not None else {}
    return (
        finding.kind.value,
        finding.column or "",
        finding.playbook or "",
        finding.severity.value,
        json.dumps(plan, sort_keys=True, default=str),
    )


def coalesce(findings: tuple[Finding, ...], windows: list[TimeWindow]) -> tuple[Finding, ...]:
    """One finding for one failure over consecutive batches (`windows`, oldest first): the same conversion found
    in each batch of a table a producer rewrote whole is named once, over the union of their rows, so a heal
    corrects each row once. The same failure found over every row of a table with nothing new (the whole table
    guarded) is the batches' findings again: the batches name its rows exactly, so it is dropped. A finding about
    other rows is left as it is."""
    position = {(w.after_ms, w.through_ms): i for i, w in enumerate(windows)}
    order = {id(f): i for i, f in enumerate(findings)}
    batched = {_same_failure(f) for f in findings if f.rows is not None and f.rows.bounds in position}
    kept: list[tuple[int, Finding]] = []  # (where the finding first stood, the finding)
    merged: list[tuple[int, Finding, int]] = []  # (where it first stood, the finding, the last window it holds)
    for finding in sorted(findings, key=lambda f: (_same_failure(f), _after(f))):
        here = position.get(finding.rows.bounds) if finding.rows is not None else None
        if here is None:
            if finding.rows is not None or _same_failure(finding) not in batched:
                kept.append((order[id(finding)], finding))
        elif merged and _same_failure(merged[-1][1]) == _same_failure(finding) and merged[-1][2] + 1 == here:
            at, last, _ = merged[-1]
            assert last.rows is not None and finding.rows is not None
            merged[-1] = (at, last.with_rows(last.rows.through(finding.rows)), here)
        else:
            merged.append((order[id(finding)], finding, here))
    return tuple(f for _, f in sorted(kept + [(at, f) for at, f, _ in merged], key=lambda item: item[0]))


def _after(finding: Finding) -> float:
    after = finding.rows.after_ms if finding.rows is not None else None
    return float("-inf") if after is None else float(after)


def _read(
    read: Callable[..., Snapshot], table: Path, state: ReferenceState | None, as_batch: bool
) -> tuple[Snapshot, TimeWindow | None]:
    if state is None:
        return read(table), None
    if as_batch:
        return read(table, time_column=state.time_column, batch_id="checked"), None
    window = new_rows_window(state)
    batch_id = f"after-{state.watermark_ms}" if state.watermark_ms is not None else "first"
    snapshot = read(table, window=window, batch_id=batch_id)
    if snapshot.profile.row_count == 0:  # nothing new since the watermark: the whole table is guarded
        return read(table, time_column=state.time_column), None
    return snapshot, window


def _history_findings(
    state: ReferenceState, context: GuardContext, history: History, aside: RowsAside | None = None
) -> tuple[Finding, ...]:
    """Batches that passed earlier and whose rows changed since, guarded against their own kept profile; and
    rows in no batch at all (late rows dated before the watermark, rows with no time), which nothing guarded. A
    batch whose only change is the rows `aside` sets aside (a heal's training view) is not a change no check names."""
    found: list[Finding] = [_unguarded(context, state, history.unguarded_rows)] if history.unguarded_rows else []
    for kept, now in history.changed:
        against_kept = with_repeats_counted(
            replace(
                context, snapshot=now, reference=build_reference([kept]), lineage=(), table_paths=(), same_rows=True
            )
        )
        findings = [f for f in run_guard(against_kept).findings if f.kind not in _NOT_HISTORY]
        set_aside = aside.within(kept.window) if aside is not None and kept.window is not None else 0
        lacks_only_aside = set_aside > 0 and now.profile.row_count + set_aside == kept.profile.row_count
        if not any(f.severity.value == "block" for f in findings) and not lacks_only_aside:
            findings.append(_changed(context, kept, now))
        found += [
            replace(f, message=f"batch {kept.batch_id} (rows that passed earlier): {f.message}")
            for f in _with_rows(tuple(findings), kept.window)
        ]
    return tuple(found)


def _unguarded(context: GuardContext, state: ReferenceState, rows: int) -> Finding:
    return make_finding(
        FindingKind.HISTORY_CHANGED,
        context.dataset_urn,
        state.time_column,
        observed=rows,
        expected=0,
        unguarded_rows=rows,
        message=f"{rows} rows lie in no batch the guard passed: their {state.time_column!r} is missing, or at or "
        "before the watermark but outside every kept batch (late rows), so no check has seen them; drop them, or "
        "once they are checked take the reference again from the whole table with `kintsugi init --force`",
    )


def _changed(context: GuardContext, kept: BatchProfile, now: Snapshot) -> Finding:
    moved = fingerprint_of_profile(now.profile).moved(fingerprint_of_profile(kept.profile))
    said = "; ".join(f"{name}: {how}" for name, how in sorted(moved.items())[:6])
    more = f" and {len(moved) - 6} more columns" if len(moved) > 6 else ""
    return make_finding(
        FindingKind.HISTORY_CHANGED,
        context.dataset_urn,
        None,
        observed=now.profile.row_count,
        expected=kept.profile.row_count,
        batch=kept.batch_id,
        moved_columns=sorted(moved),
        message=f"the rows of batch {kept.batch_id}, which passed earlier, changed since ({kept.profile.row_count} "
        f"rows then, {now.profile.row_count} now"
        + (f"; {said}{more}" if said else "")
        + ") in a way no check names: find who rewrote them",
    )
