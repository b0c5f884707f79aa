"""The batch data model: sketches, windowed snapshots, mergeable profiles, references, batches.

Real parquet files written here, read with the guard's own readers; DataSketches (the real library)
reads the quantile sketches the guard writes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from guard.checks.duplicates import check_duplicates, count_duplicate_keys
from guard.checks.volume import check_volume
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Verdict
from guard.kinds import FindingKind
from guard.runner import run_guard
from profiles.batches import infer_cadence, split_batches
from profiles.profile import BatchProfile, DatasetProfile, TimeWindow
from profiles.reference import Reference, build_reference
from profiles.sketches import KLL_RANK_ERROR, DistinctSketch, QuantileSketch
from profiles.snapshot import SnapshotError, read_snapshot

URN = "urn:li:dataset:(urn:li:dataPlatform:file,test.batches,PROD)"
DAY_MS = 86_400_000


def table(rows: int = 9_000, seed: int = 0, start: str = "2024-01-01") -> pd.DataFrame:
    """Three months of hourly-ish rows: a key, a time, a zero-inflated amount, a category, a count."""
    rng = np.random.default_rng(seed)
    span = pd.Timestamp("2024-04-01", tz="UTC") - pd.Timestamp(start, tz="UTC")
    times = pd.Timestamp(start, tz="UTC") + pd.to_timedelta(np.sort(rng.uniform(0, span.total_seconds(), rows)), "s")
    return pd.DataFrame(
        {
            "id": [f"r-{seed}-{i:06d}" for i in range(rows)],
            "ts": times.astype("datetime64[ms, UTC]"),
            "rain": np.where(rng.random(rows) < 0.8, 0.0, rng.exponential(3.0, rows)).round(2),
            "temp": rng.normal(12, 6, rows).round(1),
            "kind": rng.choice(["a", "b", "c"], rows),
            "load": rng.poisson(2, rows),
        }
    )


def write(tmp_path: Path, frame: pd.DataFrame, name: str, row_group: int = 1_000) -> Path:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path, index=False, row_group_size=row_group)
    return path


def month_window(month: str) -> TimeWindow:
    start = pd.Timestamp(month, tz="UTC")
    end = start + pd.offsets.MonthBegin(1)
    return TimeWindow("ts", int(start.value // 1_000_000) - 1, int(end.value // 1_000_000) - 1)


def contract() -> Contract:
    return Contract(
        URN,
        (
            ColumnContract("id", "string", primary_key=True),
            ColumnContract("ts", "timestamp"),
            ColumnContract("rain", "number", unit="mm", minimum=0),
            ColumnContract("temp", "number", unit="C"),
            ColumnContract("kind", "string"),
            ColumnContract("load", "integer", minimum=0),
        ),
        event_timestamp_column="ts",
    )


# --- sketches -------------------------------------------------------------------------------------


def test_quantile_sketch_is_datasketches_kll_and_deterministic() -> None:
    datasketches = pytest.importorskip("datasketches")
    values = np.random.default_rng(1).lognormal(size=300_000)
    first, second = QuantileSketch(), QuantileSketch()
    for sketch in (first, second):
        for part in np.array_split(values, 3):
            sketch.update(part)
    assert first.to_bytes() == second.to_bytes()  # the library itself draws its coins from the clock
    theirs = datasketches.kll_doubles_sketch.deserialize(first.to_bytes())
    ranks = np.linspace(0.01, 0.99, 25)
    assert [first.quantile(q) for q in ranks] == [theirs.get_quantile(q, True) for q in ranks]
    assert theirs.get_n() if hasattr(theirs, "get_n") else theirs.n == len(values)
    ordered = np.sort(values)
    errors = [abs(np.searchsorted(ordered, first.quantile(q), side="right") / len(values) - q) for q in ranks]
    assert max(errors) <= KLL_RANK_ERROR + 0.005
    native = datasketches.kll_doubles_sketch(200)
    native.update(values[:50_000])
    read = QuantileSketch.from_bytes(native.serialize())  # a sketch Java, Spark or Druid wrote
    assert read.n == 50_000 and read.quantile(0.5) == native.get_quantile(0.5, True)


def test_merged_quantile_sketch_summarises_the_union() -> None:
    values = np.random.default_rng(2).normal(size=120_000)
    parts = []
    for chunk in np.array_split(values, 12):
        sketch = QuantileSketch()
        sketch.update(chunk)
        parts.append(sketch)
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part)
    assert merged.n == len(values) and parts[0].n == 10_000  # inputs unchanged
    ordered = np.sort(values)
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        assert abs(np.searchsorted(ordered, merged.quantile(q), side="right") / len(values) - q) <= KLL_RANK_ERROR


def test_quantile_sketch_keeps_a_point_mass_and_ties_exact() -> None:
    values = np.where(np.random.default_rng(3).random(50_000) < 0.9, 0.0, 1.0 + np.arange(50_000) % 7)
    sketch = QuantileSketch()
    sketch.update(values)
    value, share = sketch.mode()
    assert value == 0.0 and abs(share - 0.9) < 0.0165
    assert sketch.rank(0.0, inclusive=False) == 0.0 and abs(sketch.rank(0.0) - 0.9) < 0.0165


def test_distinct_sketch_estimates_and_merges() -> None:
    import pyarrow as pa

    from profiles.hashing import hash_array

    a, b = DistinctSketch(), DistinctSketch()
    a.update_hashes(hash_array(pa.array(np.arange(0, 60_000))))
    b.update_hashes(hash_array(pa.array(np.arange(40_000, 100_000))))
    merged = a.merge(b)
    assert abs(merged.estimate() / 100_000 - 1) < 0.05
    assert DistinctSketch.from_base64(merged.to_base64()) == merged


# --- reading a batch ------------------------------------------------------------------------------


def test_a_window_reads_exactly_the_rows_a_filtered_file_holds(tmp_path: Path) -> None:
    frame = table()
    path = write(tmp_path, frame, "table")
    window = month_window("2024-02")
    inside = frame[
        (frame.ts > pd.Timestamp(window.after_ms, unit="ms", tz="UTC"))
        & (frame.ts <= pd.Timestamp(window.through_ms, unit="ms", tz="UTC"))
    ]
    batch = read_snapshot(path, window=window, sample_rows=500, seed=4)
    alone = read_snapshot(write(tmp_path, inside, "february"), sample_rows=500, seed=4)
    assert batch.profile.row_count == len(inside) == alone.profile.row_count
    for name in frame.columns:
        ours, theirs = batch.profile.columns[name], alone.profile.columns[name]
        assert (
            ours.null_count,
            ours.minimum,
            ours.maximum,
            ours.value_counts,
            ours.zero_count,
            ours.hours,
            ours.weekdays,
        ) == (
            theirs.null_count,
            theirs.minimum,
            theirs.maximum,
            theirs.value_counts,
            theirs.zero_count,
            theirs.hours,
            theirs.weekdays,
        )
    pd.testing.assert_frame_equal(batch.sample.reset_index(drop=True), alone.sample.reset_index(drop=True))
    assert batch.batch is not None and batch.batch.window == window and batch.files == (str(path),)
    assert batch.batch.start_ms == alone.profile.columns["ts"].minimum


def test_a_window_skips_row_groups_outside_it_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, table(), "table", row_group=500)
    read: list[tuple[int, tuple[str, ...] | None]] = []
    original = pq.ParquetFile.read_row_group

    def spy(self: pq.ParquetFile, index: int, columns=None, **kwargs):  # type: ignore[no-untyped-def]
        read.append((index, tuple(columns) if columns else None))
        return original(self, index, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    snapshot = read_snapshot(path, window=month_window("2024-03"))
    groups = pq.ParquetFile(path).num_row_groups
    whole = {index for index, columns in read if columns is None}
    assert 0 < len(whole) < groups / 2  # March is about a third of the rows; January and February unread
    assert all(columns == ("ts",) for _, columns in read if columns is not None)  # straddlers: time first
    assert snapshot.profile.row_count == int((table().ts >= pd.Timestamp("2024-03-01", tz="UTC")).sum())


def test_several_files_read_as_one_batch_and_mismatched_schemas_fail(tmp_path: Path) -> None:
    frame = table()
    first, second = write(tmp_path, frame.iloc[:4_000], "a"), write(tmp_path, frame.iloc[4_000:], "b")
    both = read_snapshot([first, second], sample_rows=300)
    whole = read_snapshot(write(tmp_path, frame, "whole"), sample_rows=300)
    assert both.profile.row_count == len(frame) and both.files == (str(first), str(second))
    assert both.profile.columns["kind"].value_counts == whole.profile.columns["kind"].value_counts
    other = write(tmp_path, frame.iloc[:10].rename(columns={"temp": "t"}), "other")
    with pytest.raises(SnapshotError, match="another schema"):
        read_snapshot([first, other])
    with pytest.raises(SnapshotError, match="not a timestamp"):
        read_snapshot(first, window=TimeWindow("temp", 0, 1))


# --- profiles: JSON and merging -------------------------------------------------------------------


def test_batch_profile_json_is_stable_and_round_trips(tmp_path: Path) -> None:
    path = write(tmp_path, table(), "table")
    one = read_snapshot(path, window=month_window("2024-01")).batch
    two = read_snapshot(path, window=month_window("2024-01")).batch
    assert one is not None and two is not None
    assert one.to_json() == two.to_json()  # same rows, same bytes
    back = BatchProfile.from_json(one.to_json())
    assert back.to_json() == one.to_json()
    column = json.loads(one.to_json())["profile"]["columns"]["rain"]
    assert column["zeros"] > 0.7 * column["rows"] and column["point_mass"]["value"] == 0.0
    assert len(json.loads(one.to_json())["profile"]["columns"]["ts"]["hours"]) == 24


def test_merging_batch_profiles_equals_profiling_their_union(tmp_path: Path) -> None:
    frame = table()
    path = write(tmp_path, frame, "table")
    months = [read_snapshot(path, window=month_window(m)).profile for m in ("2024-01", "2024-02", "2024-03")]
    merged = months[0].merge(months[1]).merge(months[2])
    whole = read_snapshot(path).profile
    assert merged.row_count == whole.row_count
    for name in frame.columns:
        ours, theirs = merged.columns[name], whole.columns[name]
        assert (
            ours.null_count,
            ours.minimum,
            ours.maximum,
            ours.value_counts,
            ours.zero_count,
            ours.hours,
            ours.weekdays,
        ) == (
            theirs.null_count,
            theirs.minimum,
            theirs.maximum,
            theirs.value_counts,
            theirs.zero_count,
            theirs.hours,
            theirs.weekdays,
        ), name
    assert merged.columns["temp"].mean == pytest.approx(whole.columns["temp"].mean, rel=1e-12)
    assert merged.columns["temp"].stdev == pytest.approx(whole.columns["temp"].stdev, rel=1e-9)
    assert abs(merged.columns["id"].distinct_count / len(frame) - 1) < 0.05
    ordered = np.sort(frame["temp"].to_numpy())
    for q, v in merged.columns["temp"].quantiles:
        assert abs(np.searchsorted(ordered, v, side="right") / len(ordered) - q) <= KLL_RANK_ERROR


# --- split into batches, build a reference --------------------------------------------------------


def test_split_batches_profiles_each_month_in_one_pass(tmp_path: Path) -> None:
    frame = table()
    path = write(tmp_path, frame, "table")
    batches = split_batches(path, time_column="ts", cadence="month", sample_rows=400, seed=9)
    assert [s.batch.batch_id for s in batches] == ["2024-01", "2024-02", "2024-03"]  # type: ignore[union-attr]
    for snapshot, month in zip(batches, ("2024-01", "2024-02", "2024-03")):
        alone = read_snapshot(path, window=month_window(month), sample_rows=400, seed=9)
        assert snapshot.window == alone.window
        assert snapshot.profile.row_count == alone.profile.row_count
        assert snapshot.profile.columns["kind"].value_counts == alone.profile.columns["kind"].value_counts
        pd.testing.assert_frame_equal(snapshot.sample.reset_index(drop=True), alone.sample.reset_index(drop=True))
    assert infer_cadence(30 * DAY_MS) == "day" and infer_cadence(90 * DAY_MS) == "week"
    weeks = split_batches(path, time_column="ts", cadence="auto")  # 3 months: weekly
    assert sum(s.profile.row_count for s in weeks) == len(frame) and weeks[0].batch.batch_id == "week-2024-01-01"  # type: ignore[union-attr]


def test_reference_merges_batches_and_keeps_their_variation(tmp_path: Path) -> None:
    path = write(tmp_path, table(), "table")
    batches = [s.batch for s in split_batches(path, time_column="ts", cadence="month")]
    reference = build_reference(batches)  # type: ignore[arg-type]
    assert reference.row_count == sum(b.row_count for b in batches)  # type: ignore[union-attr]
    assert reference.expected_rows == sorted(b.row_count for b in batches)[1]  # type: ignore[union-attr]
    assert 28 * DAY_MS <= reference.cadence_ms <= 31 * DAY_MS  # type: ignore[operator]
    rain = reference.variation("rain")
    assert len(rain) == 3 and all(0.7 < s.zero_share < 0.9 and s.point_share > 0.7 for s in rain)  # type: ignore
    assert Reference.from_json(reference.to_json()).to_json() == reference.to_json()
    assert build_reference(batches).to_json() == reference.to_json()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        build_reference([])
    with pytest.raises(ValueError, match="repeat"):
        build_reference([batches[0], batches[0]])  # type: ignore[list-item]


def test_the_guard_judges_a_batch_against_a_reference(tmp_path: Path) -> None:
    path = write(tmp_path, table(12_000), "table")
    snapshots = split_batches(path, time_column="ts", cadence="month")
    reference = build_reference([s.batch for s in snapshots[:2]])  # type: ignore[misc]
    report = run_guard(GuardContext(URN, contract(), snapshots[2], reference, (), now_ms=0))
    assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]
    # a batch is compared with the median batch, not with the reference's whole history
    half = read_snapshot(write(tmp_path, table(12_000).iloc[-1_500:], "thin"))
    found = list(check_volume(GuardContext(URN, contract(), half, reference, (), now_ms=0)))
    expected = (snapshots[0].profile.row_count + snapshots[1].profile.row_count) / 2  # the median of two batches
    assert [f.kind for f in found] == [FindingKind.VOLUME_DROP] and found[0].params["reference_rows"] == expected
    assert list(check_volume(GuardContext(URN, contract(), snapshots[2], reference, (), now_ms=0))) == []
    bare = GuardContext(URN, contract(), snapshots[2], reference.profile, (), now_ms=0)  # the DataHub path
    assert bare.reference_profile is reference.profile and bare.expected_rows == reference.row_count


def test_duplicate_keys_across_batches_need_the_table(tmp_path: Path) -> None:
    frame = table()
    march = frame[frame.ts >= pd.Timestamp("2024-03-01", tz="UTC")]
    replayed = march.copy()
    replayed.loc[replayed.index[:200], "id"] = frame["id"].iloc[:200].to_numpy()  # January's keys again
    table_path = write(tmp_path, frame[frame.ts < pd.Timestamp("2024-03-01", tz="UTC")], "history")
    batch = read_snapshot(write(tmp_path, replayed, "march"))
    alone = GuardContext(URN, contract(), batch, None, (), now_ms=0)
    assert list(check_duplicates(alone)) == []  # unique inside the batch
    found = list(
        check_duplicates(GuardContext(URN, contract(), batch, None, (), now_ms=0, table_paths=(str(table_path),)))
    )
    assert [f.kind for f in found] == [FindingKind.DUPLICATE_KEYS] and found[0].params["across_rows"] == 200
    whole = write(tmp_path, pd.concat([frame[frame.ts < pd.Timestamp("2024-03-01", tz="UTC")], replayed]), "whole")
    count = count_duplicate_keys(
        [str(whole)], ["id"], window=month_window("2024-03"), history=[str(whole)]
    )  # the batch inside the table file: history is the rest
    assert (count.duplicate_rows, count.across_rows, count.rows_compared) == (200, 200, len(replayed))


def test_dataset_profile_json_round_trips_profiles_without_sketches() -> None:
    from profiles.profile import ColumnProfile

    bare = DatasetProfile(
        10, {"x": ColumnProfile("x", "number", 10, 1, minimum=0.0, maximum=float("inf"), quantiles=((0.5, 2.0),))}
    )
    again = DatasetProfile.from_dict(json.loads(json.dumps(bare.to_dict())))
    assert again == bare and again.columns["x"].maximum == float("inf")
