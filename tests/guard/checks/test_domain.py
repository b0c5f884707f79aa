"""guard/checks/domain.py: values against the contract's range and categories (or the reference's), casing mapped,
impossible values blocked and new extremes warned."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guard.checks.domain import check_domain
from guard.checks.drift import check_drift
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding, Verdict
from guard.kinds import FindingKind, Severity
from guard.kinds import FindingKind as K
from profiles.profile import DatasetProfile
from profiles.reference import build_reference
from profiles.snapshot import read_snapshot

import deliveries_support
from deliveries_support import context, eta_contract, eta_frame, findings, kinds_and_columns, snapshot_of
from readings_support import blocking, judge, week


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> DatasetProfile:
    return deliveries_support.reference(tmp_path_factory)


def test_domain_passes_values_inside_the_contract(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_domain, context(snapshot_of(tmp_path, eta_frame(1)), reference)) == []


def test_domain_reports_a_value_beyond_the_maximum(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = eta_frame(1)
    frame.loc[:19, "distance_km"] = 80.0
    found = findings(check_domain, context(snapshot_of(tmp_path, frame), reference))
    assert kinds_and_columns(found) == [(FindingKind.OUT_OF_RANGE, "distance_km")]
    assert found[0].observed["maximum"] == 80.0 and found[0].expected == {"minimum": 0, "maximum": 50}
    assert found[0].playbook is None and found[0].params["sample_rows_outside"] == 20


def test_domain_maps_miscased_categories_and_blocks_new_ones(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = eta_frame(1)
    frame.loc[:99, "vehicle_type"] = "Bike"
    frame.loc[100:109, "vehicle_type"] = " car "
    frame.loc[110:114, "vehicle_type"] = "drone"
    found = findings(check_domain, context(snapshot_of(tmp_path, frame), reference))
    assert kinds_and_columns(found) == [
        (FindingKind.CATEGORY_CASING, "vehicle_type"),
        (FindingKind.NEW_CATEGORY, "vehicle_type"),
    ]
    casing, new = found
    assert casing.playbook == "category_casing" and casing.params["mapping"] == {"Bike": "bike", " car ": "car"}
    assert casing.observed == {" car ": 10, "Bike": 100} and casing.params["rows_affected"] == 110
    assert new.playbook is None and new.severity is Severity.BLOCK and new.observed == {"drone": 5}


def test_domain_without_allowed_values_judges_against_the_reference(tmp_path: Path, reference: DatasetProfile) -> None:
    contract = eta_contract(vehicle_type=ColumnContract("vehicle_type", "string"))
    frame = eta_frame(1)
    frame.loc[:9, "vehicle_type"] = "SCOOTER"
    frame.loc[10:19, "vehicle_type"] = "drone"
    found = findings(check_domain, context(snapshot_of(tmp_path, frame), reference, contract))
    assert kinds_and_columns(found) == [
        (FindingKind.CATEGORY_CASING, "vehicle_type"),
        (FindingKind.NEW_CATEGORY, "vehicle_type"),
    ]
    assert found[0].params["mapping"] == {"SCOOTER": "scooter"} and found[0].params["source"] == "reference"
    assert found[1].severity is Severity.WARN  # the reference records history, not law


@pytest.mark.parametrize("slip", ["scotoer", "sc0oter", "bkie"])  # two letters swapped, leetspeak, a short word
def test_a_known_value_written_wrong_blocks_and_names_the_value_it_resembles(
    tmp_path: Path, reference: DatasetProfile, slip: str
) -> None:
    contract = eta_contract(vehicle_type=ColumnContract("vehicle_type", "string"))
    frame = eta_frame(1)
    frame.loc[:9, "vehicle_type"] = slip
    frame.loc[10:19, "vehicle_type"] = "drone"
    (found,) = findings(check_domain, context(snapshot_of(tmp_path, frame), reference, contract))
    assert (found.kind, found.column, found.severity) == (FindingKind.NEW_CATEGORY, "vehicle_type", Severity.BLOCK)
    assert found.params["resembles"] == {slip: "scooter" if slip != "bkie" else "bike"}
    assert "written wrong" in found.message


def test_domain_edges_all_null_empty_and_no_reference_column(tmp_path: Path, reference: DatasetProfile) -> None:
    nulls = eta_frame(1).assign(distance_km=np.nan, vehicle_type=None)
    assert findings(check_domain, context(snapshot_of(tmp_path, nulls, "nulls"), reference)) == []
    empty = snapshot_of(tmp_path, eta_frame(1).head(0), "empty")
    assert findings(check_domain, context(empty, reference)) == []
    free = eta_contract(vehicle_type=ColumnContract("vehicle_type", "string"))
    no_reference = DatasetProfile(
        reference.row_count, {k: v for k, v in reference.columns.items() if k != "vehicle_type"}
    )
    odd = eta_frame(1).assign(vehicle_type="hovercraft")
    assert findings(check_domain, context(snapshot_of(tmp_path, odd, "odd"), no_reference, free)) == []
    many = eta_frame(1).assign(vehicle_type=[f"v{i % 300}" for i in range(8_000)])  # too many to count
    found = findings(check_domain, context(snapshot_of(tmp_path, many, "many"), reference))
    assert kinds_and_columns(found) == [(FindingKind.NEW_CATEGORY, "vehicle_type")]


def test_domain_never_treats_keys_or_identifiers_as_categories(tmp_path: Path) -> None:
    small = eta_frame(0, rows=150)  # few enough ids to be counted in the profile
    reference = snapshot_of(tmp_path, small, "reference").profile
    contract = eta_contract(order_id=ColumnContract("order_id", "string"))  # not even marked as the key
    later = eta_frame(1, rows=150)
    assert findings(check_domain, context(snapshot_of(tmp_path, later, "later"), reference, contract)) == []


def test_impossible_values_block_and_new_extremes_only_warn(tmp_path, table):
    batch = week(table, 9)
    cold = batch.assign(temp=batch.temp.where(batch.index != 5, -300.0))  # below absolute zero
    assert (K.OUT_OF_RANGE.value, "temp") in blocking(judge(tmp_path, table, cold))
    negative = batch.assign(rain=batch.rain.where(batch.index != 5, -1.0))
    assert (K.OUT_OF_RANGE.value, "rain") in blocking(judge(tmp_path, table, negative))
    soaked = batch.assign(humidity=batch.humidity.where(batch.index != 5, 120.0))
    assert (K.OUT_OF_RANGE.value, "humidity") in blocking(judge(tmp_path, table, soaked))
    storm = batch.assign(wind=batch.wind.where(batch.index != 5, batch.wind.max() * 3))
    report = judge(tmp_path, table, storm)
    assert report.verdict is Verdict.CLEAN
    assert [(f.kind, f.severity) for f in report.findings if f.column == "wind"] == [(K.OUT_OF_RANGE, Severity.WARN)]


def test_the_periods_name_is_new_in_every_batch_and_is_no_new_category(tmp_path: Path) -> None:
    """Monthly batches of daily rows, each naming its month: every batch brings a month the reference never saw,
    by construction. A second value in one batch is a new category again."""
    urn = "urn:li:dataset:(urn:li:dataPlatform:file,periods,PROD)"
    days = pd.DataFrame({"day": pd.date_range("2024-01-01", periods=121, freq="D", tz="UTC")}).assign(
        day=lambda f: f["day"].astype("datetime64[ms, UTC]"),
        month=lambda f: f["day"].dt.strftime("%b"),
        count=np.random.default_rng(0).poisson(40, 121).astype(float),
    )
    contract = Contract(
        urn,
        (ColumnContract("day", "timestamp"), ColumnContract("month", "string"), ColumnContract("count", "number")),
        event_timestamp_column="day",
    )

    def snap(frame: pd.DataFrame, name: str):
        path = tmp_path / f"{name}.parquet"
        frame.to_parquet(path, index=False)
        return read_snapshot(path, time_column="day", batch_id=name)

    by_month = [days[days["day"].dt.month == m] for m in (1, 2, 3, 4)]
    reference = build_reference([snap(f, f"m{i}").batch for i, f in enumerate(by_month[:3])])

    def said(frame: pd.DataFrame, name: str) -> set:
        ctx = GuardContext(urn, contract, snap(frame, name), reference, (), now_ms=0)
        found = [f for check in (check_domain, check_drift) for f in check(ctx)]
        return {(f.kind, f.column) for f in found if isinstance(f, Finding)}

    assert said(by_month[3], "april") == set()
    mixed = by_month[3].assign(month=lambda f: f["month"].where(f.index % 2 == 0, "Sept"))
    assert (K.NEW_CATEGORY, "month") in said(mixed, "mixed")


def test_the_periods_name_in_batches_cut_finer_than_its_period_is_no_new_category(tmp_path: Path) -> None:
    """Daily rows kept in ten-day batches, each naming its month: a batch holds one or two months' names, so no
    batch held one value, but the rows show the name constant within each month. A new month's batch brings a new
    name: no new category, no drift of its mix. A category that changes within a day is no period's name."""
    urn = "urn:li:dataset:(urn:li:dataPlatform:file,periods,PROD)"
    rng = np.random.default_rng(1)
    days = pd.DataFrame({"day": pd.date_range("2024-01-01", periods=152, freq="12h", tz="UTC")}).assign(
        day=lambda f: f["day"].astype("datetime64[ms, UTC]"),
        month=lambda f: f["day"].dt.strftime("%b"),
        shift=lambda f: np.where(f["day"].dt.hour == 0, "night", "day"),
        count=rng.poisson(40, 152).astype(float),
    )
    contract = Contract(
        urn,
        (
            ColumnContract("day", "timestamp"),
            ColumnContract("month", "string"),
            ColumnContract("shift", "string"),
            ColumnContract("count", "number"),
        ),
        event_timestamp_column="day",
    )

    def snap(frame: pd.DataFrame, name: str):
        path = tmp_path / f"{name}.parquet"
        frame.to_parquet(path, index=False)
        return read_snapshot(path, time_column="day", batch_id=name)

    kept = days[days["day"] < pd.Timestamp("2024-03-01", tz="UTC")]
    stretches = [kept.iloc[i : i + 20] for i in range(0, len(kept), 20)]
    reference = build_reference([snap(f, f"d{i}").batch for i, f in enumerate(stretches)])
    assert not all(f["month"].nunique() == 1 for f in stretches)

    def said(frame: pd.DataFrame, name: str) -> set:
        ctx = GuardContext(urn, contract, snap(frame, name), reference, (), now_ms=0)
        found = [f for check in (check_domain, check_drift) for f in check(ctx)]
        return {(f.kind, f.column) for f in found if isinstance(f, Finding)}

    march = days[days["day"].dt.month == 3]
    assert {c for _, c in said(march, "march")} & {"month"} == set()
    relabelled = march.assign(shift="evening")
    assert (K.NEW_CATEGORY, "shift") in said(relabelled, "evening")


