"""guard/checks/units/: a unit change named with its unit (by natural variation or by the decimal grid), a rescale no
unit explains as scale_shift, and an unexplained change far beyond natural variation as a blocking drift."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from controlplane.stages.guarding import with_repeats_counted
from guard.checks.units.rescales import _outside
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import GuardReport
from guard.kinds import FindingKind, Severity
from guard.kinds import FindingKind as K
from guard.policy import DEFAULT as POLICY
from guard.runner import run_guard
from profiles.batches import split_batches
from profiles.reference import build_reference
from profiles.snapshot import read_snapshot

from readings_support import blocking, judge, week
from real_cases import RealCase, blocking_on, whole_table_case


@pytest.mark.parametrize(
    "column, to_unit, scale, offset",
    [
        ("temp", "degF", 1.8, 32.0),
        ("temp", "K", 1.0, 273.15),
        ("wind", "km/h", 3.6, 0.0),
        ("wind", "mph", 2.236936, 0.0),
        ("visibility", "km", 0.001, 0.0),
        ("rain", "inch", 1 / 25.4, 0.0),
        ("humidity", "dimensionless", 0.01, 0.0),
    ],
)
def test_a_unit_change_in_the_newest_batch_is_named_with_its_unit(tmp_path, table, column, to_unit, scale, offset):
    batch = week(table, 9)
    batch[column] = batch[column] * scale + offset
    report = judge(tmp_path, table, batch)
    (unit,) = [f for f in report.blocking if f.kind is K.UNIT_MISMATCH]
    assert (unit.column, unit.params["actual_unit"]) == (column, to_unit), [f.message for f in report.findings]
    assert unit.params["scale"] == pytest.approx(scale, rel=1e-6) and unit.params["offset"] == pytest.approx(offset)


def test_a_rescale_no_unit_explains_blocks_as_scale_shift(tmp_path, table):
    batch = week(table, 9)
    report = judge(tmp_path, table, batch.assign(wind=batch.wind * 7.3))
    assert (K.SCALE_SHIFT.value, "wind") in blocking(report), [f.message for f in report.findings]


def test_a_unit_change_in_that_week_is_still_named(tmp_path: Path, hourly_landed_week: RealCase) -> None:
    frame = hourly_landed_week.frame.assign(temp_air=hourly_landed_week.frame["temp_air"] * 1.8 + 32)
    assert (FindingKind.UNIT_MISMATCH, "temp_air") in blocking_on(tmp_path, hourly_landed_week, frame)


URN = "urn:li:dataset:(urn:li:dataPlatform:file,noise,PROD)"


def _table(noise_sd: float, rows: int = 12_000, seed: int = 3) -> pd.DataFrame:
    """Three months of readings of a skewed signed quantity; the last month's are each thrown `noise_sd` up or
    down at random (a feed flipping between two offsets): the shape splits in two, so no rescaling explains it."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-01-01", tz="UTC")
    times = start + pd.to_timedelta(np.sort(rng.uniform(0, 91 * 86_400, rows)), "s")
    level = rng.gamma(2.0, 3.0, rows) - 2.0
    last = times >= pd.Timestamp("2024-03-01", tz="UTC")
    level[last] += rng.choice([-noise_sd, noise_sd], int(last.sum()))
    return pd.DataFrame({"ts": times.astype("datetime64[ms, UTC]"), "level": level.round(2)})


def _drift(tmp_path: Path, noise_sd: float):
    path = tmp_path / f"noise-{noise_sd}.parquet"
    _table(noise_sd).to_parquet(path, index=False, row_group_size=1_000)
    snapshots = split_batches(path, time_column="ts", cadence="month")
    contract = Contract(
        URN,
        (ColumnContract("ts", "timestamp"), ColumnContract("level", "number", unit="degC")),
        event_timestamp_column="ts",
    )
    reference = build_reference([s.batch for s in snapshots[:2]])  # type: ignore[misc]
    report = run_guard(with_repeats_counted(GuardContext(URN, contract, snapshots[2], reference, (), now_ms=0)))
    return [
        f for f in report.findings if f.column == "level" and f.kind in (FindingKind.DRIFT, FindingKind.SCALE_SHIFT)
    ]


def test_a_change_far_beyond_natural_variation_that_no_rescaling_explains_blocks(tmp_path: Path) -> None:
    (found,) = _drift(tmp_path, noise_sd=20.0)
    assert found.kind is FindingKind.DRIFT and found.severity is Severity.BLOCK
    assert found.observed["distance"] > POLICY.unexplained


