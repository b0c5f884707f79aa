"""An order table of a few columns with sums, orders and a label, its reference, and the swaps and leaks injected into
it (guard/checks tests and guard/causes tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding
from profiles.reference import Reference, build_reference
from profiles.snapshot import Snapshot, read_snapshot

URN = "urn:li:dataset:(urn:li:dataPlatform:file,test.causes,PROD)"

CONTRACT = Contract(
    URN,
    (
        ColumnContract("order_id", "string", primary_key=True),
        ColumnContract("event_ts", "timestamp"),
        ColumnContract("distance_km", "number", unit="km", minimum=0, maximum=50),
        ColumnContract("prep_time_min", "number", unit="min", minimum=0, maximum=120),
        ColumnContract("temp_min", "number", unit="C"),
        ColumnContract("temp_max", "number", unit="C"),
        ColumnContract("courier_load", "integer", minimum=0, maximum=20),
        ColumnContract("part_a", "number"),
        ColumnContract("part_b", "number"),
        ColumnContract("total", "number"),
        ColumnContract("eta_minutes", "number", required=False),
    ),
    label_column="eta_minutes",
    event_timestamp_column="event_ts",
)


def orders(seed: int, rows: int = 3_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    distance = np.clip(rng.lognormal(1.1, 0.55, rows), 0.3, 25).round(3)
    prep = np.clip(rng.normal(12, 4, rows), 2, 45).round(2)
    low = rng.normal(8, 4, rows).round(1)
    a, b = rng.normal(10, 2, rows).round(2), rng.normal(3, 1, rows).round(2)
    return pd.DataFrame(
        {
            "order_id": [f"o-{seed}-{i}" for i in range(rows)],
            "event_ts": (
                pd.Timestamp("2025-01-01", tz="UTC") + pd.to_timedelta(np.sort(rng.uniform(0, 7 * 86_400, rows)), "s")
            ).astype("datetime64[ms, UTC]"),
            "distance_km": distance,
            "prep_time_min": prep,
            "temp_min": low,
            "temp_max": (low + rng.uniform(3, 10, rows)).round(1),
            "courier_load": rng.poisson(1.5, rows),
            "part_a": a,
            "part_b": b,
            "total": (a + b).round(2),
            "eta_minutes": (10 + 3 * distance + 0.5 * prep + rng.normal(0, 4, rows)).round(2),
        }
    )


def snap(tmp_path: Path, frame: pd.DataFrame, name: str) -> Snapshot:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path, index=False, row_group_size=1_000)
    return read_snapshot(path, time_column="event_ts", batch_id=name)


def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    tmp = tmp_path_factory.mktemp("causes")
    return build_reference([snap(tmp, orders(seed), f"b{seed}").batch for seed in range(4)])


def found(
    check, tmp_path: Path, frame: pd.DataFrame, reference: object, contract: Contract = CONTRACT
) -> list[Finding]:  # type: ignore[no-untyped-def]
    """The check's findings (a check also yields the closest calls of its thresholds)."""
    judged = check(GuardContext(URN, contract, snap(tmp_path, frame, "batch"), reference, (), now_ms=0))  # type: ignore[arg-type]
    return [f for f in judged if isinstance(f, Finding)]


def swapped(frame: pd.DataFrame, a: str, b: str, rows: np.ndarray | None = None) -> pd.DataFrame:
    rows = np.ones(len(frame), dtype=bool) if rows is None else rows
    return frame.assign(**{a: np.where(rows, frame[b], frame[a]), b: np.where(rows, frame[a], frame[b])})


def leaked(
    frame: pd.DataFrame, column: str, share: float, by: str = "eta_minutes", reverse: bool = False
) -> pd.DataFrame:
    """`column` recomputed from `by` on a seeded `share` of the rows: its own values there dealt out in `by`'s
    order (its distribution unchanged), or in the reverse order."""
    rows = np.flatnonzero(np.random.default_rng(5).random(len(frame)) < share)
    order = rows[np.argsort(frame[by].to_numpy()[rows], kind="stable")]
    values = frame[column].to_numpy().copy()
    dealt = np.sort(values[rows])
    values[order] = dealt[::-1] if reverse else dealt
    return frame.assign(**{column: values})
