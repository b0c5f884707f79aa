"""The batch-aware guard blocks failures, not seasons: named unit conversions (pint), point masses and
zero-inflated columns, physical ranges, volume drops and spikes scaled by time, implausible timestamps,
bounded findings on wide tables, parquet page checksums."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Verdict
from guard.kinds import FindingKind as K
from guard.kinds import Severity
from guard.runner import MAX_FINDINGS_PER_KIND, run_guard
from profiles.batches import split_batches
from profiles.reference import build_reference
from profiles.snapshot import SnapshotError, read_snapshot

URN = "urn:li:dataset:(urn:li:dataPlatform:file,robust.weather,PROD)"
WEEKS = 10


def weather(weeks: int = WEEKS, seed: int = 3) -> pd.DataFrame:
    """Hourly weather with a season (a warming trend), a zero-inflated rain column and a visibility point mass."""
    rng = np.random.default_rng(seed)
    hours = weeks * 168
    time = pd.date_range("2021-01-04", periods=hours, freq="h", tz="UTC").astype("datetime64[ms, UTC]")
    season = np.linspace(2.0, 14.0, hours)
    rain = np.where(rng.random(hours) < 0.85, 0.0, rng.gamma(1.2, 1.5, hours)).round(1)
    visibility = np.where(rng.random(hours) < 0.9, 16_100.0, rng.uniform(200, 16_000, hours).round(-2))
    return pd.DataFrame(
        {
            "time": time,
            "temp": (season + rng.normal(0, 3, hours)).round(1),
            "rain": rain,
            "visibility": visibility,
            "wind": rng.gamma(2.0, 1.8, hours).round(1),
            "humidity": np.clip(rng.normal(70, 12, hours), 5, 100).round(0),
        }
    )


def contract(**units: str) -> Contract:
    declared = {"temp": "degC", "rain": "mm", "visibility": "m", "wind": "m/s", "humidity": "percent", **units}
    columns = [ColumnContract("time", "timestamp", primary_key=True)]
    columns += [ColumnContract(name, "number", unit=unit) for name, unit in declared.items()]
    return Contract(URN, tuple(columns), event_timestamp_column="time")


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> tuple[pd.DataFrame, list]:
    frame = weather()
    path = tmp_path_factory.mktemp("robust") / "weather.parquet"
    frame.to_parquet(path, index=False, row_group_size=500)
    return frame, split_batches(path, time_column="time", cadence="week")


def judge(
    tmp_path: Path,
    table,
    rows: pd.DataFrame,
    *,
    reference_batches: slice = slice(0, 8),
    terms: Contract | None = None,
    name: str = "candidate",
):
    _, batches = table
    reference = build_reference([b.batch for b in batches[reference_batches]])
    path = tmp_path / f"{name}.parquet"
    rows.to_parquet(path, index=False)
    snapshot = read_snapshot(path, time_column="time")
    now = int(snapshot.batch.end_ms) if snapshot.batch and snapshot.batch.end_ms is not None else 0
    return run_guard(GuardContext(URN, terms or contract(), snapshot, reference, (), now_ms=now))


def week(table, index: int) -> pd.DataFrame:
    frame, _ = table
    start = pd.Timestamp("2021-01-04", tz="UTC") + pd.Timedelta(weeks=index)
    return frame[(frame.time >= start) & (frame.time < start + pd.Timedelta(weeks=1))].reset_index(drop=True)


def blocking(report) -> set[tuple[str, str | None]]:
    return {(f.kind.value, f.column) for f in report.blocking}


def test_clean_batches_of_a_drifting_level_pass(tmp_path, table):
    for index in (8, 9):
        report = judge(tmp_path, table, week(table, index))
        assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]


def test_each_column_checked_against_its_own_reference_is_clean(tmp_path, table):
    frame, _ = table
    own = frame[frame.time < pd.Timestamp("2021-03-01", tz="UTC")]
    report = judge(tmp_path, table, own)
    assert report.verdict is Verdict.CLEAN and not {f.column for f in report.findings} & {"rain", "visibility"}, [
        f.message for f in report.findings
    ]


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


def test_a_change_within_natural_variation_warns_and_does_not_block(tmp_path, table):
    batch = week(table, 9)
    report = judge(tmp_path, table, batch.assign(temp=batch.temp + 4.0))
    assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]


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


def test_volume_spike_blocks_and_a_partial_week_is_scaled_by_its_time(tmp_path, table):
    batch = week(table, 9)
    spike = judge(tmp_path, table, pd.concat([batch] * 40, ignore_index=True))
    assert (K.VOLUME_SPIKE.value, None) in blocking(spike)
    partial = judge(tmp_path, table, batch.head(30))  # 30 hours of a week: expected ~30 rows, not 168
    assert not {f.kind for f in partial.findings} & {K.VOLUME_DROP, K.VOLUME_SPIKE}


def test_zeroed_timestamps_block(tmp_path, table):
    batch = week(table, 9)
    zeroed = batch.assign(time=batch.time.where(batch.index >= 3, pd.Timestamp(0, tz="UTC")))
    assert (K.OUT_OF_RANGE.value, "time") in blocking(judge(tmp_path, table, zeroed))


def test_thousands_of_unexpected_columns_give_one_grouped_finding(tmp_path, table):
    batch = week(table, 9)
    wide = pd.concat([batch, pd.DataFrame({f"extra_{i}": np.zeros(len(batch)) for i in range(300)})], axis=1)
    report = judge(tmp_path, table, wide)
    unexpected = [f for f in report.findings if f.kind is K.COLUMN_UNEXPECTED]
    assert len(unexpected) == 1 and unexpected[0].column is None and unexpected[0].observed["count"] == 300
    assert len(unexpected[0].observed["columns"]) <= MAX_FINDINGS_PER_KIND and unexpected[0].severity is Severity.BLOCK
    few = judge(tmp_path, table, batch.assign(extra=1.0))
    assert (K.COLUMN_UNEXPECTED.value, "extra") in blocking(few)


def test_a_corrupted_page_with_a_checksum_is_unreadable(tmp_path):
    table = pa.table({"x": np.arange(50_000, dtype=float)})
    path = tmp_path / "checked.parquet"
    pq.write_table(table, path, write_page_checksum=True, compression="none")
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="CRC"):
        read_snapshot(path)
