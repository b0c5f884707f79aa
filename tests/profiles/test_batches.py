"""profiles/batches.py: split into batches in one pass, the cadence inferred; handed over one at a time, oldest
first, as soon as each is read whole."""

from __future__ import annotations

import gc
from pathlib import Path

import pandas as pd

from profiles.batches import infer_cadence, iter_batches, split_batches
from profiles.profiler import ProfileBuilder
from profiles.snapshot import read_snapshot
from tests.profiles.batches_support import DAY_MS, month_window, table, write


def test_split_batches_profiles_each_month_in_one_pass(tmp_path: Path) -> None:
    frame = table()
    path = write(tmp_path, frame, "table")
    batches = split_batches(path, time_column="ts", cadence="month", sample_rows=400, seed=9)
    assert [s.batch.batch_id for s in batches] == ["2024-01", "2024-02", "2024-03"]  # type: ignore[union-attr]
    for snapshot, month in zip(batches, ("2024-01", "2024-02", "2024-03")):
        alone = read_snapshot(path, window=month_window(month), sample_rows=400, seed=9)
        assert snapshot.window == alone.window
        assert snapshot.profile.row_count == alone.profile.row_count
        assert snapshot.profile.columns["kind"].value_counts == alone.profile.columns["kind"].value_counts
        pd.testing.assert_frame_equal(snapshot.sample.reset_index(drop=True), alone.sample.reset_index(drop=True))
    assert infer_cadence(30 * DAY_MS) == "day" and infer_cadence(90 * DAY_MS) == "week"
    weeks = split_batches(path, time_column="ts", cadence="auto")  # 3 months: weekly
    assert sum(s.profile.row_count for s in weeks) == len(frame) and weeks[0].batch.batch_id == "week-2024-01-01"  # type: ignore[union-attr]


def test_a_table_in_time_order_is_cut_holding_one_unfinished_batch_at_a_time(tmp_path: Path) -> None:
    frame = table()  # 91 days, 10 days to a row group: a day's rows may straddle two row groups
    held = []
    for snapshot in iter_batches(write(tmp_path, frame, "table"), time_column="ts", cadence="day"):
        gc.collect()
        held.append(sum(isinstance(o, ProfileBuilder) for o in gc.get_objects()))
        assert snapshot.batch is not None
    assert len(held) == 91 and max(held) <= 1
    shuffled = write(tmp_path, frame.sample(frac=1.0, random_state=3), "shuffled")  # any order: oldest first still
    cut = [(s.batch.batch_id, s.profile.row_count) for s in iter_batches(shuffled, time_column="ts", cadence="day")]  # type: ignore[union-attr]
    assert cut == [
        (s.batch.batch_id, s.profile.row_count)
        for s in split_batches(write(tmp_path, frame, "t"), time_column="ts", cadence="day")
    ]  # type: ignore[union-attr]
