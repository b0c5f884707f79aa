"""The guard's history at the cost of the batch, on the demo workspace and the real stores: the row groups'
fingerprints are kept between guards so an appended table reads only its new row groups, a kept batch rewritten
is still caught, and duplicates across batches come from the key index beside the reference, which a kept batch
extends and an undo takes back."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.loads import last_modified_mcps
from controlplane.pipeline import approve, run_pipeline
from controlplane.spec import load_spec
from controlplane.stages.guarding import Guarded, guard_table
from controlplane.stages.kept_reference import (
    KeptBatches,
    changed_batches,
    fingerprint_cache_path,
    load_state,
)
from controlplane.stages.key_history import index_folder
from controlplane.stages.pin import append_batch, pin_table
from controlplane.takeback.undo import undo
from controlplane.workspace import Workspace
from demo.generate import generate_eta_features
from demo.seed import PIPELINE, UPSTREAMS
from guard.checks.duplicates import repeats_asked
from guard.kinds import FindingKind
from profiles.engines.keys import KeyIndex
from profiles.fingerprints import FingerprintCache
from profiles.hashing import hash_rows
from profiles.repeats import count_repeats


def _table(ws: Workspace) -> pd.DataFrame:
    return pd.read_parquet(load_spec(ws, PIPELINE).data)


def _next_day(ws: Workspace, seed: int) -> tuple[pd.DataFrame, datetime]:
    """A day of rows after the table's last one, in its types, and an instant an hour after it."""
    table = _table(ws)
    last = table["event_ts"].max().to_pydatetime()
    anchor = datetime(last.year, last.month, last.day, tzinfo=timezone.utc) + timedelta(days=2)
    rows = generate_eta_features(days=2, seed=seed, anchor=anchor)
    return rows[rows["event_ts"] > table["event_ts"].max()].astype(table.dtypes.to_dict()), anchor + timedelta(hours=1)


def _land(ws: Workspace, rows: pd.DataFrame, tmp_path: Path) -> None:
    """`kintsugi land`'s append (the table's row groups, then the batch's), the upstreams loaded as it ends."""
    batch = tmp_path / f"batch-{uuid.uuid4().hex}.parquet"
    rows.to_parquet(batch, index=False)
    append_batch(ws, load_spec(ws, PIPELINE), batch)
    stamp = int(rows["event_ts"].max().timestamp() * 1000)
    with metadata_session(ws) as metadata:
        for urn in UPSTREAMS:
            metadata.emit(last_modified_mcps(metadata, urn, stamp), stamp)


def _pinned(ws: Workspace) -> Path:
    """The table pinned as a run pins it: a private copy in a folder of its own."""
    spec = load_spec(ws, PIPELINE)
    return pin_table(ws, spec, ws.runs / f"pin-{uuid.uuid4().hex}").path(ws)


def _guard(ws: Workspace, at: datetime, *, keep_caches: bool) -> Guarded:
    with metadata_session(ws) as metadata:
        spec = load_spec(ws, PIPELINE)
        return guard_table(ws, metadata, spec, _pinned(ws), int(at.timestamp() * 1000), keep_caches=keep_caches)


def _duplicates(guarded: Guarded) -> dict:
    (found,) = [f for f in guarded.report.findings if f.kind is FindingKind.DUPLICATE_KEYS]
    return found.params


def _index_holds(ws: Workspace, order_ids: pd.Series) -> np.ndarray:
    """For each key, whether the key index kept beside the reference holds it (none kept: no key is held)."""
    manifest = index_folder(ws, PIPELINE) / "index.json"
    if not manifest.is_file():
        return np.zeros(len(order_ids), dtype=bool)
    index = KeyIndex.load(index_folder(ws, PIPELINE) / json.loads(manifest.read_text())["file"], ("order_id",))
    hashes = hash_rows(pa.table({"order_id": pa.array(order_ids.tolist(), pa.string())}))
    order = np.argsort(hashes)
    held = np.empty(len(hashes), dtype=bool)
    held[order] = index.contains(hashes[order])
    return held


def test_a_second_guard_on_an_appended_table_reads_no_row_group_of_the_history_again(demo_copy, tmp_path):
    """The kept batches' row groups come from the cache; the new rows' (two days landed, none kept yet) are read
    by no history check at all: their footers put them wholly after the watermark, and the guard profiles them."""
    ws, _ = demo_copy
    first, at = _next_day(ws, seed=21)
    _land(ws, first, tmp_path)
    assert _guard(ws, at, keep_caches=True).report.verdict.value == "CLEAN"
    groups = pq.ParquetFile(load_spec(ws, PIPELINE).data).num_row_groups
    second, at = _next_day(ws, seed=22)
    _land(ws, second, tmp_path)
    state = load_state(ws, PIPELINE)
    assert state is not None
    cache = FingerprintCache.load(fingerprint_cache_path(ws, PIPELINE))
    history = changed_batches(ws, PIPELINE, _pinned(ws), state, cache=cache)
    assert history.intact and (history.groups_read, history.groups_cached, history.groups_new) == (0, groups - 1, 2)
    unkept = changed_batches(ws, PIPELINE, _pinned(ws), state)
    assert (unkept.groups_read, unkept.groups_cached, unkept.groups_new) == (groups - 1, 0, 2)


