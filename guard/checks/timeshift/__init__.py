"""Timestamps shifted by a whole number of hours (`timestamp_shift`): one check, a file per mechanism.

`evidence`: what anchors a timestamp column to the world (rows per hour, the readings' daily cycle, the lag behind
another timestamp); `check`: the rule, which solves the columns' shifts from those anchors and the edges between
them.
"""

from guard.checks.timeshift.check import check_timestamp_shift
from guard.checks.timeshift.evidence import DiurnalReadings, Evidence, count_shift, diurnal_scores, lag_shift

__all__ = ["check_timestamp_shift", "count_shift", "diurnal_scores", "DiurnalReadings", "Evidence", "lag_shift"]
