"""guard/checks/timeshift.py: a clock moved by whole hours is named with its offset, pinned to the hour by counts or
by a relationship before it is healed, never read into a clean batch (three real datasets, every batch in order),
and the offsets it cannot pin are named but left for a person."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chaos.corpus.falsealarms import load_batches
from chaos.corpus.realdata import DATASETS
from chaos.corpus.tables import TABLES
from controlplane.stages.guarding import with_repeats_counted
from guard.checks.timeshift import check_timestamp_shift, count_shift
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding
from guard.kinds import FindingKind
from guard.runner import run_guard
from guard.statistics import signed
from profiles.profile import DatasetProfile
from profiles.reference import build_reference
from profiles.snapshot import Snapshot, read_snapshot
from tests.profiles.test_relations import hourly

URN = "urn:li:dataset:(urn:li:dataPlatform:file,test.clock,PROD)"
HOURLY = Contract(
    URN,
    (
        ColumnContract("time", "timestamp"),
        ColumnContract("label_time", "timestamp"),
        ColumnContract("hour_local", "integer"),
        ColumnContract("hour_utc", "integer"),
        ColumnContract("temp", "number"),
        ColumnContract("amount", "number"),
    ),
    label_column="temp",
    event_timestamp_column="time",
)


def with_utc_hour(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(hour_utc=frame["time"].dt.hour.astype(np.int64))


def snap(tmp_path: Path, frame: pd.DataFrame, name: str, time_column: str = "time") -> Snapshot:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path, index=False, row_group_size=500)
    return read_snapshot(path, time_column=time_column, batch_id=name)


def shifts(contract: Contract, batch: Snapshot, reference: object) -> list[Finding]:
    context = GuardContext(URN, contract, batch, reference, (), now_ms=0)  # type: ignore[arg-type]
    return [f for f in check_timestamp_shift(context) if isinstance(f, Finding)]


@pytest.fixture(scope="module")
def hourly_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[DatasetProfile, pd.DataFrame]:
    tmp = tmp_path_factory.mktemp("clock")
    frame = with_utc_hour(hourly(days=42, seed=3))
    weeks = [snap(tmp, frame.iloc[i * 168 : (i + 1) * 168], f"w{i}").batch for i in range(5)]
    return build_reference(weeks).profile, frame.iloc[5 * 168 :].reset_index(drop=True)


def moved(frame: pd.DataFrame, hours: int, *columns: str) -> pd.DataFrame:
    return frame.assign(**{c: frame[c] + pd.Timedelta(hours=hours) for c in columns})


def test_a_clean_batch_is_not_shifted(tmp_path: Path, hourly_reference) -> None:
    reference, batch = hourly_reference
    assert shifts(HOURLY, snap(tmp_path, batch, "clean"), reference) == []


def test_the_event_clock_moved_alone_is_pinned_by_the_utc_hour_column_and_healable(
    tmp_path: Path, hourly_reference
) -> None:
    reference, batch = hourly_reference
    found = shifts(HOURLY, snap(tmp_path, moved(batch, -5, "time", "label_time"), "tz"), reference)
    assert [(f.kind, f.column) for f in found] == [(FindingKind.TIMESTAMP_SHIFT, "time")]
    params = found[0].params
    assert params["offset_hours"] == -5 and params["shifts_hours"] == {"time": -5, "label_time": -5}
    assert params["hour_columns"] == {} and params["pinned"] and found[0].playbook == "shift_timestamps"
    assert params["observed_min_ms"]["time"] == int(moved(batch, -5, "time")["time"].min().value // 1_000_000)


def test_a_local_hour_column_pins_nothing_daylight_saving_may_have_moved_it(tmp_path: Path, hourly_reference) -> None:
    reference, batch = hourly_reference
    local_only = Contract(
        URN,
        tuple(c for c in HOURLY.columns if c.name != "hour_utc"),
        label_column="temp",
        event_timestamp_column="time",
    )
    found = shifts(
        local_only,
        snap(tmp_path, moved(batch, -5, "time").drop(columns="hour_utc"), "local"),
        _without(reference, "hour_utc"),
    )
    assert [(f.column, f.params["pinned"], f.playbook) for f in found] == [("time", False, None)]
    assert abs(found[0].params["offset_hours"] + 5) <= 1


def _without(reference: DatasetProfile, column: str) -> DatasetProfile:
    relations = reference.relations
    assert relations is not None
    kept = {t: {h: c for h, c in cols.items() if h != column} for t, cols in relations.hour_of.items()}
    return DatasetProfile(reference.row_count, reference.columns, replace(relations, hour_of=kept))


def test_a_second_clock_moved_alone_is_named_by_the_lag_it_follows(tmp_path: Path, hourly_reference) -> None:
    reference, batch = hourly_reference
    found = shifts(HOURLY, snap(tmp_path, moved(batch, 3, "label_time"), "label"), reference)
    assert [(f.column, f.params["shifts_hours"], f.playbook) for f in found] == [
        ("label_time", {"label_time": 3}, "shift_timestamps")
    ]


def test_everything_moved_together_is_named_but_only_within_an_hour(tmp_path: Path, hourly_reference) -> None:
    reference, batch = hourly_reference
    local = moved(batch, 7, "time", "label_time").assign(
        hour_local=(batch["hour_local"] + 7) % 24, hour_utc=(batch["hour_utc"] + 7) % 24
    )
    found = shifts(HOURLY, snap(tmp_path, local, "all"), reference)
    assert [(f.column, f.params["offset_hours"]) for f in found] == [("time", 7)]
    assert found[0].params["hour_columns"] == {"hour_local": 7, "hour_utc": 7} and not found[0].params["pinned"]
    assert found[0].playbook is None and "within an hour only" in found[0].message


@pytest.mark.parametrize("hours", [1, -1])
def test_one_hour_is_what_daylight_saving_does_and_is_not_named(tmp_path: Path, hourly_reference, hours: int) -> None:
    reference, batch = hourly_reference
    assert shifts(HOURLY, snap(tmp_path, moved(batch, hours, "time", "label_time"), "dst"), reference) == []


def test_twelve_hours_is_named_but_never_healed(tmp_path: Path, hourly_reference) -> None:
    reference, batch = hourly_reference
    found = shifts(HOURLY, snap(tmp_path, moved(batch, 12, "time", "label_time"), "twelve"), reference)
    assert [(f.column, abs(f.params["offset_hours"]), f.playbook) for f in found] == [("time", 12, None)]
    assert "modulo 24 h" in found[0].message


def test_a_reference_without_relations_cannot_say(tmp_path: Path, hourly_reference) -> None:
    reference, batch = hourly_reference
    bare = DatasetProfile(reference.row_count, reference.columns)  # as DataHub's datasetProfile keeps it
    assert shifts(HOURLY, snap(tmp_path, moved(batch, -5, "time"), "bare"), bare) == []


def test_daily_rows_moved_five_hours_land_at_a_new_hour_and_are_pinned() -> None:
    at_midnight = tuple([30] + [0] * 23)
    evidence = count_shift(at_midnight, tuple([0] * 19 + [31] + [0] * 4))
    assert evidence is not None and (evidence.offset, evidence.exact) == (-5, True)
    assert count_shift(at_midnight, at_midnight).offset == 0  # type: ignore[union-attr]
    assert count_shift(tuple([10] * 24), tuple([10] * 24)) is None  # flat hours cannot say
    assert [signed(k) for k in (0, 5, 12, 13, 19, 23)] == [0, 5, 12, -11, -5, -1]


def orders(weeks: int, seed: int = 0) -> pd.DataFrame:
    """Orders to the second over a business day (a few at 10:00, a lunch peak at 12:00, a dip, a dinner peak at
    18:00, closed from midnight), about 140 a day, each with its price: a broad day that looks much like itself an
    hour later, and nothing like itself five hours later."""
    rng = np.random.default_rng(seed)
    weights = np.zeros(24)
    weights[10:24] = [0.1, 4, 10, 9, 5, 4, 6, 8, 8, 6, 5, 3, 1.5, 0.2]
    days = pd.date_range("2024-01-01", periods=7 * weeks, freq="D", tz="UTC")
    per_day = rng.poisson(140, len(days))
    day = np.repeat(days.to_numpy(), per_day)
    hour = rng.choice(24, per_day.sum(), p=weights / weights.sum())
    second = rng.integers(0, 3600, per_day.sum())
    time = pd.DatetimeIndex(day) + pd.to_timedelta(hour, "h") + pd.to_timedelta(second, "s")
    frame = pd.DataFrame({"time": time.astype("datetime64[ms, UTC]"), "price": rng.gamma(8, 2.5, len(day)).round(2)})
    return frame.sort_values("time", kind="stable").reset_index(drop=True)


ORDERS = Contract(
    URN, (ColumnContract("time", "timestamp"), ColumnContract("price", "number")), event_timestamp_column="time"
)


@pytest.fixture(scope="module")
def orders_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, pd.DataFrame]:
    tmp = tmp_path_factory.mktemp("orders")
    frame = orders(weeks=5, seed=7)
    week = frame["time"].dt.tz_localize(None).dt.to_period("W-SUN")
    weeks = [rows for _, rows in frame.groupby(week)]
    kept = [snap(tmp, rows, f"w{i}").batch for i, rows in enumerate(weeks[:4])]
    return build_reference(kept), weeks[4].reset_index(drop=True)


def test_a_broad_business_day_moved_hours_is_read_from_its_rows_per_hour(tmp_path: Path, orders_reference) -> None:
    """The day's rows per hour look much like themselves an hour later, so no reading is pinned to the hour; but a
    move by 4 or 5 hours is plain, and is named on the clock, for a person or the kept batches to place."""
    reference, week = orders_reference
    for hours in (-5, 4):
        found = shifts(ORDERS, snap(tmp_path, moved(week, hours, "time"), f"moved{hours}"), reference)
        assert [(f.column, f.params["pinned"], f.playbook) for f in found] == [("time", False, None)]
        assert abs(found[0].params["offset_hours"] - hours) <= 1


@pytest.mark.parametrize("hours", [0, 1, -1])
def test_a_broad_business_day_not_moved_or_moved_an_hour_is_not_named(
    tmp_path: Path, orders_reference, hours: int
) -> None:
    reference, week = orders_reference
    assert shifts(ORDERS, snap(tmp_path, moved(week, hours, "time"), f"moved{hours}"), reference) == []


def test_a_count_reading_is_taken_against_the_shifts_it_could_be_confused_with() -> None:
    """A broad day unlike itself an hour later by less than the gain a reading needs: moved five hours it is read
    there, within an hour; not moved it is read as not moved (by 2 hours or more), within an hour. A day like itself
    at every shift (flat), or twelve hours later, says nothing it cannot tell."""
    day = (0,) * 10 + (3, 400, 990, 1020, 590, 450, 620, 830, 810, 640, 550, 400, 180, 10)
    early = count_shift(day, tuple(np.roll(day, -5)))
    assert early is not None and (early.offset, early.exact) == (-5, False)
    unmoved = count_shift(day, day)
    assert unmoved is not None and (unmoved.offset, unmoved.exact) == (0, False)
    assert count_shift(tuple([10] * 24), tuple(np.roll([10] * 24, 5))) is None
    twice = tuple([50] + [0] * 11 + [50] + [0] * 11)  # at 00:00 and 12:00: moved +5 or -7 reads alike
    assert count_shift(twice, tuple(np.roll(twice, 5))) is None
    assert count_shift(twice, twice) is None  # nor is it unmoved rather than moved 12 hours


# --- the real datasets: every clean batch in order, and the same batches shifted by five hours -----------


@pytest.mark.parametrize("name,pinned", [("seattle_weather", True), ("pnw_temps", False), ("greensboro_tmy", False)])
def test_real_data_clean_batches_never_read_as_shifted_and_five_hours_always_do(
    tmp_path: Path, name: str, pinned: bool
) -> None:
    dataset = DATASETS[name]
    contract = dataset.contract()
    batches = load_batches(dataset, tmp_path)
    k, time = dataset.reference_batches, dataset.time_column
    false, named = [], []
    for i in range(k, len(batches)):
        reference = build_reference([b.snapshot.batch for b in batches[i - k : i]])
        false += shifts(contract, batches[i].snapshot, reference)
        if i % 4 == 0:  # every fourth batch, five hours early, as local time UTC-5 written as UTC
            early = snap(tmp_path, moved(batches[i].frame, -5, time), f"early-{i}", time)
            named += [
                (f.column, f.params["offset_hours"], f.params["pinned"]) for f in shifts(contract, early, reference)
            ]
    assert false == []
    assert len(named) == sum(1 for i in range(k, len(batches)) if i % 4 == 0)  # every shifted batch is named...
    assert {(column, was_pinned) for column, _, was_pinned in named} == {(time, pinned)}
    if pinned:  # ...exactly where counts pin it; within the hour daylight saving or a season leaves otherwise
        assert {offset for _, offset, _ in named} == {-5}
    else:
        assert {offset for _, offset, _ in named} <= {-6, -5, -4}


def test_the_guard_names_the_shift_as_the_cause_and_keeps_the_future_label_as_evidence(
    tmp_path: Path, hourly_reference
) -> None:
    reference, batch = hourly_reference
    contract = Contract(
        URN,
        HOURLY.columns,
        label_column="temp",
        label_timestamp_column="label_time",
        event_timestamp_column="time",
        label_freshness_hours=48,
    )
    shifted = snap(tmp_path, moved(batch, 6, "time", "label_time"), "future")
    now_ms = int(batch["label_time"].max().value // 1_000_000)
    report = run_guard(with_repeats_counted(GuardContext(URN, contract, shifted, reference, (), now_ms=now_ms)))
    blocking = {(f.kind, f.column) for f in report.blocking}
    assert (FindingKind.TIMESTAMP_SHIFT, "time") in blocking
    future = [f for f in report.findings if f.kind is FindingKind.TIMESTAMP_UNPARSEABLE]
    assert future and all(f.params["explained_by"] == "timestamp_shift:time" for f in future)


@pytest.mark.parametrize("hours,named", [(1, False), (-1, False), (-5, True), (3, True)])
def test_daily_rows_are_named_from_two_hours_on(tmp_path: Path, hours: int, named: bool) -> None:
    days = pd.DataFrame(
        {
            "day": pd.date_range("2024-01-01", periods=120, freq="D", tz="UTC").astype("datetime64[ms, UTC]"),
            "rain": np.random.default_rng(0).exponential(2.0, 120).round(1),
        }
    )
    contract = Contract(
        URN, (ColumnContract("day", "timestamp"), ColumnContract("rain", "number")), event_timestamp_column="day"
    )
    reference = build_reference(
        [snap(tmp_path, days.iloc[i * 30 : (i + 1) * 30], f"m{i}", "day").batch for i in range(3)]
    )
    found = shifts(contract, snap(tmp_path, moved(days.iloc[90:], hours, "day"), "moved", "day"), reference)
    assert [(f.column, f.params["offset_hours"], f.playbook) for f in found] == (
        [("day", hours, "shift_timestamps")] if named else []
    )


def test_a_dozen_monthly_rows_moved_five_hours_are_named_on_the_clock_not_on_a_flag(tmp_path: Path) -> None:
    """Monthly rows stamped at midnight, with a 0/1 flag that switches on in the third year: the hour of the stamp
    never varies, so the flag (0 or 1, adjacent "hours") is no hour of it; twelve rows off midnight name the clock."""
    months = pd.DataFrame(
        {
            "month": pd.date_range("2001-01-01", periods=48, freq="MS", tz="UTC").astype("datetime64[ms, UTC]"),
            "flag": np.repeat([0, 0, 1, 1], 12).astype(np.int64),
            "count": np.random.default_rng(0).poisson(120, 48).astype(float),
        }
    )
    contract = Contract(
        URN,
        (ColumnContract("month", "timestamp"), ColumnContract("flag", "integer"), ColumnContract("count", "number")),
        event_timestamp_column="month",
    )
    years = [snap(tmp_path, months.iloc[i * 12 : (i + 1) * 12], f"y{i}", "month").batch for i in range(3)]
    found = shifts(
        contract, snap(tmp_path, moved(months.iloc[36:], -5, "month"), "moved", "month"), build_reference(years)
    )
    assert [(f.column, f.params["offset_hours"], f.playbook) for f in found] == [("month", -5, "shift_timestamps")]
    clean = snap(tmp_path, months.iloc[36:], "clean", "month")
    assert shifts(contract, clean, build_reference(years)) == []


@pytest.mark.parametrize("name", ["pnw_temps", "greensboro_tmy"])
def test_real_data_clean_days_of_hourly_data_are_never_read_as_shifted(tmp_path: Path, name: str) -> None:
    """A day of hourly rows holds one reading per hour, so its diurnal profile is noisier than a week's: on every
    clean day, against the weekly reference before it, no offset of 2 h or more beats the unshifted one by as
    much as `policy.shift_diurnal_gain` (the largest is 0.13, on Greensboro), and nothing is named."""
    from guard.checks.timeshift import diurnal_scores
    from guard.policy import DEFAULT as POLICY

    dataset = DATASETS[name]
    batches = load_batches(dataset, tmp_path)
    k, time = dataset.reference_batches, dataset.time_column
    gains, found = [], []
    for i in range(k, len(batches)):
        reference = build_reference([b.snapshot.batch for b in batches[i - k : i]])
        frame = batches[i].frame
        for _, rows in frame.groupby(frame[time].dt.floor("D")):
            batch = snap(tmp_path, rows, f"day-{i}", time)
            found += shifts(dataset.contract(), batch, reference)
            learned, seen = reference.profile.relations, batch.profile.relations
            assert learned is not None and seen is not None
            scored = diurnal_scores(learned.diurnal[time], seen.diurnal[time])
            if scored is not None:
                score = scored[0]
                gains.append(max(score[j] for j in range(24) if abs(signed(j)) >= 2) - score[0])
    assert found == [] and len(gains) > 300 and max(gains) < POLICY.shift_diurnal_gain - 0.05, max(gains)


@pytest.mark.parametrize(
    "name,hours",
    [
        ("pnw_temps", 3),
        ("pnw_temps", 4),
        ("pnw_temps", -3),
        ("pnw_temps", -4),
        ("greensboro_tmy", 3),
        ("greensboro_tmy", -3),
    ],
)
def test_real_data_three_or_four_hours_are_named_on_the_clock_that_moved(tmp_path: Path, name: str, hours: int) -> None:
    """Every fourth batch moved 3 or 4 hours is named on the time column, within an hour. On Greensboro the
    irradiance's diurnal pattern says it (`policy.shift_diurnal_gain`). On pnw the temperatures' broad pattern gains too little
    to say it alone in some weeks, and the local-hour column's relation moves by as many hours without saying which
    of the two moved; together they say it (`_corroborated`)."""
    dataset = DATASETS[name]
    contract = dataset.contract()
    batches = load_batches(dataset, tmp_path)
    k, time = dataset.reference_batches, dataset.time_column
    named = []
    for i in range(k, len(batches), 4):
        reference = build_reference([b.snapshot.batch for b in batches[i - k : i]])
        shifted = snap(tmp_path, moved(batches[i].frame, hours, time), f"moved-{i}", time)
        named.append([(f.column, f.params.get("offset_hours")) for f in shifts(contract, shifted, reference)])
    assert all(len(found) == 1 and found[0][0] == time and abs(found[0][1] - hours) <= 1 for found in named), named


def test_real_data_a_local_hour_column_moved_alone_is_not_laid_on_the_clock(tmp_path: Path) -> None:
    """The clock's own diurnal profile says it did not move, so the relation's move is the hour column's."""
    dataset = DATASETS["pnw_temps"]
    batches = load_batches(dataset, tmp_path)
    k = dataset.reference_batches
    reference = build_reference([b.snapshot.batch for b in batches[:k]])
    frame = batches[k].frame
    local = snap(tmp_path, frame.assign(hour_local=(frame["hour_local"] + 4) % 24), "local", dataset.time_column)
    found = shifts(dataset.contract(), local, reference)
    assert [(f.column, f.params["offset_hours"], f.params["shifts_hours"]) for f in found] == [("hour_local", 4, {})]