def test_a_change_beyond_natural_variation_but_short_of_far_beyond_it_is_a_warning(tmp_path: Path) -> None:
    found = _drift(tmp_path, noise_sd=6.0)
    assert found and all(f.severity is Severity.WARN for f in found)
    assert all(1 < f.observed["distance"] <= POLICY.unexplained for f in found) and POLICY.unexplained > POLICY.far


def test_the_same_quantity_without_extra_noise_raises_nothing(tmp_path: Path) -> None:
    assert _drift(tmp_path, noise_sd=0.0) == []


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


def _unitless(tmp_path: Path, table: pd.DataFrame, *, own: bool = False) -> list:
    """`level` declaring no unit, the last month judged against the first two (`own`: against the clean last
    month's own kept profile, as the history check judges rows that passed earlier)."""
    contract = Contract(
        URN, (ColumnContract("ts", "timestamp"), ColumnContract("level", "number")), event_timestamp_column="ts"
    )
    clean = _months(tmp_path / "clean.parquet", _last_month_times(1.0))
    snapshots = _months(tmp_path / "table.parquet", table)
    reference = build_reference([clean[2].batch] if own else [s.batch for s in snapshots[:2]])  # type: ignore[misc]
    report = run_guard(with_repeats_counted(GuardContext(URN, contract, snapshots[2], reference, (), now_ms=0)))
    return [(f.kind, f.severity) for f in report.findings if f.column == "level" and "explained_by" not in f.params]


def _months(path: Path, table: pd.DataFrame) -> list:
    table.to_parquet(path, index=False, row_group_size=1_000)
    return split_batches(path, time_column="ts", cadence="month")


def _last_month_times(factor: float) -> pd.DataFrame:
    """A positive quantity (the readings raised clear of zero), its last month times `factor`."""
    table = _table(0.0).assign(level=lambda t: t["level"] + 20.0)
    last = table["ts"] >= pd.Timestamp("2024-03-01", tz="UTC")
    return table.assign(level=table["level"].where(~last, table["level"] * factor))


def test_a_column_with_no_unit_rescaled_far_beyond_natural_variation_is_a_scale_shift(tmp_path: Path) -> None:
    assert _unitless(tmp_path, _last_month_times(2.5)) == [(FindingKind.SCALE_SHIFT, Severity.BLOCK)]
    assert _unitless(tmp_path, _last_month_times(1.0)) == []


def test_a_column_with_no_unit_thrown_up_and_down_is_drift_not_a_rescaling(tmp_path: Path) -> None:
    found = _unitless(tmp_path, _table(20.0))
    assert (FindingKind.DRIFT, Severity.BLOCK) in found and FindingKind.SCALE_SHIFT not in {k for k, _ in found}


def test_rows_that_passed_earlier_all_times_one_factor_are_a_scale_shift(tmp_path: Path) -> None:
    assert _unitless(tmp_path, _last_month_times(2.5), own=True) == [(FindingKind.SCALE_SHIFT, Severity.BLOCK)]


def _bounded(tmp_path: Path, last_month: Callable[[pd.Series], pd.Series]) -> list:
    """A day-of-week field (1 to 7, bounded so by the contract, no unit) on an hour's readings for six months, the
    last month's values passed through `last_month`, judged against the five before."""
    times = pd.date_range("2024-01-01", "2024-06-30 23:00", freq="h", tz="UTC")
    field = pd.Series(times.dayofweek + 1, dtype="float64")
    last = pd.Series(times >= pd.Timestamp("2024-06-01", tz="UTC"))
    table = pd.DataFrame({"ts": times.astype("datetime64[ms, UTC]"), "weekday": field.where(~last, last_month(field))})
    contract = Contract(
        URN,
        (ColumnContract("ts", "timestamp"), ColumnContract("weekday", "number", minimum=1, maximum=7)),
        event_timestamp_column="ts",
    )
    snapshots = _months(tmp_path / "table.parquet", table)
    reference = build_reference([s.batch for s in snapshots[:5]])  # type: ignore[misc]
    report = run_guard(with_repeats_counted(GuardContext(URN, contract, snapshots[5], reference, (), now_ms=0)))
    return [(f.kind, f.severity) for f in report.findings if f.column == "weekday" and "explained_by" not in f.params]


