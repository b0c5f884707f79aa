"""guard/checks/swaps/: two columns in each other's place are named (columns_swapped) from their orders, correlations,
ranges or exact values, and told from a rescale of one of them (scale_shift)."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chaos.corpus.falsealarms import load_batches
from chaos.corpus.realdata import DATASETS
from controlplane.stages.guarding import with_repeats_counted
from guard.checks.swaps.check import _SwapBatch, check_columns_swapped
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding
from guard.kinds import FindingKind
from guard.runner import run_guard
from profiles.reference import Reference, build_reference
from profiles.snapshot import read_snapshot

import orders_support
from orders_support import CONTRACT, URN, found, leaked, orders, swapped
from real_cases import RealCase, blocking_on


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return orders_support.reference(tmp_path_factory)


def test_a_clean_batch_has_no_swap(tmp_path: Path, reference: Reference) -> None:
    assert found(check_columns_swapped, tmp_path, orders(9), reference) == []


def test_two_columns_in_each_others_place_are_named_with_both_and_the_whole_scope(
    tmp_path: Path, reference: Reference
) -> None:
    result = found(check_columns_swapped, tmp_path, swapped(orders(9), "distance_km", "prep_time_min"), reference)
    assert [(f.kind, f.params["columns"], f.params["scope"]) for f in result] == [
        (FindingKind.COLUMNS_SWAPPED, ["distance_km", "prep_time_min"], "all")
    ]
    assert result[0].playbook == "swap_columns" and set(result[0].params["observed_medians"]) == {
        "distance_km",
        "prep_time_min",
    }


def test_some_rows_breaking_a_learned_order_by_a_whole_gap_are_swapped_rows(
    tmp_path: Path, reference: Reference
) -> None:
    frame = orders(9)
    rows = np.random.default_rng(0).random(len(frame)) < 0.1
    result = found(check_columns_swapped, tmp_path, swapped(frame, "temp_min", "temp_max", rows), reference)
    assert [(f.params["scope"], f.params["order"]) for f in result] == [("order", ["temp_min", "temp_max"])]


def test_an_order_broken_by_a_little_or_by_far_more_is_no_swap(tmp_path: Path, reference: Reference) -> None:
    frame = orders(9)
    crossing = frame.assign(
        temp_min=np.where(np.arange(len(frame)) % 5 == 0, frame["temp_max"] + 0.5, frame["temp_min"])
    )
    assert found(check_columns_swapped, tmp_path, crossing, reference) == []  # two series crossing
    fahrenheit = frame.assign(temp_min=frame["temp_min"] * 1.8 + 32)
    assert found(check_columns_swapped, tmp_path, fahrenheit, reference) == []  # a unit change


def test_columns_of_other_units_have_no_order_to_learn(tmp_path: Path, reference: Reference) -> None:
    frame = orders(9)  # distance (km) <= prep time (min) on most rows: a coincidence, not an order
    rows = np.arange(len(frame)) % 10 == 0
    result = found(
        check_columns_swapped,
        tmp_path,
        frame.assign(distance_km=np.where(rows, frame["prep_time_min"] + 20, frame["distance_km"])),
        reference,
    )
    assert result == []


def test_the_clean_week_blocks_on_nothing(tmp_path: Path, hourly_week: RealCase) -> None:
    assert blocking_on(tmp_path, hourly_week, hourly_week.frame) == set()


def test_a_rescale_breaking_an_order_is_a_scale_shift_of_that_column_never_a_swap(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """dhi x2.5 breaks dhi <= ghi on every daylight hour, by about the reference's gap: the order rule alone
    would swap them back (and publish dhi's values as ghi). Both keep their correlations, so it is a rescale."""
    frame = hourly_week.frame.assign(dhi=hourly_week.frame["dhi"] * 2.5)
    assert blocking_on(tmp_path, hourly_week, frame) == {(FindingKind.SCALE_SHIFT, "dhi")}


def test_a_swap_of_two_columns_is_named_from_their_exchanged_correlations(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    frame = swapped(hourly_week.frame, "dni", "dhi")
    assert (FindingKind.COLUMNS_SWAPPED, "dni") in blocking_on(tmp_path, hourly_week, frame)


def test_a_swap_of_a_bounded_column_is_named_from_the_bound_it_reverses(
    tmp_path: Path, hourly_last_week: RealCase
) -> None:
    """The year's last week is humid: the dew point sits close under the air temperature, so swapped they break
    dew <= air by half the reference's gap only, and their correlations barely tell. But the reference reached
    that bound (saturation) and never crossed it, and now every hour but the saturated ones crosses it."""
    frame = swapped(hourly_last_week.frame, "temp_air", "temp_dew")
    assert (FindingKind.COLUMNS_SWAPPED, "temp_air") in blocking_on(tmp_path, hourly_last_week, frame)


def test_rows_swapped_are_swapped_back_but_rows_of_changed_values_breaking_the_same_bound_are_not(
    tmp_path: Path, hourly_whole_table: RealCase
) -> None:
    """A year of hours: on 15% of them the air and dew-point temperatures swapped, the dew point passes the air
    by the usual gap, and on those rows the two exchanged their correlations with the rest: swap them back. The
    air temperature dealt out in the order of the irradiance breaks the bound on as many hours by as much; but
    there each column kept its own correlations, so swapping would publish values no one measured (and there
    the air temperature follows the label exactly: leakage)."""
    table = hourly_whole_table.frame
    rows = np.random.default_rng(5).random(len(table)) < 0.15
    blocking = blocking_on(tmp_path, hourly_whole_table, swapped(table, "temp_air", "temp_dew", rows))
    assert (FindingKind.COLUMNS_SWAPPED, "temp_air") in blocking
    assert blocking_on(tmp_path, hourly_whole_table, leaked(table, "temp_air", 0.5, by="ghi")) == {
        (FindingKind.TARGET_LEAKAGE, "temp_air")
    }


def test_a_daily_month_clean_swapped_and_rescaled(tmp_path: Path, daily_newest_month: RealCase) -> None:
    """A strict order held through a year of seasons (temp_min <= temp_max), broken on every December day by
    half the year's gap: swapped, however small December's gap. Broken on most days by a temp_min x2.5: no
    swap puts each column back into its natural variation, so temp_min was rescaled."""
    frame = daily_newest_month.frame
    assert blocking_on(tmp_path, daily_newest_month, frame) == set()
    found = blocking_on(tmp_path, daily_newest_month, swapped(frame, "temp_min", "temp_max"))
    assert found == {(FindingKind.COLUMNS_SWAPPED, "temp_max")}
    rescaled = frame.assign(temp_min=frame["temp_min"] * 2.5)
    assert blocking_on(tmp_path, daily_newest_month, rescaled) == {(FindingKind.SCALE_SHIFT, "temp_min")}


def test_a_whole_reversal_that_jumped_into_the_other_columns_place_is_a_swap(
    tmp_path: Path, daily_newest_month_half_year: RealCase
) -> None:
    """Six months of summer and autumn saw temp_min <= temp_max strictly but never a winter, and December's gap
    is half of theirs: the break alone could be two series crossing. But each column's December sits where the
    other sat in November, and swapped back each continues from where it was: a swap."""
    case = daily_newest_month_half_year
    assert blocking_on(tmp_path, case, case.frame) == set()
    found = blocking_on(tmp_path, case, swapped(case.frame, "temp_min", "temp_max"))
    assert found == {(FindingKind.COLUMNS_SWAPPED, "temp_max")}


def test_a_swap_of_two_series_of_one_unit_is_read_from_their_ranges(
    tmp_path: Path, stations_newest_week: RealCase
) -> None:
    """No other column to correlate with and no order held: San Francisco at Seattle's December temperatures
    (all below any it showed) and Seattle at San Francisco's, each in range and natural once swapped back."""
    assert blocking_on(tmp_path, stations_newest_week, stations_newest_week.frame) == set()
    frame = swapped(stations_newest_week.frame, "sf_temp", "seattle_temp")
    assert blocking_on(tmp_path, stations_newest_week, frame) == {(FindingKind.COLUMNS_SWAPPED, "sf_temp")}


def test_a_swap_in_a_batch_that_passed_earlier_is_named_against_its_own_profile(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """The history check judges a kept batch whose rows changed against its own kept profile (no batches to
    measure natural variation by): dni and dhi swapped there also break dhi <= ghi, and it is dni's correlations
    that dhi took, not ghi's (swapping ghi back would publish dhi's values as the label)."""
    clean = tmp_path / "clean.parquet"
    hourly_week.frame.to_parquet(clean, index=False)
    kept = read_snapshot(clean, time_column=hourly_week.dataset.time_column).profile
    against_itself = RealCase(hourly_week.dataset, kept, hourly_week.frame)  # type: ignore[arg-type]
    found = blocking_on(tmp_path, against_itself, swapped(hourly_week.frame, "dni", "dhi"))
    assert (FindingKind.COLUMNS_SWAPPED, "dni") in found and (FindingKind.COLUMNS_SWAPPED, "ghi") not in found


def test_a_swap_in_a_month_that_passed_earlier_is_named_by_its_exact_values(tmp_path: Path) -> None:
    """In June the two cities' temperatures overlap and hold no order, so nothing in the values tells a swap. But
    the month passed earlier and its profile was kept: each column now holds exactly the values the other held,
    and with the hour each exchanged its co-moment too. That is the kept rows, swapped."""
    june = load_batches(DATASETS["pnw_temps"], tmp_path, "month")[5]
    assert june.batch_id == "2010-06" and june.snapshot.batch is not None
    against_itself = RealCase(DATASETS["pnw_temps"], build_reference([june.snapshot.batch]), june.frame)
    assert blocking_on(tmp_path, against_itself, june.frame) == set()
    found = blocking_on(tmp_path, against_itself, swapped(june.frame, "sf_temp", "seattle_temp"))
    assert found == {(FindingKind.COLUMNS_SWAPPED, "sf_temp")}
    reordered = june.frame.assign(sf_temp=june.frame["sf_temp"].to_numpy()[::-1])
    assert (FindingKind.COLUMNS_SWAPPED, "sf_temp") not in blocking_on(
        tmp_path, against_itself, swapped(reordered, "sf_temp", "seattle_temp")
    )


@pytest.mark.parametrize(
    "batch",
    [
        "clean",
        "whole swap",
        "rows swapped",
        "rescaled",
        "one column shifted out of range",
        "a batch against its own kept profile, swapped",
    ],
)
def test_every_pair_a_line_of_evidence_names_is_among_the_pairs_tested(
    tmp_path: Path, reference: Reference, batch: str
) -> None:
    """The pairs tried are found per column (exact fields, pair moments, own distance, share out of range), not
    by trying all of them: every pair of columns that any line of evidence would name is among them."""
    frame, against = orders(9), reference
    rows = np.random.default_rng(0).random(len(frame)) < 0.1
    if batch == "whole swap":
        frame = swapped(frame, "distance_km", "prep_time_min")
    elif batch == "rows swapped":
        frame = swapped(frame, "temp_min", "temp_max", rows)
    elif batch == "rescaled":
        frame = frame.assign(temp_min=frame["temp_min"] * 3)
    elif batch == "one column shifted out of range":
        frame = frame.assign(part_a=frame["part_a"] + 100)
    elif batch == "a batch against its own kept profile, swapped":
        against = build_reference([orders_support.snap(tmp_path, frame, "kept").batch])
        frame = swapped(frame, "part_a", "part_b")
    context = GuardContext(URN, CONTRACT, orders_support.snap(tmp_path, frame, "batch"), against, (), now_ms=0)
    swaps = _SwapBatch.of(context)
    assert swaps is not None
    named = {pair for pair in combinations(swaps.names, 2) if swaps.evidence(*pair) is not None}
    tested = swaps.pairs_to_test()
    assert named <= set(tested) and tested == sorted(
        tested, key=lambda p: (swaps.names.index(p[0]), swaps.names.index(p[1]))
    )
    assert bool(named) == (batch not in ("clean", "one column shifted out of range"))  # a shift is no swap


def test_a_wide_tables_pairs_tested_are_few_and_a_swap_beyond_the_paired_columns_is_named(tmp_path: Path) -> None:
    """300 contracted columns (44,850 pairs; pair moments kept for 40 of them): a clean batch tries the pairs of
    the paired columns only, and two columns of other levels swapped outside them are still named."""
    names = [f"x{i:03d}" for i in range(300)]
    contract = Contract(
        URN,
        (ColumnContract("event_ts", "timestamp"), *(ColumnContract(n, "number", unit="m") for n in names)),
        event_timestamp_column="event_ts",
    )

    def batch(seed: int) -> pd.DataFrame:
        rng = np.random.default_rng(seed)
        columns = {n: rng.normal(10 * i, 1 + i % 7, 400).round(3) for i, n in enumerate(names)}
        return pd.DataFrame({"event_ts": pd.date_range(f"2024-01-0{seed + 1}", periods=400, freq="min"), **columns})

    kept = [orders_support.snap(tmp_path, batch(seed), f"b{seed}").batch for seed in range(4)]
    reference = build_reference(kept)

    def judged(frame: pd.DataFrame) -> tuple[_SwapBatch, list[str]]:
        context = GuardContext(URN, contract, orders_support.snap(tmp_path, frame, "batch"), reference, (), now_ms=0)
        swaps = _SwapBatch.of(context)
        assert swaps is not None
        return swaps, sorted(f.column for f in check_columns_swapped(context) if isinstance(f, Finding))

    clean, found = judged(batch(5))
    assert found == [] and len(clean.pairs_to_test()) <= 40 * 39 // 2
    swaps, found = judged(swapped(batch(6), "x200", "x250"))
    assert found == ["x200"] and ("x200", "x250") in swaps.pairs_to_test()


def _judged_last(frames: list[pd.DataFrame], contract: Contract, time_column: str, tmp_path: Path) -> set:
    """The blocking (kind, column) of the last frame judged as a batch against the others as kept batches."""
    snaps = []
    tmp_path.mkdir(parents=True, exist_ok=True)
    for i, frame in enumerate(frames):
        path = tmp_path / f"batch-{i}.parquet"
        frame.to_parquet(path, index=False)
        snaps.append(read_snapshot(path, time_column=time_column, batch_id=f"batch-{i}"))
    reference = build_reference([s.batch for s in snaps[:-1]])
    context = with_repeats_counted(GuardContext(contract.dataset_urn, contract, snaps[-1], reference, (), now_ms=0))
    return {(f.kind, f.column) for f in run_guard(context).blocking}


def _years_of_months(seed: int, swap_last: bool) -> list[pd.DataFrame]:
    """Six years of monthly rows of two declining series that never meet and one unrelated number, a batch a year."""
    rng = np.random.default_rng(seed)
    months = np.arange(72)
    frame = pd.DataFrame(
        {
            "month": pd.date_range("2010-01-01", periods=72, freq="MS", tz="UTC").astype("datetime64[ms, UTC]"),
            "high": (1600 - 5 * months + rng.normal(0, 120, 72)).round(),
            "low": (850 - 3 * months + rng.normal(0, 70, 72)).round(),
            "other": rng.normal(50, 10, 72).round(1),
        }
    )
    if swap_last:
        frame = swapped(frame, "high", "low", months >= 60)
    return [frame.iloc[12 * year : 12 * year + 12] for year in range(6)]


YEARLY = Contract(
    "urn:li:dataset:(urn:li:dataPlatform:file,test.yearly,PROD)",
    (ColumnContract("month", "timestamp"), *(ColumnContract(n, "number") for n in ("high", "low", "other"))),
    event_timestamp_column="month",
)


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_two_columns_exchanged_in_a_dozen_rows_are_named_by_the_step_each_took_out_of_its_place(
    tmp_path: Path, seed: int
) -> None:
    """Twelve rows are too few to compare distributions, but each column's batch sits beyond the band of its own
    history, one by a step no past batch took, and read as each other's both are back inside with ordinary steps."""
    assert _judged_last(_years_of_months(seed, False), YEARLY, "month", tmp_path / "clean") == set()
    swapped_year = _years_of_months(seed, True)
    assert _judged_last(swapped_year, YEARLY, "month", tmp_path / "swap") == {(FindingKind.COLUMNS_SWAPPED, "high")}


def _seasons(seed: int, swap_last: bool) -> list[pd.DataFrame]:
    """Six seasons of 30 teams: points scored and allowed alike in distribution, the label following their
    difference, one more column following each."""
    rng = np.random.default_rng(seed)
    seasons = []
    for season in range(6):
        scored, allowed = rng.normal(700, 70, 30).round(), rng.normal(700, 70, 30).round()
        frame = pd.DataFrame(
            {
                "season": pd.Timestamp(f"{2001 + season}-01-01", tz="UTC"),
                "scored": scored,
                "allowed": allowed,
                "power": (0.2 * scored + rng.normal(0, 10, 30)).round(),
                "errors": (0.15 * allowed + rng.normal(0, 10, 30)).round(),
                "wins": (81 + 0.1 * (scored - allowed) + rng.normal(0, 4, 30)).round(),
            }
        ).astype({"season": "datetime64[ms, UTC]"})
        if swap_last and season == 5:
            frame = frame.assign(scored=frame["allowed"], allowed=frame["scored"])
        seasons.append(frame)
    return seasons


SEASONS = Contract(
    "urn:li:dataset:(urn:li:dataPlatform:file,test.seasons,PROD)",
    (
        ColumnContract("season", "timestamp"),
        *(ColumnContract(n, "number") for n in ("scored", "allowed", "power", "errors", "wins")),
    ),
    label_column="wins",
    event_timestamp_column="season",
)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_two_columns_of_like_values_exchanged_are_named_by_their_correlations_alone(tmp_path: Path, seed: int) -> None:
    """Each column's values stay inside its natural variation (the two are alike), but their correlations with the
    label and the others sit far beyond their noise from the reference's, and exchanged they fit it."""
    assert _judged_last(_seasons(seed, False), SEASONS, "season", tmp_path / "clean") == set()
    assert _judged_last(_seasons(seed, True), SEASONS, "season", tmp_path / "swap") == {
        (FindingKind.COLUMNS_SWAPPED, "scored")
    }


CALENDAR = Contract(
    "urn:li:dataset:(urn:li:dataPlatform:file,test.calendar,PROD)",
    (
        ColumnContract("day", "timestamp"),
        ColumnContract("year", "integer", minimum=1900, maximum=2100),
        ColumnContract("month", "integer", minimum=1, maximum=12),
        ColumnContract("count", "number", minimum=0),
        ColumnContract("level", "number"),
    ),
    label_column="level",
    event_timestamp_column="day",
)


def _days(start: str, end: str, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    stamps = pd.date_range(start, end, freq="D", tz="UTC", inclusive="left")
    count = rng.gamma(1.5, 60, len(stamps)).round()
    return pd.DataFrame(
        {
            "day": stamps.astype("datetime64[ms, UTC]"),
            "year": stamps.year.astype("int64"),
            "month": stamps.month.astype("int64"),
            "count": count,
            "level": (20 + 0.05 * count + rng.normal(0, 2, len(stamps))).round(1),
        }
    )


def test_a_year_and_a_month_exchanged_in_a_months_batch_are_named_by_their_bounds(tmp_path: Path) -> None:
    """Each is held on one value by every month's batch (no spread to exchange), but each now holds a value only
    the other's bounds allow, and exchanged both are inside theirs: no clean batch breaks a bound."""
    months = [_days(f"2020-{m:02d}-01", f"2020-{m + 1:02d}-01", m) for m in range(1, 9)]
    assert _judged_last(months, CALENDAR, "day", tmp_path / "clean") == set()
    last = months[-1]
    exchanged = [*months[:-1], last.assign(year=last["month"], month=last["year"])]
    assert _judged_last(exchanged, CALENDAR, "day", tmp_path / "swap") == {(FindingKind.COLUMNS_SWAPPED, "year")}