def test_a_kept_batch_rewritten_after_its_fingerprints_were_kept_is_still_caught(demo_copy, tmp_path):
    ws, _ = demo_copy
    rows, at = _next_day(ws, seed=23)
    _land(ws, rows, tmp_path)
    assert _guard(ws, at, keep_caches=True).report.verdict.value == "CLEAN"
    state = load_state(ws, PIPELINE)
    assert state is not None
    oldest = KeptBatches(ws, PIPELINE).batch(state.batches[0])
    assert oldest.window is not None and oldest.window.through_ms is not None
    path = load_spec(ws, PIPELINE).data
    source = pq.ParquetFile(path)
    with pq.ParquetWriter(path.with_suffix(".rewritten"), source.schema_arrow) as writer:
        for group in range(source.num_row_groups):  # the same row groups, the oldest batch's distances in metres
            part = source.read_row_group(group)
            times = pa.compute.cast(part["event_ts"], pa.timestamp("ms", tz="UTC"), safe=False)
            epoch_ms = times.cast(pa.int64()).to_numpy()
            after = -np.inf if oldest.window.after_ms is None else oldest.window.after_ms
            inside = (epoch_ms > after) & (epoch_ms <= oldest.window.through_ms)
            scaled = pa.compute.multiply(part["distance_km"], pa.array(np.where(inside, 1000.0, 1.0)))
            writer.write_table(part.set_column(part.schema.get_field_index("distance_km"), "distance_km", scaled))
    path.with_suffix(".rewritten").replace(path)
    guarded = _guard(ws, at, keep_caches=True)
    assert guarded.report.verdict.value == "BLOCKED"
    named = [f for f in guarded.report.blocking if f"batch {oldest.batch_id} (rows that passed earlier)" in f.message]
    assert named, [f.message for f in guarded.report.findings]


def test_duplicates_across_batches_come_from_the_key_index_and_an_undo_takes_its_keys_back(demo_copy, tmp_path):
    ws, _ = demo_copy
    spec = load_spec(ws, PIPELINE)
    kept, at = _next_day(ws, seed=24)
    _land(ws, kept, tmp_path)
    record = run_pipeline(ws, spec, now_ms=int(at.timestamp() * 1000))
    if record.status == "paused":  # a warning on the label (the generator's rising congestion): a person approves
        record = approve(
            ws, record.run_id, reason="a clean day", by="tester", now_ms=int(at.timestamp() * 1000) + 60_000
        )
    state = load_state(ws, PIPELINE)
    assert state is not None and record.status in ("promoted", "not_promoted"), record.outcome
    manifest = json.loads((index_folder(ws, PIPELINE) / "index.json").read_text())
    assert [b for b, _ in manifest["covered"]["batches"]] == list(state.batches)  # the kept batch extended it
    assert _index_holds(ws, kept["order_id"]).all()

    replayed, at = _next_day(ws, seed=25)
    ids = [*kept["order_id"].iloc[:30], *(f"o-new-{i}" for i in range(len(replayed) - 30))]  # 30 keys kept before
    replayed = replayed.assign(order_id=pd.Series(ids, index=replayed.index, dtype=kept["order_id"].dtype))
    _land(ws, replayed, tmp_path)
    guarded = _guard(ws, at, keep_caches=True)
    assert json.loads((index_folder(ws, PIPELINE) / "index.json").read_text()) == manifest  # used as kept
    found = _duplicates(guarded)
    assert (found["duplicate_rows"], found["across_rows"], found["rows_compared"]) == (30, 30, len(replayed))
    asked = repeats_asked(guarded.context)
    from_rows = count_repeats(asked)  # the rest of the table's rows read, as without an index
    assert guarded.context.repeats is not None and guarded.context.repeats.count == from_rows.count

    undo(ws, record.run_id)
    assert not _index_holds(ws, kept["order_id"]).any()
    guarded = _guard(ws, at, keep_caches=True)  # both landings are the new batch again: one batch, no history
    found = _duplicates(guarded)
    assert (found["duplicate_rows"], found["across_rows"]) == (30, 0)
    assert (index_folder(ws, PIPELINE) / "index.json").is_file() and not _index_holds(ws, kept["order_id"]).any()


def test_a_key_index_of_another_hash_format_or_unreadable_is_built_again_from_the_key_columns(demo_copy, tmp_path):
    ws, _ = demo_copy
    rows, at = _next_day(ws, seed=26)
    _land(ws, rows, tmp_path)
    first = _guard(ws, at, keep_caches=True)
    assert first.context.repeats is not None and first.context.repeats.count is not None
    folder = index_folder(ws, PIPELINE)
    for tamper in ("format", "bytes"):
        named = json.loads((folder / "index.json").read_text())["file"]
        if tamper == "format":
            (folder / named.replace(".npy", ".hash-format")).write_text("1\n")
        else:
            (folder / named).write_bytes(b"not an index")
        again = _guard(ws, at, keep_caches=True)
        assert again.context.repeats is not None and again.context.repeats.count == first.context.repeats.count
        assert json.loads((folder / "index.json").read_text())["file"] != named
        assert [f.to_dict() for f in again.report.findings] == [f.to_dict() for f in first.report.findings]
