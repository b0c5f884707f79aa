"""A month, quarter or year number constant within its calendar period names the period as a month's name does
(`profiles.relations`: periods of whole-number columns): a new month's batch brings its number, and no check
reads it as a placeholder, a swap or a drift."""

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

URN = "urn:li:dataset:(urn:li:dataPlatform:file,period.numbers,PROD)"


def test_a_new_months_number_in_batches_cut_finer_than_a_month_is_the_period_not_a_placeholder(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    rows = 24 * 7 * 40  # hourly rows for 40 weeks
    hours = pd.date_range("2024-01-01", periods=rows, freq="h", tz="UTC").astype("datetime64[ms, UTC]")
    frame = pd.DataFrame(
        {
            "at": hours,
            "month": hours.month.astype("int64"),
            "weekday": (hours.dayofweek + 1).astype("int64"),
            "load": rng.gamma(4.0, 10.0, rows).round(1),
        }
    )
    contract = Contract(
        URN,
        (
            ColumnContract("at", "timestamp", required=True),
            ColumnContract("month", "integer"),
            ColumnContract("weekday", "integer"),
            ColumnContract("load", "number"),
        ),
        event_timestamp_column="at",
    )

    def snap(part: pd.DataFrame, name: str):
        path = tmp_path / f"{name}.parquet"
        part.to_parquet(path, index=False)
        return read_snapshot(path, time_column="at", batch_id=name)

    kept = frame[
        (frame["at"] >= pd.Timestamp("2024-05-06", tz="UTC")) & (frame["at"] < pd.Timestamp("2024-09-01", tz="UTC"))
    ]
    weeks = [kept.iloc[i : i + 24 * 7] for i in range(0, len(kept), 24 * 7)]  # a week may hold two months
    reference = build_reference([snap(w, f"w{i}").batch for i, w in enumerate(weeks)])
    september = frame[frame["at"].dt.month == 9]  # 9: a number people type for 'unknown', here the month's
    batch = snap(september, "september")
    now = int(batch.batch.end_ms) + 3_600_000  # type: ignore[union-attr]
    report = run_guard(with_repeats_counted(GuardContext(URN, contract, batch, reference, (), now_ms=now)))
    assert not [f for f in report.findings if f.column == "month"], [f.message for f in report.findings]
    assert not report.blocking, [f.message for f in report.blocking]
