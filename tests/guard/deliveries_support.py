"""The delivery table (one distribution, any seed), its contract and single-profile reference, and the calls the
checks' tests make on it. Snapshots are real parquet files read with `read_snapshot`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding
from guard.kinds import FindingKind
from profiles.profile import DatasetProfile
from profiles.snapshot import Snapshot, read_snapshot

URN = "urn:li:dataset:(urn:li:dataPlatform:file,delivery.eta_features,PROD)"

VEHICLES = ("bike", "scooter", "car")


def eta_frame(seed: int, rows: int = 8_000, *, rain: str = "exponential") -> pd.DataFrame:
    """The delivery table: one distribution, any seed."""
    rng = np.random.default_rng(seed)
    distance = rng.lognormal(1.1, 0.55, rows)
    prep = np.clip(rng.normal(12.0, 4.0, rows), 2.0, 45.0)
    wet = rng.exponential(2.5, rows)
    return pd.DataFrame(
        {
            "order_id": [f"o-{seed}-{i:06d}" for i in range(rows)],
            "event_ts": pd.Timestamp("2025-01-01", tz="UTC") + pd.to_timedelta(rng.uniform(0, 7 * 86_400, rows), "s"),
            "distance_km": distance.round(3),
            "prep_time_min": prep.round(2),
            "courier_load": rng.poisson(1.5, rows),
            "vehicle_type": rng.choice(VEHICLES, rows, p=[0.35, 0.45, 0.20]),
            "rain_mm": (wet if rain == "exponential" else np.where(rng.random(rows) < 0.25, wet, 0.0)).round(2),
            "hour_of_day": rng.integers(0, 24, rows),
            "eta_minutes": (10 + 3 * distance + 0.5 * prep + rng.normal(0.0, 2.0, rows)).round(2),
        }
    )


def eta_contract(**changes: ColumnContract) -> Contract:
    columns = {
        "order_id": ColumnContract("order_id", "string", primary_key=True, max_null_fraction=0.0),
        "event_ts": ColumnContract("event_ts", "timestamp"),
        "distance_km": ColumnContract("distance_km", "number", unit="km", minimum=0, maximum=50),
        "prep_time_min": ColumnContract("prep_time_min", "number", unit="min", minimum=0, maximum=120),
        "courier_load": ColumnContract("courier_load", "integer", minimum=0, maximum=20),
        "vehicle_type": ColumnContract("vehicle_type", "string", allowed_values=VEHICLES),
        "rain_mm": ColumnContract("rain_mm", "number", unit="mm_rain", minimum=0, maximum=200),
        "hour_of_day": ColumnContract("hour_of_day", "integer", minimum=0, maximum=23),
        "eta_minutes": ColumnContract("eta_minutes", "number", unit="min", required=False),
    }
    columns.update(changes)
    return Contract(URN, tuple(columns.values()), label_column="eta_minutes", event_timestamp_column="event_ts")


def snapshot_of(tmp_path: Path, frame: pd.DataFrame, name: str = "snapshot", **write: object) -> Snapshot:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path, index=False, **write)
    return read_snapshot(path)


def reference(tmp_path_factory: pytest.TempPathFactory) -> DatasetProfile:
    return snapshot_of(tmp_path_factory.mktemp("reference"), eta_frame(0)).profile


def context(snapshot: Snapshot, reference: DatasetProfile | None, contract: Contract | None = None) -> GuardContext:
    return with_repeats_counted(GuardContext(URN, contract or eta_contract(), snapshot, reference, (), now_ms=0))


def findings(check, ctx: GuardContext) -> list[Finding]:  # type: ignore[no-untyped-def]
    """The check's findings (a check also yields the closest calls of its thresholds)."""
    return [f for f in check(ctx) if isinstance(f, Finding)]


def kinds_and_columns(found: list[Finding]) -> list[tuple[FindingKind, str | None]]:
    return [(f.kind, f.column) for f in found]
