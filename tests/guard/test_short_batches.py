"""A batch shorter than the reference batches (a week landed on a monthly reference) varies more than its rows say:
hourly rows are not independent, so natural variation is widened by how much shorter it is
(`profiles.reference.Reference.shorter_by`)."""

from __future__ import annotations

from pathlib import Path

from guard.kinds import FindingKind

from real_cases import RealCase, blocking_on


def test_a_clean_week_on_a_monthly_reference_is_not_blocked(tmp_path: Path, hourly_landed_week: RealCase) -> None:
    """Half of ceiling_height's hours hold the 77,777 'unlimited' code: judged with a month's noise the week's
    share sat 2.1x the band, a scale_shift block."""
    assert blocking_on(tmp_path, hourly_landed_week, hourly_landed_week.frame) == set()


def test_a_unit_change_in_that_week_is_still_named(tmp_path: Path, hourly_landed_week: RealCase) -> None:
    frame = hourly_landed_week.frame.assign(temp_air=hourly_landed_week.frame["temp_air"] * 1.8 + 32)
    assert (FindingKind.UNIT_MISMATCH, "temp_air") in blocking_on(tmp_path, hourly_landed_week, frame)
