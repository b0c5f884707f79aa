"""profiles/batches.py: split into batches in one pass, the cadence inferred."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from profiles.batches import infer_cadence, split_batches
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
