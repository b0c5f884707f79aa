"""Guard time against the number of columns: a contracted table plus 0, 500 or 5,000 unexpected columns.

    python benchmarks/wide_bench.py [--rows 10000] [--extra 0,500,5000]

Each table has the six contracted columns of a small weather table (hourly) and N extra float columns
the contract does not name; the guard runs `read_snapshot` + `run_guard` against a Reference built from
8 clean weekly batches. Printed: seconds, seconds per column, and the findings (one grouped finding per
kind however many columns: `guard.runner.MAX_FINDINGS_PER_KIND`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controlplane.stages.guarding import with_repeats_counted  # noqa: E402
from guard.context import GuardContext  # noqa: E402
from guard.contract import ColumnContract, Contract  # noqa: E402
from guard.runner import run_guard  # noqa: E402
from profiles.batches import split_batches  # noqa: E402
from profiles.reference import build_reference  # noqa: E402
from profiles.snapshot import read_snapshot  # noqa: E402

URN = "urn:li:dataset:(urn:li:dataPlatform:file,bench.wide,PROD)"


def table(rows: int, seed: int, start: str) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "time": pd.date_range(start, periods=rows, freq="h", tz="UTC").astype("datetime64[ms, UTC]"),
            "temp": rng.normal(12, 4, rows).round(1),
            "rain": np.where(rng.random(rows) < 0.8, 0, rng.gamma(1, 2, rows)),
            "wind": rng.gamma(2, 2, rows).round(1),
            "pressure": rng.normal(1013, 8, rows).round(1),
            "label": rng.normal(0, 1, rows),
        }
    )


CONTRACT = Contract(
    URN,
    (
        ColumnContract("time", "timestamp", primary_key=True),
        ColumnContract("temp", "number", unit="degC"),
        ColumnContract("rain", "number", unit="mm"),
        ColumnContract("wind", "number", unit="m/s"),
        ColumnContract("pressure", "number", unit="hPa"),
        ColumnContract("label", "number", required=False),
    ),
    label_column="label",
    event_timestamp_column="time",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--extra", default="0,500,5000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wide-bench-") as tmp:
        history = Path(tmp) / "history.parquet"
        table(8 * 168, 1, "2021-01-04").to_parquet(history, index=False)
        reference = build_reference([s.batch for s in split_batches(history, time_column="time", cadence="week")])
        print(f"guard vs columns: {args.rows:,} rows, reference of 8 weekly batches")
        for extra in (int(n) for n in args.extra.split(",")):
            frame = table(args.rows, 2, "2021-03-01")
            wide = pd.concat(
                [
                    frame,
                    pd.DataFrame(
                        np.random.default_rng(3).random((args.rows, extra)),
                        columns=[f"extra_{i}" for i in range(extra)],
                    ),
                ],
                axis=1,
            )
            path = Path(tmp) / f"wide_{extra}.parquet"
            wide.to_parquet(path, index=False)
            started = time.perf_counter()
            snapshot = read_snapshot(path, time_column="time")
            context = GuardContext(URN, CONTRACT, snapshot, reference, (), now_ms=int(snapshot.batch.end_ms))
            report = run_guard(with_repeats_counted(context))
            seconds = time.perf_counter() - started
            kinds = sorted(
                {f"{f.kind.value}x{f.observed['count'] if f.params.get('grouped') else 1}" for f in report.findings}
            )
            print(
                f"  {len(wide.columns):>6} columns  {seconds:7.2f} s  {1000 * seconds / len(wide.columns):6.2f} ms/column  "
                f"{len(report.findings)} findings: {', '.join(kinds)}"
            )


if __name__ == "__main__":
    main()
