"""guard/checks/freshness.py: implausible timestamps."""

from __future__ import annotations

import pandas as pd

from guard.kinds import FindingKind as K

from readings_support import blocking, judge, week


def test_zeroed_timestamps_block(tmp_path, table):
    batch = week(table, 9)
    zeroed = batch.assign(time=batch.time.where(batch.index >= 3, pd.Timestamp(0, tz="UTC")))
    assert (K.OUT_OF_RANGE.value, "time") in blocking(judge(tmp_path, table, zeroed))
