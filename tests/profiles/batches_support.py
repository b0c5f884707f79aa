"""Three months of rows (a key, a time, a zero-inflated amount, a category, a count) written to parquet, and the
month windows they are read in."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from guard.contract import ColumnContract, Contract
from profiles.profile import ColumnProfile, TimeWindow

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


def exact_parts(column: ColumnProfile) -> tuple:
    """What two profiles of the same rows must hold to the value (the sketches and moments only approximately)."""
    return (
        column.null_count,
        column.minimum,
        column.maximum,
        column.value_counts,
        column.zero_count,
        column.hours,
        column.weekdays,
    )


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
