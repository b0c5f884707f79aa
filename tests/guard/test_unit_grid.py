"""A unit named from the decimal grid the reference's values sit on: a conversion moves values off it, and
undoing the conversion puts them back exactly. Real batches where natural variation alone cannot tell."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.kinds import FindingKind

from real_cases import RealCase, blocking_on, whole_table_case


def test_a_zero_inflated_month_in_inches_is_named_though_it_stays_near_natural_variation(
    tmp_path: Path, daily_newest_month: RealCase
) -> None:
    """Seattle's December precipitation / 25.4 sits 1.02x the band: a drift warning by distance alone."""
    frame = daily_newest_month.frame.assign(precipitation=daily_newest_month.frame["precipitation"] / 25.4)
    assert blocking_on(tmp_path, daily_newest_month, frame) == {(FindingKind.UNIT_MISMATCH, "precipitation")}


def test_an_overcast_week_in_kilowatts_is_named_though_the_week_is_unlike_any_past_one(
    tmp_path: Path, hourly_last_week: RealCase
) -> None:
    """Converted back from kW/m2 the week is still 4.8x the band (its shape is an overcast week's): no unit
    brings it inside natural variation, but kW/m2 alone puts its values back on whole W/m2."""
    frame = hourly_last_week.frame.assign(dni=hourly_last_week.frame["dni"] / 1000)
    assert blocking_on(tmp_path, hourly_last_week, hourly_last_week.frame) == set()
    assert (FindingKind.UNIT_MISMATCH, "dni") in blocking_on(tmp_path, hourly_last_week, frame)


def test_a_finer_precision_is_not_read_as_a_unit(tmp_path: Path, daily_newest_month: RealCase) -> None:
    """Values off the grid that a unit would put back on it only by moving them away from natural variation
    (two decimals read as cm: x10) are no conversion."""
    frame = daily_newest_month.frame.copy()
    frame["wind"] = frame["wind"] + 0.01 * (frame.index % 3 + 1)
    assert (FindingKind.UNIT_MISMATCH, "wind") not in blocking_on(tmp_path, daily_newest_month, frame)


def test_a_whole_table_rewritten_in_another_unit_is_named_by_its_grid(
    tmp_path: Path, stations_whole_table: RealCase
) -> None:
    """A year of Seattle's temperatures in degC judged at once against 7 winter weeks: its seasons leave no
    natural variation of one batch to come back to, but degF puts it back on the 0.1 grid and into the range."""
    frame = stations_whole_table.frame.assign(seattle_temp=(stations_whole_table.frame["seattle_temp"] - 32) / 1.8)
    assert (FindingKind.UNIT_MISMATCH, "seattle_temp") in blocking_on(tmp_path, stations_whole_table, frame)


def test_a_common_value_a_conversion_lands_on_a_round_number_is_no_sentinel(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    """Four years of Seattle's wind in km/h against the six months before the last: 2.5 m/s becomes 9 km/h,
    a value that looks typed for 'unknown' and that the reference never held, on 3.5% of days; but beside it
    8.64 and 9.36 km/h are as common, so it is a measurement, and the cause is the unit."""
    case = whole_table_case("seattle_weather", tmp_path_factory.mktemp("seattle-table"), slice(-7, -1))
    frame = case.frame.assign(wind=case.frame["wind"] * 3.6)
    blocking = blocking_on(tmp_path, case, frame)
    assert (FindingKind.UNIT_MISMATCH, "wind") in blocking
    assert (FindingKind.SENTINEL, "wind") not in blocking
