"""guard/checks/duplicates.py: duplicate keys counted exactly (or sampled by key above a size), compound keys, keyless
whole rows, keys repeated across batches, and the row hash behind them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from controlplane.stages.guarding import with_repeats_counted
from guard.checks.duplicates import check_duplicates, repeats_asked
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding
from guard.kinds import FindingKind, Severity
from guard.runner import run_guard
from profiles.hashing import hash_rows
from profiles.profile import DatasetProfile
from profiles.reference import build_reference
from profiles.repeats import count_duplicate_keys
from profiles.snapshot import SnapshotError, read_snapshot
from tests.profiles.batches_support import contract, month_window, table, write

import deliveries_support
from deliveries_support import URN, context, eta_frame, findings, kinds_and_columns, snapshot_of
from real_cases import RealCase, blocking_on


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> DatasetProfile:
    return deliveries_support.reference(tmp_path_factory)


def test_a_keyless_week_loaded_twice_is_whole_rows_repeated(tmp_path: Path, hourly_week: RealCase) -> None:
    """With no key declared (the dataset's spec keys the hour), every week that passed still held one row per hour:
    the same hours again, identical in every column, are a double load. One hour read twice, differently, is not."""
    week, contract = hourly_week.frame, hourly_week.dataset.contract()
    keyless = replace(contract, columns=tuple(replace(c, primary_key=False) for c in contract.columns))
    twice = blocking_on(tmp_path, hourly_week, pd.concat([week, week]), keyless)
    assert (FindingKind.DUPLICATE_KEYS, "time") in twice
    again = week.head(2).assign(temp_air=week["temp_air"].head(2) + 0.5)
    assert (FindingKind.DUPLICATE_KEYS, "time") not in blocking_on(
        tmp_path, hourly_week, pd.concat([week, again]), keyless
    )


def with_repeats(frame: pd.DataFrame, repeated: int) -> pd.DataFrame:
    """A duplicated load: the first `repeated` rows appended again at the end."""
    return pd.concat([frame, frame.head(repeated)], ignore_index=True)


def test_duplicates_passes_unique_keys(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_duplicates, context(snapshot_of(tmp_path, eta_frame(1)), reference)) == []


def test_duplicates_counts_a_duplicated_load_exactly(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = with_repeats(eta_frame(1), 400)  # 5% of the rows loaded twice, in a later row group
    found = findings(check_duplicates, context(snapshot_of(tmp_path, frame, row_group_size=1_000), reference))
    assert kinds_and_columns(found) == [(FindingKind.DUPLICATE_KEYS, "order_id")]
    finding = found[0]
    assert finding.playbook == "dedupe_keys" and finding.severity is Severity.BLOCK
    assert finding.params["duplicate_rows"] == 400 and finding.params["rows_compared"] == 8_400
    assert finding.params["key_columns"] == ["order_id"] and finding.params["exact"] is True
    assert finding.observed == round(400 / 8_400, 6) and finding.expected == 0.001


def test_duplicates_limit_is_a_tenth_of_a_percent(tmp_path: Path, reference: DatasetProfile) -> None:
    below = snapshot_of(tmp_path, with_repeats(eta_frame(1), 8), "below")  # 0.0999%
    above = snapshot_of(tmp_path, with_repeats(eta_frame(1), 9), "above")  # 0.112%
    assert findings(check_duplicates, context(below, reference)) == []
    assert kinds_and_columns(findings(check_duplicates, context(above, reference))) == [
        (FindingKind.DUPLICATE_KEYS, "order_id")
    ]


def test_duplicates_compound_key_needs_every_part_to_repeat(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = pd.DataFrame({"day": np.repeat(np.arange(100), 50), "n": np.tile(np.arange(50), 100), "v": 1.0})
    contract = Contract(
        URN,
        (
            ColumnContract("day", "integer", primary_key=True),
            ColumnContract("n", "integer", primary_key=True),
            ColumnContract("v", "number"),
        ),
    )
    clean = snapshot_of(tmp_path, frame, "clean", row_group_size=700)
    assert findings(check_duplicates, context(clean, reference, contract)) == []
    doubled = snapshot_of(tmp_path, with_repeats(frame, 50), "doubled", row_group_size=700)
    found = findings(check_duplicates, context(doubled, reference, contract))
    assert kinds_and_columns(found) == [(FindingKind.DUPLICATE_KEYS, None)]
    assert found[0].params["key_columns"] == ["day", "n"] and found[0].params["duplicate_rows"] == 50


def test_no_key_whole_rows_repeated_are_judged_only_where_every_column_hashes(tmp_path: Path) -> None:
    """A keyless table of one row per hour: a batch loaded twice is named on its time; with a list column, whole
    rows cannot be hashed, so they are not judged (never a check error that blocks every clean batch)."""
    hours = pd.date_range("2024-01-01", periods=96, freq="h", tz="UTC")
    frame = pd.DataFrame({"time": hours, "x": np.arange(96.0), "tags": [["a", "b"]] * 96})
    contract = Contract(
        URN, (ColumnContract("time", "timestamp"), ColumnContract("x", "number")), event_timestamp_column="time"
    )
    for columns, named in ((["time", "x"], True), (["time", "x", "tags"], False)):
        frame[columns].iloc[:48].to_parquet(tmp_path / "kept.parquet", index=False)
        pd.concat([frame[columns].iloc[48:]] * 2).to_parquet(tmp_path / "twice.parquet", index=False)
        kept = read_snapshot(tmp_path / "kept.parquet", time_column="time", batch_id="kept").batch
        assert kept is not None
        twice = read_snapshot(tmp_path / "twice.parquet", time_column="time", batch_id="twice")
        found = findings(
            check_duplicates,
            with_repeats_counted(GuardContext(URN, contract, twice, build_reference([kept]), (), now_ms=0)),
        )
        assert kinds_and_columns(found) == ([(FindingKind.DUPLICATE_KEYS, "time")] if named else []), columns


def test_duplicates_edges_empty_null_keys_and_a_changed_file(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_duplicates, context(snapshot_of(tmp_path, eta_frame(1).head(0), "empty"), reference)) == []
    nulls = eta_frame(1).assign(order_id=None)  # null keys are the nulls check's business, not repeats
    assert findings(check_duplicates, context(snapshot_of(tmp_path, nulls, "nulls"), reference)) == []
    snapshot = snapshot_of(tmp_path, eta_frame(1), "moving")
    eta_frame(2, rows=100).to_parquet(snapshot.path)  # replaced after it was profiled
    with pytest.raises(SnapshotError, match="changed after it was read"):
        findings(check_duplicates, context(snapshot, reference))
    report = run_guard(context(snapshot, reference))
    assert FindingKind.CHECK_ERROR in {f.kind for f in report.blocking}  # fail closed, never a pass


def test_duplicates_above_the_exact_limit_samples_by_key(tmp_path: Path) -> None:
    frame = with_repeats(eta_frame(1, rows=20_000), 1_000)
    path = tmp_path / "big.parquet"
    frame.to_parquet(path, row_group_size=4_000)
    exact = count_duplicate_keys(str(path), ["order_id"])
    sampled = count_duplicate_keys(str(path), ["order_id"], exact_rows=5_000)
    assert exact.exact and exact.duplicate_rows == 1_000
    assert not sampled.exact and 3_000 < sampled.rows_compared < 7_000
    assert abs(sampled.rate - exact.rate) < 4 * np.sqrt(exact.rate / sampled.rows_compared)


def test_hash_rows_equal_values_equal_hashes_whatever_the_encoding() -> None:
    words = ["", "a", "abcdefgh", "abcdefgh\0", "abcdefghi", "abcdefgh", "é" * 9, None]
    plain = hash_rows(pa.table({"k": pa.array(words)}))
    assert plain[2] == plain[5] and len(set(plain[:5])) == 5
    assert (hash_rows(pa.table({"k": pa.array(words).dictionary_encode()}))[:7] == plain[:7]).all()
    assert (hash_rows(pa.table({"k": pa.array(words, pa.large_string())})) == plain).all()
    assert (hash_rows(pa.table({"k": pa.array(words).slice(2)})) == plain[2:]).all()
    zeros = hash_rows(pa.table({"k": pa.array([0.0, -0.0, 1.0])}))
    assert zeros[0] == zeros[1] != zeros[2]
    pairs = hash_rows(pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"]}))
    assert len(set(pairs)) == 3


def test_duplicate_keys_across_batches_need_the_table(tmp_path: Path) -> None:
    frame = table()
    march = frame[frame.ts >= pd.Timestamp("2024-03-01", tz="UTC")]
    replayed = march.copy()
    replayed.loc[replayed.index[:200], "id"] = frame["id"].iloc[:200].to_numpy()  # January's keys again
    table_path = write(tmp_path, frame[frame.ts < pd.Timestamp("2024-03-01", tz="UTC")], "history")
    batch = read_snapshot(write(tmp_path, replayed, "march"))
    alone = with_repeats_counted(GuardContext(URN, contract(), batch, None, (), now_ms=0))
    assert [f for f in check_duplicates(alone) if isinstance(f, Finding)] == []  # unique inside the batch
    found = [
        f
        for f in check_duplicates(
            with_repeats_counted(
                GuardContext(URN, contract(), batch, None, (), now_ms=0, table_paths=(str(table_path),))
            )
        )
        if isinstance(f, Finding)
    ]
    assert [f.kind for f in found] == [FindingKind.DUPLICATE_KEYS] and found[0].params["across_rows"] == 200
    whole = write(tmp_path, pd.concat([frame[frame.ts < pd.Timestamp("2024-03-01", tz="UTC")], replayed]), "whole")
    count = count_duplicate_keys(
        [str(whole)], ["id"], window=month_window("2024-03"), history=[str(whole)]
    )  # the batch inside the table file: history is the rest
    assert (count.duplicate_rows, count.across_rows, count.rows_compared) == (200, 200, len(replayed))


def test_duplicates_without_counts_handed_in_fail_closed(tmp_path: Path, reference: DatasetProfile) -> None:
    """The check reads no file: a declared key with no repeats counted, or counts made for another snapshot, is a
    blocking check error that names the fix, never a pass."""
    snapshot = snapshot_of(tmp_path, with_repeats(eta_frame(1), 400), "doubled")
    bare = GuardContext(URN, deliveries_support.eta_contract(), snapshot, reference, (), now_ms=0)
    with pytest.raises(SnapshotError, match="none were counted: count them with profiles.repeats.count_repeats"):
        findings(check_duplicates, bare)
    report = run_guard(bare)
    assert [f.check for f in report.blocking if f.kind is FindingKind.CHECK_ERROR] == ["duplicates"]
    other = context(snapshot_of(tmp_path, eta_frame(1), "other"), reference)
    with pytest.raises(SnapshotError, match="counted for another snapshot"):
        findings(check_duplicates, replace(bare, repeats=other.repeats))


def test_whole_rows_are_asked_for_only_where_the_reference_holds_one_row_per_instant(tmp_path: Path) -> None:
    hours = pd.date_range("2024-01-01", periods=96, freq="h", tz="UTC")
    contract = Contract(
        URN, (ColumnContract("time", "timestamp"), ColumnContract("x", "number")), event_timestamp_column="time"
    )
    one = pd.DataFrame({"time": hours, "x": np.arange(96.0)})
    many = pd.DataFrame({"time": hours.repeat(4)[:96], "x": np.arange(96.0)})  # four rows an instant
    asked = {}
    for name, frame in (("one", one), ("many", many)):
        frame.iloc[:48].to_parquet(tmp_path / f"{name}-kept.parquet", index=False)
        frame.iloc[48:].to_parquet(tmp_path / f"{name}-batch.parquet", index=False)
        kept = read_snapshot(tmp_path / f"{name}-kept.parquet", time_column="time", batch_id="kept").batch
        assert kept is not None
        batch = read_snapshot(tmp_path / f"{name}-batch.parquet", time_column="time", batch_id="batch")
        asked[name] = repeats_asked(GuardContext(URN, contract, batch, build_reference([kept]), (), now_ms=0))
    assert asked["one"] is not None and asked["one"].whole_rows and asked["one"].columns == ("time", "x")
    assert asked["many"] is None  # repeated instants are the data's nature: whole rows are not counted


def test_one_row_loaded_twice_in_a_batch_of_a_dozen_keyless_rows_is_named_on_the_time(tmp_path: Path) -> None:
    """The smallest double load: one row of a batch of 12 monthly rows (1 in 13, far above the limit), where every
    kept batch held 12 rows of one month each; the same batch loaded once is not named."""
    months = pd.date_range("2001-01-01", periods=60, freq="MS", tz="UTC")
    frame = pd.DataFrame({"date": months, "price": np.random.default_rng(0).lognormal(3.0, 0.2, 60)})
    contract = Contract(
        URN, (ColumnContract("date", "timestamp"), ColumnContract("price", "number")), event_timestamp_column="date"
    )
    kept = []
    for year in range(4):
        frame.iloc[12 * year : 12 * (year + 1)].to_parquet(tmp_path / f"kept-{year}.parquet", index=False)
        batch = read_snapshot(tmp_path / f"kept-{year}.parquet", time_column="date", batch_id=f"kept-{year}").batch
        assert batch is not None
        kept.append(batch)
    newest = frame.iloc[48:]
    found = {}
    for name, rows in (("clean", newest), ("twice", with_repeats(newest, 1))):
        rows.to_parquet(tmp_path / f"{name}.parquet", index=False)
        snapshot = read_snapshot(tmp_path / f"{name}.parquet", time_column="date", batch_id=name)
        ctx = with_repeats_counted(GuardContext(URN, contract, snapshot, build_reference(kept), (), now_ms=0))
        found[name] = findings(check_duplicates, ctx)
    assert found["clean"] == []
    assert kinds_and_columns(found["twice"]) == [(FindingKind.DUPLICATE_KEYS, "date")]
    assert found["twice"][0].params["duplicate_rows"] == 1 and found["twice"][0].params["rows_compared"] == 13
