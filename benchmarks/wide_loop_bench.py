"""init and a run against the number of columns, through the real CLI: the curve in columns.

    python benchmarks/wide_loop_bench.py [--columns 50,200,1000,5000] [--days 40] [--rows-per-day 250]
                                         [--json PATH]

For each width, in its own process (so its peak memory is its own), in a scratch folder, as a new user would:
`kintsugi init` on `--days` daily batches of a keyless event table with that many numeric features (a few latent
factors plus noise each, so the features correlate as real ones do, and a label made from some of them), every
feature contracted; a first `kintsugi run` (the first champion); then one more day landed with `kintsugi land` and
`kintsugi run` on it (the path a daily job takes). Printed per width: wall and CPU seconds of init, of the first run
and of the next day's run, milliseconds per column of that run, the peak RSS of each of the three steps (the process's
high-water mark is reset before each, on Linux; elsewhere each figure is the peak so far) and how the run ended (clean
batches: APPROVED or a level champion, never BLOCKED at detect). The generated table is written and dropped before
`init`, so the peaks are the CLI's.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.corpus_bench import _iso, cli  # noqa: E402

START = pd.Timestamp("2026-01-05", tz="UTC")
FACTORS = 6


def day_rows(columns: int, day: int, rows: int, seed: int = 7) -> pd.DataFrame:
    """One day of the table: every feature a fixed mix of a few shared factors plus its own noise."""
    loadings = np.random.default_rng(seed).normal(0, 1, (FACTORS, columns))
    rng = np.random.default_rng(seed * 1000 + day)
    factors = rng.normal(0, 1, (rows, FACTORS))
    features = factors @ loadings + rng.normal(0, 1, (rows, columns))
    frame = pd.DataFrame(features.round(3), columns=[f"x{i:04d}" for i in range(columns)])
    seconds = np.sort(rng.integers(0, 86_400, rows))
    frame.insert(0, "event_time", (START + pd.Timedelta(days=day) + pd.to_timedelta(seconds, unit="s")).as_unit("ms"))
    frame["label"] = (factors[:, :3].sum(axis=1) * 3 + rng.normal(0, 1, rows) + 20).round(3)
    return frame


def _reset_peak() -> None:
    """The process's peak RSS back to its current RSS (Linux: clear_refs 5), so the next peak is one step's. Arrow's
    pool first gives back what it holds unused (the generated table's buffers, freed but kept for seconds): else the
    first step's peak is the generator's."""
    pa.default_memory_pool().release_unused()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_mb() -> float:
    """The peak RSS since the last reset (VmHWM), else since the process started."""
    try:
        for row in Path("/proc/self/status").read_text().splitlines():
            if row.startswith("VmHWM:"):
                return int(row.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(*args: str) -> dict[str, Any]:
    gc.collect()
    _reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    code, out, err = cli(*args)
    step: dict[str, Any] = {"exit": code, "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
    step["peak_mb"] = _peak_mb()
    try:
        record = json.loads(out)
        step["status"] = record.get("status")
        step["outcome"] = str(record.get("outcome", ""))[:160]
    except json.JSONDecodeError:
        lines = [line for line in (err or out).strip().splitlines() if line.strip()]
        step["outcome"] = lines[-1][:160] if lines else ""
    return step


def one_width(columns: int, days: int, rows: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="wide-loop-") as tmp:
        folder, ws = Path(tmp) / "data", Path(tmp) / "ws"
        folder.mkdir()
        history = pd.concat([day_rows(columns, d, rows) for d in range(days)], ignore_index=True)
        history.to_parquet(folder / "history.parquet", index=False)
        del history  # the peaks below are the CLI's, not the generator's
        end = START + pd.Timedelta(days=days)
        common = ("--workspace", str(ws))
        found: dict[str, Any] = {"columns": columns, "days": days, "rows_per_day": rows}
        found["init"] = _timed(
            "init", "wide", "--data", str(folder), "--target", "label", "--time-column", "event_time",
            "--now", _iso(end + pd.Timedelta(hours=1)), "--yes", *common,
        )  # fmt: skip
        if found["init"]["exit"] != 0:
            return found
        found["first_run"] = _timed("run", "wide", "--now", _iso(end + pd.Timedelta(hours=2)), "--json", *common)
        day_rows(columns, days, rows).to_parquet(Path(tmp) / "next.parquet", index=False)
        landed = end + pd.Timedelta(days=1, hours=1)
        code, _, err = cli("land", "wide", str(Path(tmp) / "next.parquet"), "--now", _iso(landed), *common)
        if code != 0:
            found["land"] = {"exit": code, "outcome": err.strip()[-160:]}
            return found
        found["next_run"] = _timed("run", "wide", "--now", _iso(landed + pd.Timedelta(hours=1)), "--json", *common)
        found["peak_rss_mb"] = max(found[step].get("peak_mb", 0.0) for step in ("init", "first_run", "next_run"))
        return found


def line(found: dict[str, Any]) -> str:
    def cell(step: str) -> str:
        got = found.get(step) or {}
        return f"{got['wall_s']:8.1f} {got['cpu_s']:8.1f}" if "wall_s" in got else f"{'-':>8} {'-':>8}"

    def peak(step: str) -> str:
        got = found.get(step) or {}
        return f"{got['peak_mb']:7.0f}" if "peak_mb" in got else f"{'-':>7}"

    run = found.get("next_run") or found.get("first_run") or found.get("init") or {}
    per_column = 1000 * run["wall_s"] / found["columns"] if "wall_s" in run else float("nan")
    return (
        f"{found['columns']:>7} {cell('init')} {cell('first_run')} {cell('next_run')} {per_column:9.1f} "
        f"{peak('init')} {peak('first_run')} {peak('next_run')}  {run.get('status') or run.get('exit')}: "
        f"{run.get('outcome', '')[:70]}"
    )


HEADER = (
    f"{'columns':>7} {'init s':>8} {'init cpu':>8} {'run1 s':>8} {'run1 cpu':>8} {'next s':>8} {'next cpu':>8} "
    f"{'ms/col':>9} {'init MB':>7} {'run1 MB':>7} {'next MB':>7}  next run"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", default="50,200,1000,5000")
    parser.add_argument("--days", type=int, default=40)
    parser.add_argument("--rows-per-day", type=int, default=250)
    parser.add_argument("--json", default="")
    parser.add_argument("--one", type=int, default=0, help=argparse.SUPPRESS)  # a width in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_width(args.one, args.days, args.rows_per_day)))
        return
    print(f"init and a run vs columns: {args.days} daily batches of {args.rows_per_day} rows, every feature contracted")
    print(HEADER, flush=True)
    rows = []
    for columns in (int(n) for n in args.columns.split(",")):
        done = subprocess.run(
            [sys.executable, __file__, "--one", str(columns), "--days", str(args.days),
             "--rows-per-day", str(args.rows_per_day)],
            capture_output=True, text=True,
        )  # fmt: skip
        try:
            found = json.loads(done.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            found = {"columns": columns, "init": {"exit": done.returncode, "outcome": done.stderr.strip()[-160:]}}
        rows.append(found)
        print(line(found), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