@pytest.mark.parametrize("name", sorted(n for n, t in TABLES.items() if t.cadence == "hourly"))
def test_corpus_tables_through_the_day_clean_batches_never_read_as_shifted_and_three_hours_and_more_do(
    tmp_path: Path, name: str
) -> None:
    """Every clean batch of the corpus's tables whose times fall through the day (orders over a business day, an
    hourly measurement), against every batch before it, is not named; moved 3 to 5 hours either way, every one is
    named on the clock, within an hour."""
    table = TABLES[name]
    pytest.importorskip(table.source.split()[0], reason="the corpus extra: pip install -e '.[corpus]'")
    batches = table.batches()
    kept = [snap(tmp_path, b.rows, f"kept-{i}", table.time_column).batch for i, b in enumerate(batches)]
    types = kept[0].profile.columns  # type: ignore[union-attr]
    contract = Contract(
        URN,
        tuple(ColumnContract(c, types[c].logical_type) for c in table.columns),
        event_timestamp_column=table.time_column,
    )
    false, missed = [], []
    for i in range(table.init_batches, len(batches)):
        reference = build_reference(kept[:i])  # type: ignore[arg-type]
        rows = batches[i].rows
        false += shifts(contract, snap(tmp_path, rows, f"clean-{i}", table.time_column), reference)
        for hours in (-5, -4, -3, 3, 4, 5):
            found = shifts(
                contract, snap(tmp_path, moved(rows, hours, table.time_column), f"m{i}", table.time_column), reference
            )
            if [f.column for f in found] != [table.time_column] or abs(found[0].params["offset_hours"] - hours) > 1:
                missed.append((i, hours, [(f.column, f.params.get("offset_hours")) for f in found]))
    assert false == [] and missed == [], (false, missed)