def test_a_bounded_column_with_no_unit_rescaled_out_of_its_bounds_is_a_scale_shift(tmp_path: Path) -> None:
    """Outside the contract's bounds the range check blocks anyway; divided by one factor the batch is back inside
    them and inside natural variation, so the rescale is the name (the out-of-range finding its symptom)."""
    assert _blocks(_bounded(tmp_path, lambda field: field * 2.5)) == [(FindingKind.SCALE_SHIFT, Severity.BLOCK)]


def test_a_rescale_the_writer_rounded_to_whole_numbers_is_back_inside_the_bounds_divided_by_its_factor(
    tmp_path: Path,
) -> None:
    """Codes 1 to 7 times 2.5 written as whole numbers (2 to 18): no factor puts both extremes back on the bounds
    exactly, but 2.5 does within the rounding (half a step over the factor); 2 does not."""
    times = pd.date_range("2024-01-01", "2024-01-31 23:00", freq="h", tz="UTC")
    codes = (pd.Series(times.dayofweek + 1, dtype="float64") * 2.5).round()
    table = pd.DataFrame({"ts": times.astype("datetime64[ms, UTC]"), "weekday": codes})
    (month,) = _months(tmp_path / "table.parquet", table)
    batch, bounded = month.profile.columns["weekday"], ColumnContract("weekday", "number", minimum=1, maximum=7)
    assert (batch.minimum, batch.maximum) == (2.0, 18.0)
    assert _outside(bounded, batch) and not _outside(bounded, batch, 2.5) and _outside(bounded, batch, 2.0)


def test_a_bounded_column_with_a_few_values_out_of_its_bounds_is_out_of_range_not_a_rescale(tmp_path: Path) -> None:
    found = _bounded(tmp_path, lambda field: field.where(field.index % 97 != 0, field + 7))  # a few rows beyond
    assert (FindingKind.OUT_OF_RANGE, Severity.BLOCK) in found and FindingKind.SCALE_SHIFT not in {k for k, _ in found}


def _blocks(found: list) -> list:
    return [pair for pair in found if pair[1] is Severity.BLOCK]


def test_a_calendar_field_rescaled_past_its_bounds_is_a_scale_shift_though_its_wide_band_holds_it(
    tmp_path: Path,
) -> None:
    """A day of the month in ten-day batches: each batch holds another stretch of the month, so its band is wide and
    the field x2.5 stays inside it. But it breaks the bounds, and divided by 2.5 it is back inside them and nearer
    its natural variation: rescaled. A few values past the bounds are not (the factor that fits them moves the rest)."""
    contract = Contract(
        URN,
        (ColumnContract("day", "timestamp"), ColumnContract("day_of_month", "integer", minimum=1, maximum=31)),
        event_timestamp_column="day",
    )

    def days(start: pd.Timestamp, count: int) -> pd.DataFrame:
        stamps = pd.date_range(start, periods=count, freq="D", tz="UTC")
        return pd.DataFrame({"day": stamps.astype("datetime64[ms, UTC]"), "day_of_month": stamps.day.astype("int64")})

    stretches = [days(start, 10) for start in pd.date_range("2020-05-02", periods=9, freq="10D")]
    batch = days(pd.Timestamp("2020-08-01"), 14)

    def judged(frame: pd.DataFrame) -> set:
        snaps = []
        for i, part in enumerate([*stretches, frame]):
            path = tmp_path / f"{len(list(tmp_path.iterdir()))}.parquet"
            part.to_parquet(path, index=False)
            snaps.append(read_snapshot(path, time_column="day", batch_id=f"b{i}"))
        reference = build_reference([s.batch for s in snaps[:-1]])
        report = run_guard(with_repeats_counted(GuardContext(URN, contract, snaps[-1], reference, (), now_ms=0)))
        return {(f.kind, f.column) for f in report.blocking}

    assert judged(batch) == set()
    rescaled = batch.assign(day_of_month=(batch["day_of_month"] * 2.5).round().astype("int64"))
    assert judged(rescaled) == {(FindingKind.SCALE_SHIFT, "day_of_month")}
    a_few = batch.assign(day_of_month=batch["day_of_month"].where(batch.index % 5 != 4, 40))
    assert judged(a_few) == {(FindingKind.OUT_OF_RANGE, "day_of_month")}


