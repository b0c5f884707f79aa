"""A periodic panel: one row per entity and period, every row of a period stamped with its first instant."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.runner import run_guard
from profiles.batches import split_batches
from profiles.reference import build_reference

URN = "urn:li:dataset:(urn:li:dataPlatform:file,panel,PROD)"

ENTITIES = 40


def _panel(periods: int, *, last_rows: int = ENTITIES, seed: int = 5) -> pd.DataFrame:
    """One row per entity and period, every row of a period stamped with its first instant."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(periods):
        rows = ENTITIES if i < periods - 1 else last_rows
        frames.append(
            pd.DataFrame(
                {
                    "period": pd.Timestamp(f"{2001 + i}-01-01", tz="UTC"),
                    "entity": [f"e{j:02d}" for j in range(rows)],
                    "level": rng.normal(50 + i, 5, rows).round(2),
                    "flag": int(i >= periods - 1),  # switches on with the newest period
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    return frame


def _guard(tmp_path: Path, frame: pd.DataFrame, kept: int, columns: tuple[ColumnContract, ...] | None = None):
    """The guard's report on period `kept` against the periods before it, under a contract of the panel's key and
    `columns` (the panel's `level` and `flag` when none are given)."""
    path = tmp_path / "panel.parquet"
    frame.to_parquet(path, index=False)
    snapshots = split_batches(path, time_column="period", cadence="month")
    measured = columns or (ColumnContract("level", "number"), ColumnContract("flag", "integer"))
    contract = Contract(
        URN,
        (
            ColumnContract("period", "timestamp", primary_key=True),
            ColumnContract("entity", "string", primary_key=True),
            *measured,
        ),
        event_timestamp_column="period",
    )
    reference = build_reference([s.batch for s in snapshots[:kept]])  # type: ignore[misc]
    assert reference.periodic
    newest = snapshots[kept]
    return run_guard(
        with_repeats_counted(GuardContext(URN, contract, newest, reference, (), now_ms=newest.batch.end_ms + 3_600_000))
    )  # type: ignore[union-attr]
