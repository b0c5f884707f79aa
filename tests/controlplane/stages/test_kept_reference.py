"""controlplane/stages/kept_reference.py: kept batch profiles whose distinct sketches are of a hash format this
version does not know are refused as a workspace error naming the fix; the first format's still load. A reference of
many kept batches is read one batch at a time, and a guard holds every kept batch as an outline only. The merged
reference is cached where its batches change, read from the cache after, and merged again when a batch differs."""

from __future__ import annotations

import gc
import json
import shutil
import tracemalloc
from pathlib import Path
from typing import Callable

import pytest

from controlplane.errors import WorkspaceError
from controlplane.stages.kept_reference import (
    REFERENCE_BATCHES,
    KeptBatches,
    ReferenceState,
    kept_batches,
    load_reference,
    reference_ids,
    save_batch,
)
from controlplane.workspace import Workspace
from profiles.batches import iter_batches
from profiles.outline import outline
from profiles.profile import BatchProfile
from profiles.reference import Reference, build_reference, reference_of
from profiles.snapshot import read_snapshot
from tests.profiles.batches_support import month_window, table, write


def test_a_kept_batch_of_an_unknown_hash_format_is_refused_with_the_fix(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    batch = read_snapshot(write(tmp_path, table(), "table"), window=month_window("2024-01")).batch
    assert batch is not None
    save_batch(ws, "p", batch, ReferenceState("ts", "month", (), None))
    (kept,) = (ws.references / "p" / "batches").glob("*.json")
    data = json.loads(kept.read_text())
    del data["profile"]["hash_format"]  # as format 1 wrote it: loads, its strings' sketches dropped
    kept.write_text(json.dumps(data))
    reference = load_reference(ws, "p")
    assert reference is not None and reference.profile.columns["id"].distinct is None
    assert reference.profile.columns["load"].distinct is not None
    data["profile"]["hash_format"] = 3
    kept.write_text(json.dumps(data))
    with pytest.raises(WorkspaceError) as refused:
        load_reference(ws, "p")
    line = str(refused.value)
    assert "\n" not in line and line == (
        f"the reference batch {ws.rel(kept)}: the profile's distinct sketches are of hash format 3; this version "
        "hashes with 2; run the kintsugi version that wrote it, or establish the reference again with "
        "`kintsugi init --force`"
    )


def _peak(make: Callable[[], object]) -> int:
    """The most memory (bytes traced) that `make` held at once while it ran."""
    gc.collect()
    tracemalloc.start()
    try:
        make()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_reference_of_many_kept_batches_is_read_one_batch_at_a_time(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    state = ReferenceState("ts", "day", (), None)
    for snapshot in iter_batches(write(tmp_path, table(), "table"), time_column="ts", cadence="day"):
        assert snapshot.batch is not None
        state = save_batch(ws, "p", snapshot.batch, state)
    assert len(state.batches) == 91 > REFERENCE_BATCHES
    newest = ws.references / "p" / "batches" / f"{state.batches[-1]}.json"
    shutil.rmtree(ws.cache / "references")  # merged, not read from the cache the last save_batch wrote
    one = _peak(lambda: BatchProfile.from_json(newest.read_text()))
    # every kept batch whole at once (as a guard held them) is 44 times one batch; the merge, one batch and the 91
    # outlines (a twenty-fifth of a batch each) under 6 and 4
    assert _peak(lambda: load_reference(ws, "p")) < 10 * one
    kept = KeptBatches(ws, "p")
    assert _peak(lambda: [kept.batch(b) for b in state.batches]) < 10 * one
    outlines = kept_batches(ws, "p", state, kept)
    assert all(b.outlined and b.profile.columns["rain"].sketch is None for b in outlines)
    whole = kept.whole(state.batches[-1])
    assert whole.profile.columns["rain"].sketch is not None and outline(whole) == outlines[-1]


def _kept_days(tmp_path: Path) -> tuple[Workspace, ReferenceState]:
    ws = Workspace(tmp_path / "ws")
    state = ReferenceState("ts", "day", (), None)
    for snapshot in iter_batches(write(tmp_path, table(), "table"), time_column="ts", cadence="day"):
        assert snapshot.batch is not None
        state = save_batch(ws, "p", snapshot.batch, state)
    return ws, state


def test_the_reference_is_cached_where_its_batches_change_and_read_from_the_cache_until_one_differs(
    tmp_path: Path,
) -> None:
    ws, state = _kept_days(tmp_path)
    kept = KeptBatches(ws, "p")
    ids = reference_ids(state, kept)
    merged = reference_of(lambda: (kept.whole(b) for b in ids)).to_json()
    folder = ws.cache / "references" / "p"
    (cached,) = folder.glob("*.json")  # the last save_batch's: each replaced the one before
    assert Reference.from_json(cached.read_text()).to_json() == merged  # read back, the same byte for byte

    other = build_reference([kept.whole(ids[-1])]).to_json()  # a reference that is not these batches' merge
    cached.write_text(other)
    loaded = load_reference(ws, "p")
    assert loaded is not None and loaded.to_json() == other  # what the cache holds: no batch was merged

    newest = ws.references / "p" / "batches" / f"{ids[-1]}.json"
    newest.write_text(newest.read_text() + "\n")  # the same profile, other bytes: not the batches it was merged from
    loaded = load_reference(ws, "p")
    assert loaded is not None and loaded.to_json() == merged
    assert [p.name for p in folder.glob("*.json")] == [cached.name]  # a reader merges and writes no cache

    loaded = load_reference(ws, "p", keep_cache=True)
    (recached,) = folder.glob("*.json")
    assert loaded is not None and recached != cached and recached.read_text() == merged

    recached.write_text("{")  # unreadable: merged again, never an error
    loaded = load_reference(ws, "p")
    assert loaded is not None and loaded.to_json() == merged