def test_a_level_on_a_trend_carries_its_extremes_and_is_no_new_extreme(tmp_path: Path) -> None:
    """Weekly batches of a quantity rising 10 a week: the newest week's maximum is past every kept week's by more than
    the margin, but so is its median; judged against the range moved by the level, nothing is new. A value far
    past the rest of its own batch still is."""
    urn = "urn:li:dataset:(urn:li:dataPlatform:file,trend,PROD)"
    contract = Contract(
        urn, (ColumnContract("ts", "timestamp"), ColumnContract("level", "number")), event_timestamp_column="ts"
    )
    rng = np.random.default_rng(2)

    def week_of(index: int) -> pd.DataFrame:
        times = pd.date_range("2024-01-01", periods=7 * 24, freq="h", tz="UTC") + pd.Timedelta(weeks=index)
        level = 10.0 * index + rng.uniform(-5, 5, len(times))
        return pd.DataFrame({"ts": times.astype("datetime64[ms, UTC]"), "level": level.round(2)})

    def snap(frame: pd.DataFrame, name: str):
        path = tmp_path / f"{name}.parquet"
        frame.to_parquet(path, index=False)
        return read_snapshot(path, time_column="ts", batch_id=name)

    reference = build_reference([snap(week_of(i), f"w{i}").batch for i in range(4)])

    def ranges(frame: pd.DataFrame, name: str) -> list:
        ctx = GuardContext(urn, contract, snap(frame, name), reference, (), now_ms=0)
        return [f for f in check_domain(ctx) if isinstance(f, Finding) and f.kind is K.OUT_OF_RANGE]

    newest = week_of(5)
    assert newest["level"].max() > 35 + 0.25 * 40 and ranges(newest, "w5") == []
    storm = newest.assign(level=newest["level"].where(newest.index != 7, 400.0))
    assert [(f.column, f.severity) for f in ranges(storm, "storm")] == [("level", Severity.WARN)]


