"""guard/checks/sentinels: a placeholder code or a feed stuck on one reading is a sentinel; a legitimate mass,
zeros continuing the reference's edge or a period's constant value is not."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guard.checks.sentinels import check_sentinels, looks_like_placeholder
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind, Severity
from guard.policy import DEFAULT
from profiles.batches import split_batches
from profiles.reference import Reference, build_reference
from profiles.snapshot import read_snapshot

import orders_support
from orders_support import URN, found, orders, snap
from panel_support import ENTITIES, _guard, _panel
from readings_support import URN as READINGS
from readings_support import contract, week
from real_cases import RealCase, blocking_on


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return orders_support.reference(tmp_path_factory)


def test_placeholders() -> None:
    assert [looks_like_placeholder(v) for v in (0, -1, -9, -99, 999, 9999.0, 77777, 7, 9, 12, 100, -2)] == [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        False,
        True,
        False,
        False,
        False,
    ]


def test_a_clean_batch_has_no_sentinel(tmp_path: Path, reference: Reference) -> None:
    assert found(check_sentinels, tmp_path, orders(9), reference) == []


@pytest.mark.parametrize(
    "column,value,how",
    [
        ("distance_km", 0.0, "new"),
        ("courier_load", -1, "impossible"),
        ("prep_time_min", 9999.0, "impossible"),
        ("temp_min", -500.0, "new"),
        ("part_a", 999.0, "new"),
    ],
)
def test_a_placeholder_on_a_tenth_of_rows_is_a_sentinel_to_quarantine(
    tmp_path: Path, reference: Reference, column: str, value: float, how: str
) -> None:
    frame = orders(9)
    rows = np.random.default_rng(1).random(len(frame)) < 0.1
    result = found(check_sentinels, tmp_path, frame.assign(**{column: frame[column].mask(rows, value)}), reference)
    assert [(f.kind, f.column, f.params["value"], f.params["how"], f.playbook) for f in result] == [
        (FindingKind.SENTINEL, column, value, how, "quarantine_rows")
    ]


def test_impossible_values_that_are_not_one_code_are_left_to_the_range_check(
    tmp_path: Path, reference: Reference
) -> None:
    frame = orders(9)
    rows = np.arange(len(frame)) % 20 == 0
    assert (
        found(
            check_sentinels,
            tmp_path,
            frame.assign(courier_load=frame["courier_load"].mask(rows, frame["courier_load"] + 25)),
            reference,
        )
        == []
    )


def test_zeros_continuing_the_reference_edge_are_data(tmp_path: Path, tmp_path_factory) -> None:
    rng = np.random.default_rng(2)
    calm = [
        pd.DataFrame(
            {
                "event_ts": pd.date_range("2025-01-01", periods=500, freq="h", tz="UTC"),
                "wind": np.clip(rng.gamma(1.5, 1.5, 500), 0.5, None).round(1),
            }
        )
        for _ in range(3)
    ]
    contract = Contract(URN, (ColumnContract("event_ts", "timestamp"), ColumnContract("wind", "number", minimum=0)))
    ref = build_reference([snap(tmp_path, f, f"w{i}").batch for i, f in enumerate(calm)])
    batch = calm[0].assign(wind=calm[0]["wind"].mask(np.arange(500) % 40 == 0, 0.0))  # a few calm hours at 0
    assert found(check_sentinels, tmp_path, batch, ref, contract) == []


def test_a_legitimate_mass_half_the_rows_is_not_a_finding_however_it_grows(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    frames = [
        pd.DataFrame(
            {
                "event_ts": pd.date_range("2025-01-01", periods=400, freq="h", tz="UTC"),
                "ceiling": np.where(rng.random(400) < 0.5, 77_777.0, rng.uniform(100, 3_000, 400).round()),
            }
        )
        for _ in range(3)
    ]
    contract = Contract(URN, (ColumnContract("event_ts", "timestamp"), ColumnContract("ceiling", "number", minimum=0)))
    ref = build_reference([snap(tmp_path, f, f"c{i}").batch for i, f in enumerate(frames)])
    clear_week = frames[0].assign(ceiling=frames[0]["ceiling"].mask(np.arange(400) % 10 != 0, 77_777.0))
    assert found(check_sentinels, tmp_path, clear_week, ref, contract) == []


def test_a_rare_placeholder_that_grows_is_a_sentinel(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    frames = [
        pd.DataFrame(
            {
                "event_ts": pd.date_range("2025-01-01", periods=1_000, freq="h", tz="UTC"),
                "reading": np.where(rng.random(1_000) < 0.01, -1.0, rng.uniform(0, 50, 1_000).round(1)),
            }
        )
        for _ in range(3)
    ]
    contract = Contract(URN, (ColumnContract("event_ts", "timestamp"), ColumnContract("reading", "number")))
    ref = build_reference([snap(tmp_path, f, f"r{i}").batch for i, f in enumerate(frames)])
    grown = frames[0].assign(reading=frames[0]["reading"].mask(np.arange(1_000) % 4 == 0, -1.0))
    assert [(f.column, f.params["how"]) for f in found(check_sentinels, tmp_path, grown, ref, contract)] == [
        ("reading", "grown")
    ]


def test_a_feed_stuck_on_one_reading_is_a_frozen_sentinel(tmp_path: Path, hourly_week: RealCase) -> None:
    """A week of air temperature stuck on its first reading: a plausible value, no placeholder, held by every row
    where no week that passed held any one temperature on half its hours."""
    week = hourly_week.frame
    stuck = week.assign(temp_air=week["temp_air"].iloc[0])
    assert (FindingKind.SENTINEL, "temp_air") in blocking_on(tmp_path, hourly_week, stuck)


def test_a_feed_stuck_from_mid_week_on_is_a_frozen_sentinel_but_the_same_share_spread_out_is_not(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """Stuck from Thursday on: half the week's hours in one unbroken run of one reading. The same reading on every
    other hour is no stuck feed (a run of one), and holds no more than a share the frozen rule leaves alone."""
    week = hourly_week.frame
    reading = week["temp_air"].iloc[84]
    stuck_half = week.assign(temp_air=week["temp_air"].mask(week.index >= week.index[84], reading))
    assert (FindingKind.SENTINEL, "temp_air") in blocking_on(tmp_path, hourly_week, stuck_half)
    every_other = week.assign(temp_air=week["temp_air"].mask(np.arange(len(week)) % 2 == 0, reading))
    assert (FindingKind.SENTINEL, "temp_air") not in blocking_on(tmp_path, hourly_week, every_other)


def test_a_column_with_a_mass_of_its_own_moved_onto_one_value_is_not_frozen(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """Visibility sits on a point mass most hours (16,100 m): a week all at one other reading is a reporting
    change such columns show between clean batches (24,000 m on 77% of a clean week), not a stuck feed."""
    week = hourly_week.frame
    assert (FindingKind.SENTINEL, "visibility") not in blocking_on(
        tmp_path, hourly_week, week.assign(visibility=24000.0)
    )


def test_one_placeholder_where_no_measurement_can_be_is_a_sentinel_but_one_slightly_impossible_value_is_not(
    tmp_path: Path, daily_newest_month: RealCase
) -> None:
    """A month of rain with one -9999: too few rows for a mass anywhere else, but rain below 0 is no measurement
    and -9999 is typed for 'unknown', so its row is quarantined (exact), not left to block as out of range. A
    lone -0.1 is impossible too, yet no code: out of range, for a person to look at."""
    frame = daily_newest_month.frame.copy()
    frame.loc[3, "precipitation"] = -9999.0
    assert blocking_on(tmp_path, daily_newest_month, frame) == {(FindingKind.SENTINEL, "precipitation")}
    frame.loc[3, "precipitation"] = -0.1
    assert blocking_on(tmp_path, daily_newest_month, frame) == {(FindingKind.OUT_OF_RANGE, "precipitation")}


def _kinds(report) -> set[FindingKind]:
    return {f.kind for f in report.findings if f.severity is Severity.BLOCK}


def test_a_flag_constant_in_every_batch_switching_on_is_no_placeholder(tmp_path: Path) -> None:
    report = _guard(tmp_path, _panel(7), kept=6)
    assert not [
        f for f in report.findings if f.column == "flag" and f.kind in (FindingKind.SENTINEL, FindingKind.DRIFT)
    ]
    assert not _kinds(report)  # a value beyond the reference's range is news (a warning), not a failure


def test_a_placeholder_written_into_part_of_a_period_column_is_still_a_sentinel(tmp_path: Path) -> None:
    frame = _panel(7)
    newest = frame.index[frame["period"] == frame["period"].max()]
    frame.loc[newest[: ENTITIES // 4], "level"] = -9999.0
    report = _guard(tmp_path, frame, kept=6)
    assert any(f.kind is FindingKind.SENTINEL and f.column == "level" for f in report.findings)


def test_a_placeholder_on_two_rows_of_an_unbounded_column_is_a_sentinel(tmp_path: Path) -> None:
    frame = _panel(7)  # `level` is a signed quantity: the contract bounds it nowhere
    newest = frame.index[frame["period"] == frame["period"].max()]
    frame.loc[newest[:2], "level"] = -9999.0  # far below anything its history held, however few rows
    report = _guard(tmp_path, frame, kept=6)
    (found,) = [f for f in report.findings if f.kind is FindingKind.SENTINEL and f.column == "level"]
    assert found.severity is Severity.BLOCK and found.params["value"] == -9999


def _with_ages(weeks: int, modes: list[int | None], seed: int = 4) -> pd.DataFrame:
    """The hourly readings with an `age` column: uniform on 0..39, and in week k its mode `modes[k]` on a quarter of
    the rows (None: no mode of its own)."""
    from readings_support import weather

    frame = weather(weeks)
    rng = np.random.default_rng(seed)
    ages = rng.integers(0, 40, len(frame))
    week = np.arange(len(frame)) // 168
    for k, mode in enumerate(modes):
        if mode is not None:
            ages[(week == k) & (rng.random(len(frame)) < 0.25)] = mode
    return frame.assign(age=ages)


def _judged_on_ages(tmp_path: Path, frame: pd.DataFrame):

    from readings_support import judge

    path = tmp_path / "ages.parquet"
    frame.to_parquet(path, index=False)
    table = (frame, split_batches(path, time_column="time", cadence="week"))
    terms = contract()
    terms = Contract(
        terms.dataset_urn, (*terms.columns, ColumnContract("age", "integer")), event_timestamp_column="time"
    )
    return judge(tmp_path, table, week(table, 8), terms=terms)


def test_a_mode_that_moves_from_batch_to_batch_is_data_and_a_code_that_grows_is_not(tmp_path: Path) -> None:
    moving = _judged_on_ages(tmp_path, _with_ages(9, [3, 5, 7, 11, 13, 2, 4, 6, 9]))  # this week's mode: 9
    assert not [f for f in moving.findings if f.column == "age"], [f.message for f in moving.findings]
    grown = _judged_on_ages(tmp_path, _with_ages(9, [None] * 8 + [9]))  # 9 comes from nowhere to a quarter
    assert [(f.kind, f.params.get("value")) for f in grown.blocking if f.column == "age"] == [(FindingKind.SENTINEL, 9)]


def _wide_panel(periods: int = 7, seed: int = 8) -> pd.DataFrame:
    """One row per entity and period: two positive quantities spanning orders of magnitude, a count whose least
    value is 1, and a share in percent."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(periods):
        size = np.exp(rng.normal(12, 2, ENTITIES))
        frames.append(
            pd.DataFrame(
                {
                    "period": pd.Timestamp(f"{2001 + i}-01-01", tz="UTC"),
                    "entity": [f"e{j:02d}" for j in range(ENTITIES)],
                    "headcount": size.round(0),
                    "output": (size * rng.lognormal(1, 0.3, ENTITIES)).round(1),
                    "visits": rng.poisson(3, ENTITIES) + 1,
                    "covered": np.clip(rng.normal(40, 20, ENTITIES), 0.5, 99.5).round(1),
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    return frame


def _judge_wide(tmp_path: Path, frame: pd.DataFrame):
    columns = (
        ColumnContract("headcount", "number", minimum=0.0),
        ColumnContract("output", "number", minimum=0.0),
        ColumnContract("visits", "integer", minimum=0.0),
        ColumnContract("covered", "number", unit="percent"),
    )
    return _guard(tmp_path, frame, kept=frame["period"].nunique() - 1, columns=columns)


def _zeroed(frame: pd.DataFrame, rows_by_column: dict[str, list[int]]) -> pd.DataFrame:
    out = frame.copy()
    newest = out.index[out["period"] == out["period"].max()]
    for column, rows in rows_by_column.items():
        out.loc[newest[rows], column] = 0
    return out


def _zero_sentinels(report) -> set[str]:
    return {f.column for f in report.blocking if f.kind is FindingKind.SENTINEL and f.params.get("value") == 0}


def test_a_few_zeros_in_each_of_two_columns_far_from_zero_are_placeholders_together(tmp_path: Path) -> None:
    """Three zeros among forty rows of one wide-ranging quantity are within its evidence; three more in another,
    on other rows, are not: each column is named. On a linear scale 0 is right beside their least values."""
    alone = _judge_wide(tmp_path, _zeroed(_wide_panel(), {"headcount": [1, 2, 3]}))
    assert _zero_sentinels(alone) == set(), [f.message for f in alone.findings]
    report = _judge_wide(tmp_path, _zeroed(_wide_panel(), {"headcount": [1, 2, 3], "output": [11, 12, 13]}))
    assert _zero_sentinels(report) == {"headcount", "output"}, [f.message for f in report.findings]
    named = next(f for f in report.blocking if f.column == "output")
    assert named.params["rows_with_new_zeros"] == 6 and named.params["chance"] < 0.001


def test_zeros_beside_a_least_value_of_one_or_in_a_share_are_measurements(tmp_path: Path) -> None:
    """The same six rows as two far-from-zero columns', in a count whose least value was 1 (it continues to 0) and a
    percentage (0 is a level of its scale): not weighed."""
    report = _judge_wide(tmp_path, _zeroed(_wide_panel(), {"visits": [1, 2, 3], "covered": [11, 12, 13]}))
    assert _zero_sentinels(report) == set(), [f.message for f in report.findings]


@pytest.mark.parametrize(
    "value,rows,frozen",
    [
        (7.77, [2, 6, 10, 14, 18, 22], False),
        (7.77, [8, 9, 10, 11, 12, 13], True),
        (2.4, [4, 5, 11, 12, 18, 19], False),
        (2.4, [8, 9, 10, 11, 12, 13], True),
    ],
)
def test_a_value_on_single_rows_between_others_is_no_run_and_one_repeated_is(
    tmp_path: Path, table, value: float, rows: list[int], frozen: bool
) -> None:
    """A day of hourly readings holding a value the reference never held (7.77) or held on 2.4% of its rows, on six
    rows: apart, no reading repeats, however small the batch (one row is a twenty-fourth of it); six hours in a row
    are a run; three runs of two hours are what a value at 2.4% of rows makes by chance (`frozen_run_chance`). A
    run limit of 2% of the rows makes each cross it unless one row alone is no run and a run's chance is weighed."""

    from readings_support import contract, week

    _, batches = table
    day = week(table, 9).iloc[:24].copy()
    day.loc[rows, "wind"] = value
    path = tmp_path / "day.parquet"
    day.to_parquet(path, index=False)
    ctx = GuardContext(
        READINGS,
        contract(),
        read_snapshot(path, time_column="time"),
        build_reference([b.batch for b in batches[:8]]),
        (),
        now_ms=0,
        policy=replace(DEFAULT, frozen_run_share=0.02),
    )
    named = [f for f in check_sentinels(ctx) if getattr(f, "kind", None) is FindingKind.SENTINEL]
    assert bool(named) is frozen and all(f.params["how"] == "frozen" for f in named), [f.message for f in named]