def _panel(rescaled: dict[str, float], seed: int = 5) -> pd.DataFrame:
    """A monthly panel: each month, 30 of 300 entities whose sizes span three orders of magnitude report their count
    and last month's (`previous`, a feature that follows the count within a few percent); a month's level depends on
    which entities report, so it varies widely from month to month. The last month's columns in `rescaled` are
    multiplied by their factor."""
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(np.log(10.0), np.log(10_000.0), 300))
    frames = []
    for month in range(6):
        chosen = rng.choice(300, 30, replace=False)
        previous = sizes[chosen] * rng.uniform(0.9, 1.1, 30)
        count = previous * rng.normal(1.01, 0.02, 30)
        when = pd.Timestamp("2024-01-01", tz="UTC") + pd.DateOffset(months=month)
        frame = pd.DataFrame({"ts": when, "count": count.round(1), "previous": previous.round(1)})
        if month == 5:
            frame = frame.assign(**{c: frame[c] * factor for c, factor in rescaled.items()})
        frames.append(frame)
    return pd.concat(frames, ignore_index=True).assign(ts=lambda t: t["ts"].astype("datetime64[ms, UTC]"))


def _panel_report(tmp_path: Path, rescaled: dict[str, float]) -> GuardReport:
    contract = Contract(
        URN,
        (ColumnContract("ts", "timestamp"), ColumnContract("previous", "number"), ColumnContract("count", "number")),
        event_timestamp_column="ts",
        label_column="count",
    )
    snapshots = _months(tmp_path / "panel.parquet", _panel(rescaled))
    reference = build_reference([s.batch for s in snapshots[:-1]])
    return run_guard(with_repeats_counted(GuardContext(URN, contract, snapshots[-1], reference, (), now_ms=0)))


def _panel_findings(tmp_path: Path, rescaled: dict[str, float]) -> list:
    report = _panel_report(tmp_path, rescaled)
    return [(f.kind, f.column, f.severity) for f in report.findings if "explained_by" not in f.params]


def test_a_feature_rescaled_inside_its_wide_band_is_named_by_the_column_it_follows(tmp_path: Path) -> None:
    # x2.5 stays inside what months of other entities showed; against the count it follows, it is far outside
    found = _panel_findings(tmp_path, {"previous": 2.5})
    assert (FindingKind.SCALE_SHIFT, "previous", Severity.BLOCK) in found, found
    assert _panel_findings(tmp_path, {}) == []


def test_a_rescaling_read_against_a_partner_records_its_correlation_and_its_move_as_closest_calls(
    tmp_path: Path,
) -> None:
    # the rule blocks where the pair held its correlation and its scale moved beyond `far`: each call decides
    rescaled = [c for c in _panel_report(tmp_path, {"previous": 2.5}).closest_calls if c.column == "previous"]
    by_field = {c.threshold: c for c in rescaled if c.threshold in ("pair_scale_correlation", "far") and c.decides}
    assert set(by_field) == {"pair_scale_correlation", "far"}, rescaled
    assert all(c.crossed for c in by_field.values())
    clean = [c for c in _panel_report(tmp_path, {}).closest_calls if c.threshold == "pair_scale_correlation"]
    assert clean and not any(c.crossed and c.decides for c in clean)


def test_a_pair_that_moves_together_is_no_rescaling_of_either(tmp_path: Path) -> None:
    found = _panel_findings(tmp_path, {"previous": 2.5, "count": 2.5})
    assert not [f for f in found if f[0] is FindingKind.SCALE_SHIFT or f[2] is Severity.BLOCK], found


@pytest.mark.parametrize(
    "declared, written, factor",
    [("month", "week", 365.25 / 12 / 7), ("day", "h", 24.0), ("week", "day", 7.0), ("year", "month", 12.0)],
)
def test_a_duration_written_in_another_time_unit_is_named_with_its_factor(tmp_path, declared, written, factor):
    contract = Contract(
        URN,
        (ColumnContract("ts", "timestamp"), ColumnContract("level", "number", unit=declared)),
        event_timestamp_column="ts",
    )
    snapshots = _months(tmp_path / "table.parquet", _last_month_times(factor))
    reference = build_reference([s.batch for s in snapshots[:2]])  # type: ignore[misc]
    report = run_guard(with_repeats_counted(GuardContext(URN, contract, snapshots[2], reference, (), now_ms=0)))
    (unit,) = [f for f in report.blocking if f.kind is K.UNIT_MISMATCH]
    assert (unit.column, unit.params["actual_unit"]) == ("level", written), [f.message for f in report.findings]
    assert unit.params["scale"] == pytest.approx(factor, rel=1e-6)