def _daily_kinds(tmp_path: Path, days: int, kinds_of_day) -> tuple[Contract, list]:
    """Daily batches of 50 rows, each row's `kind` drawn by `kinds_of_day(day, rng)`."""
    urn = "urn:li:dataset:(urn:li:dataPlatform:file,kinds,PROD)"
    rng = np.random.default_rng(3)
    frames = []
    for day in range(days):
        frames.append(
            pd.DataFrame(
                {
                    "at": pd.Timestamp("2024-01-01", tz="UTC")
                    + pd.Timedelta(days=day)
                    + pd.to_timedelta(np.arange(50) * 20, unit="m"),
                    "kind": kinds_of_day(day, rng),
                    "amount": rng.gamma(2.0, 10.0, 50).round(2),
                }
            ).assign(at=lambda f: f["at"].astype("datetime64[ms, UTC]"))
        )
    contract = Contract(
        urn,
        (ColumnContract("at", "timestamp"), ColumnContract("kind", "string"), ColumnContract("amount", "number")),
        event_timestamp_column="at",
    )
    snaps = []
    for day, frame in enumerate(frames):
        path = tmp_path / f"d{day}.parquet"
        frame.to_parquet(path, index=False)
        snaps.append(read_snapshot(path, time_column="at", batch_id=f"d{day}"))
    return contract, snaps


