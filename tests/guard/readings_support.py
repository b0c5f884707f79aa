"""Hourly readings with a drifting level, a zero-inflated column and a point mass, split into weekly batches and
judged by the whole guard against the batches before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.runner import run_guard
from profiles.reference import build_reference
from profiles.snapshot import read_snapshot

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
    return run_guard(with_repeats_counted(GuardContext(URN, terms or contract(), snapshot, reference, (), now_ms=now)))


def week(table, index: int) -> pd.DataFrame:
    frame, _ = table
    start = pd.Timestamp("2021-01-04", tz="UTC") + pd.Timedelta(weeks=index)
    return frame[(frame.time >= start) & (frame.time < start + pd.Timedelta(weeks=1))].reset_index(drop=True)


def blocking(report) -> set[tuple[str, str | None]]:
    return {(f.kind.value, f.column) for f in report.blocking}
