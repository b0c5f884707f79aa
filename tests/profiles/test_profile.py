"""profiles/profile.py: profiles' JSON is stable and round-trips; merged batch profiles equal their union's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from profiles.profile import BatchProfile, DatasetProfile
from profiles.sketches import KLL_RANK_ERROR
from profiles.snapshot import read_snapshot
from tests.profiles.batches_support import exact_parts, month_window, table, write


def test_batch_profile_json_is_stable_and_round_trips(tmp_path: Path) -> None:
    path = write(tmp_path, table(), "table")
    one = read_snapshot(path, window=month_window("2024-01")).batch
    two = read_snapshot(path, window=month_window("2024-01")).batch
    assert one is not None and two is not None
    assert one.to_json() == two.to_json()  # same rows, same bytes
    back = BatchProfile.from_json(one.to_json())
    assert back.to_json() == one.to_json()
    column = json.loads(one.to_json())["profile"]["columns"]["rain"]
    assert column["zeros"] > 0.7 * column["rows"] and column["point_mass"]["value"] == 0.0
    assert len(json.loads(one.to_json())["profile"]["columns"]["ts"]["hours"]) == 24


def test_merging_batch_profiles_equals_profiling_their_union(tmp_path: Path) -> None:
    frame = table()
    path = write(tmp_path, frame, "table")
    months = [read_snapshot(path, window=month_window(m)).profile for m in ("2024-01", "2024-02", "2024-03")]
    merged = months[0].merge(months[1]).merge(months[2])
    whole = read_snapshot(path).profile
    assert merged.row_count == whole.row_count
    for name in frame.columns:
        ours, theirs = merged.columns[name], whole.columns[name]
        assert exact_parts(ours) == exact_parts(theirs), name
    assert merged.columns["temp"].mean == pytest.approx(whole.columns["temp"].mean, rel=1e-12)
    assert merged.columns["temp"].stdev == pytest.approx(whole.columns["temp"].stdev, rel=1e-9)
    assert abs(merged.columns["id"].distinct_count / len(frame) - 1) < 0.05
    ordered = np.sort(frame["temp"].to_numpy())
    for q, v in merged.columns["temp"].quantiles:
        assert abs(np.searchsorted(ordered, v, side="right") / len(ordered) - q) <= KLL_RANK_ERROR


def test_dataset_profile_json_round_trips_profiles_without_sketches() -> None:
    from profiles.profile import ColumnProfile

    bare = DatasetProfile(
        10, {"x": ColumnProfile("x", "number", 10, 1, minimum=0.0, maximum=float("inf"), quantiles=((0.5, 2.0),))}
    )
    again = DatasetProfile.from_dict(json.loads(json.dumps(bare.to_dict())))
    assert again == bare and again.columns["x"].maximum == float("inf")


def test_a_profile_of_the_first_hash_format_drops_only_its_strings_distinct_sketches(tmp_path: Path) -> None:
    """Format 1 hashed a string by its neighbours' lengths: its sketch would count values twice beside a fresh one,
    and the rows are not at hand to hash again. Numbers and times hashed alike in both formats: they keep theirs."""
    from profiles.hashing import HASH_FORMAT, HashFormatError

    batch = read_snapshot(write(tmp_path, table(), "table"), window=month_window("2024-01")).batch
    assert batch is not None
    data = json.loads(batch.to_json())
    assert data["profile"]["hash_format"] == HASH_FORMAT == 2
    fresh = BatchProfile.from_dict(data).profile.columns
    assert all(fresh[name].distinct is not None for name in ("id", "kind", "load", "ts"))
    assert fresh["id"].distinct == batch.profile.columns["id"].distinct
    del data["profile"]["hash_format"]  # as format 1 wrote it
    old = BatchProfile.from_dict(data).profile.columns
    assert old["id"].distinct is None and old["kind"].distinct is None and old["id"].distinct_count is None
    assert old["load"].distinct == fresh["load"].distinct and old["ts"].distinct == fresh["ts"].distinct
    assert old["id"].row_count == fresh["id"].row_count and old["ts"].hours == fresh["ts"].hours
    data["profile"]["hash_format"] = 3
    with pytest.raises(HashFormatError, match="hash format 3; this version hashes with 2; profile the batch again"):
        BatchProfile.from_dict(data)