def _new_kind(contract: Contract, snaps: list, tmp_path: Path) -> Finding:
    reference = build_reference([s.batch for s in snaps[:-1]])
    newest = snaps[-1]
    (found,) = [
        f
        for f in check_domain(GuardContext(contract.dataset_urn, contract, newest, reference, (), now_ms=0))
        if f.kind is K.NEW_CATEGORY
    ]
    return found


def test_a_new_value_on_a_tenth_of_rows_of_a_set_no_batch_ever_grew_blocks(tmp_path: Path) -> None:
    """Ten days of the same three kinds: the set is closed, and five rows of a new one in fifty are no chance."""

    def kinds(day: int, rng: np.random.Generator) -> np.ndarray:
        drawn = rng.choice(["walk-in", "phone", "online"], 50)
        if day == 10:
            drawn[:5] = "kiosk"  # resembles no known value
        return drawn

    contract, snaps = _daily_kinds(tmp_path, 11, kinds)
    found = _new_kind(contract, snaps, tmp_path)
    assert found.severity is Severity.BLOCK and found.params["closed_set"], found.message
    assert "a closed set" in found.message


def test_a_new_value_in_a_set_that_gains_values_now_and_then_only_warns(tmp_path: Path) -> None:
    """Every few days brings a value never seen before, as new routes do: the set is open."""

    def kinds(day: int, rng: np.random.Generator) -> np.ndarray:
        drawn = rng.choice(["walk-in", "phone", "online"], 50)
        if day % 3 == 2 or day == 10:
            drawn[:5] = f"route {day}"
        return drawn

    contract, snaps = _daily_kinds(tmp_path, 11, kinds)
    found = _new_kind(contract, snaps, tmp_path)
    assert found.severity is Severity.WARN and not found.params["closed_set"], found.message


def test_the_reference_counts_the_values_each_batch_brought_that_none_before_held(tmp_path: Path) -> None:
    def kinds(day: int, rng: np.random.Generator) -> np.ndarray:
        drawn = np.array(["a"] * 50, dtype=object)
        if day == 2:
            drawn[:10] = "b"
        return drawn

    _, snaps = _daily_kinds(tmp_path, 4, kinds)
    reference = build_reference([s.batch for s in snaps])
    assert [s.unseen_share for s in reference.variation("kind")] == [None, 0.0, 0.2, 0.0]
    assert reference.unseen_values("kind") == (10, 150)
