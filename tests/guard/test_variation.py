"""guard/variation.py: natural variation, widened for a batch shorter than the reference's: a change inside it is no
failure."""

from __future__ import annotations

from pathlib import Path

from guard.findings import Verdict

from readings_support import judge, week
from real_cases import RealCase, blocking_on


def test_a_change_within_natural_variation_warns_and_does_not_block(tmp_path, table):
    batch = week(table, 9)
    report = judge(tmp_path, table, batch.assign(temp=batch.temp + 4.0))
    assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]


def test_a_clean_week_on_a_monthly_reference_is_not_blocked(tmp_path: Path, hourly_landed_week: RealCase) -> None:
    """Half of ceiling_height's hours hold the 77,777 'unlimited' code: judged with a month's noise the week's
    share sat 2.1x the band, a scale_shift block."""
    assert blocking_on(tmp_path, hourly_landed_week, hourly_landed_week.frame) == set()
