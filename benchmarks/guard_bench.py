"""Guard vs the pyarrow floor vs pandera on generated parquet tables, side by side in one run.

    python benchmarks/guard_bench.py [--sizes 1000000,10000000] [--repeat 3] [--profile]

For each size, a seeded table of that many rows x 10 columns (a string key, a timestamp, five numbers,
two categories, a numeric label; row groups of ~1M rows) is written to a temporary directory, then three
measurements run, each in its own fresh subprocess:

- guard: `read_snapshot` + the repeats counted (`with_repeats_counted`) + `run_guard` with a contract covering
  all ten columns (every check registered: schema, units, nulls, volume, exact duplicate keys, domain, drift,
  leakage…) against a reference
  profiled beforehand from a 200k-row table of the same distribution (its row count set to the table's:
  the volume check compares a table with a table of its size, so a 1M table is not a 5x spike);
- floor: pyarrow reading every column row group by row group and computing null_count and pc.min_max;
- pandera: `pd.read_parquet` + a DataFrameSchema with the equivalent checks (dtype, nullable, unique key,
  ge/le ranges, isin) validated lazily.

Time is the best of `--repeat` runs, measured inside the child around the work only (imports excluded);
the runs go round robin (guard, floor, pandera, guard, …) so a busy machine slows each alike, and the
child's CPU time (user + system, all threads) is shown beside the wall time.
Peak memory is the child's own resident-set high-water mark (VmHWM from /proc/self/status; falling back
to getrusage's ru_maxrss where there is no /proc, which on Linux would wrongly carry the parent's size
across exec) read right after the work, so it includes the interpreter and its imports; it is shown
with the high-water mark just before the work so the increase is visible. The largest of the runs is
kept. The table's in-memory size is the sum of its row
groups' pyarrow `Table.nbytes`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROW_GROUP = 1_000_000
KINDS = ("guard", "floor", "pandera")
REFERENCE_ROWS = 200_000
URN = "urn:li:dataset:(urn:li:dataPlatform:file,bench.eta_features,PROD)"
VEHICLES = np.array(["bike", "scooter", "car"])
CITIES = np.array([f"city_{i:02d}" for i in range(20)])
RANGES = {
    "distance_km": (0, 50),
    "prep_time_min": (0, 120),
    "courier_load": (0, 20),
    "rain_mm": (0, 200),
    "hour_of_day": (0, 23),
}


# --- the table -------------------------------------------------------------------------------------


def _chunk(rng: np.random.Generator, start: int, rows: int) -> pa.Table:
    distance = np.clip(rng.lognormal(1.1, 0.55, rows), 0.3, 25.0)
    prep = np.clip(rng.normal(12.0, 4.0, rows), 2.0, 45.0)
    seconds = (start + np.arange(rows)) * np.timedelta64(1, "s")
    return pa.table(
        {
            "order_id": pc.binary_join_element_wise(
                "o-", pa.array(np.arange(start, start + rows)).cast(pa.string()), ""
            ),
            "event_ts": pa.array(np.datetime64("2025-01-01T00:00:00", "us") + seconds).cast(pa.timestamp("us", "UTC")),
            "distance_km": distance.round(3),
            "prep_time_min": prep.round(2),
            "courier_load": rng.poisson(1.5, rows),
            "vehicle_type": VEHICLES[rng.choice(3, rows, p=[0.35, 0.45, 0.20])],
            "rain_mm": np.where(rng.random(rows) < 0.25, rng.exponential(2.5, rows), 0.0).round(2),
            "hour_of_day": rng.integers(0, 24, rows),
            "city": CITIES[rng.integers(0, len(CITIES), rows)],
            "eta_minutes": (10 + 3 * distance + 0.5 * prep + rng.normal(0.0, 2.0, rows)).round(2),
        }
    )


def write_table(path: Path, rows: int, seed: int, offset: int = 0) -> None:
    """Write `rows` rows in row groups of ROW_GROUP, generated and written one group at a time; keys and
    times start at row `offset` (so tables written with other offsets are later batches of one table)."""
    rng = np.random.default_rng(seed)
    writer: pq.ParquetWriter | None = None
    for start in range(0, rows, ROW_GROUP):
        chunk = _chunk(rng, offset + start, min(ROW_GROUP, rows - start))
        writer = writer or pq.ParquetWriter(path, chunk.schema)
        writer.write_table(chunk, row_group_size=ROW_GROUP)
    assert writer is not None
    writer.close()


def bench_contract() -> Any:
    from guard.contract import ColumnContract as Column
    from guard.contract import Contract

    return Contract(
        URN,
        (
            Column("order_id", "string", primary_key=True, max_null_fraction=0.0),
            Column("event_ts", "timestamp"),
            Column("distance_km", "number", unit="km", minimum=0, maximum=50, max_null_fraction=0.01),
            Column("prep_time_min", "number", unit="min", minimum=0, maximum=120, max_null_fraction=0.01),
            Column("courier_load", "integer", minimum=0, maximum=20),
            Column("vehicle_type", "string", allowed_values=tuple(VEHICLES)),
            Column("rain_mm", "number", unit="mm_rain", minimum=0, maximum=200),
            Column("hour_of_day", "integer", minimum=0, maximum=23),
            Column("city", "string", allowed_values=tuple(CITIES)),
            Column("eta_minutes", "number", unit="min", required=False),
        ),
        label_column="eta_minutes",
        event_timestamp_column="event_ts",
    )


# --- the three measurements (each runs in a child process) -----------------------------------------


def run_guard_once(path: str, reference_path: str) -> dict[str, Any]:
    from controlplane.stages.guarding import with_repeats_counted
    from guard.context import GuardContext
    from guard.runner import run_guard
    from profiles.snapshot import read_snapshot

    contract, reference = bench_contract(), read_snapshot(reference_path).profile

    def work() -> dict[str, Any]:
        snapshot = read_snapshot(path)
        expected = replace(reference, row_count=snapshot.profile.row_count)  # a reference of a table this size
        report = run_guard(with_repeats_counted(GuardContext(URN, contract, snapshot, expected, (), now_ms=0)))
        return {"verdict": report.verdict.value, "findings": [f"{f.kind.value}:{f.column}" for f in report.findings]}

    return _measure(work)


def run_floor_once(path: str) -> dict[str, Any]:
    def work() -> dict[str, Any]:
        parquet, nbytes = pq.ParquetFile(path), 0
        for index in range(parquet.num_row_groups):
            group = parquet.read_row_group(index)
            nbytes += group.nbytes
            for column in group.columns:
                _ = column.null_count, pc.min_max(column)
        return {"table_mb": nbytes / 2**20}

    return _measure(work)


def run_pandera_once(path: str) -> dict[str, Any]:
    import pandas as pd
    import pandera.pandas as pa_schema

    checks: dict[str, Any] = {
        "order_id": pa_schema.Column(str, nullable=False, unique=True),
        "event_ts": pa_schema.Column(pd.DatetimeTZDtype("us", "UTC"), nullable=True),
        "vehicle_type": pa_schema.Column(str, pa_schema.Check.isin(list(VEHICLES)), nullable=True),
        "city": pa_schema.Column(str, pa_schema.Check.isin(list(CITIES)), nullable=True),
        "eta_minutes": pa_schema.Column(float, nullable=True),
    }
    for name, (low, high) in RANGES.items():
        dtype = "int64" if name in ("courier_load", "hour_of_day") else float
        checks[name] = pa_schema.Column(dtype, [pa_schema.Check.ge(low), pa_schema.Check.le(high)], nullable=True)
    schema = pa_schema.DataFrameSchema(checks, strict=True)

    def work() -> dict[str, Any]:
        started = time.perf_counter()
        frame = pd.read_parquet(path)
        loaded = time.perf_counter() - started
        schema.validate(frame, lazy=True)
        return {"load_s": loaded}

    return _measure(work)


def _measure(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    before, cpu_before = _rss_mb(), _cpu_seconds()
    started = time.perf_counter()
    extra = work()
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "cpu_s": _cpu_seconds() - cpu_before, "base_mb": before, "peak_mb": _rss_mb(), **extra}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rss_mb() -> float:
    """This process's peak resident set so far, in MB.

    Linux's VmHWM (the high-water mark of this process's own address space); not ru_maxrss, which on
    Linux survives exec and so would report the parent's size at fork time for a fresh child.
    """
    try:
        status = Path("/proc/self/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def child_main(args: argparse.Namespace) -> None:
    if args.child == "guard" and args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        result = profiler.runcall(run_guard_once, args.path, args.reference)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    elif args.child == "guard":
        result = run_guard_once(args.path, args.reference)
    elif args.child == "floor":
        result = run_floor_once(args.path)
    else:
        result = run_pandera_once(args.path)
    print(json.dumps(result))


# --- the parent: generate, measure in children, print side by side ---------------------------------


def run_child(kind: str, path: Path, reference: Path, profile: bool = False) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--path", str(path), "--reference", str(reference)]
    done = subprocess.run(command + (["--profile"] if profile else []), capture_output=True, text=True, check=True)
    if profile:
        sys.stderr.write(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def best_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    best = min(runs, key=lambda run: run["seconds"])
    return {**best, "cpu_s": min(run["cpu_s"] for run in runs), "peak_mb": max(run["peak_mb"] for run in runs)}


def bench_size(rows: int, workdir: Path, reference: Path, repeat: int, profile: bool) -> dict[str, Any]:
    path = workdir / f"table_{rows}.parquet"
    started = time.perf_counter()
    write_table(path, rows, seed=0)
    generated = time.perf_counter() - started
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for _ in range(repeat):  # round robin, so that a busy machine slows every contender alike
        for kind in KINDS:
            runs[kind].append(run_child(kind, path, reference))
    results = {kind: best_of(kind_runs) for kind, kind_runs in runs.items()}
    if profile:
        run_child("guard", path, reference, profile=True)
    file_mb = path.stat().st_size / 2**20
    path.unlink()
    return {"rows": rows, "generate_s": generated, "file_mb": file_mb, **results}


def print_row(result: dict[str, Any]) -> None:
    guard, floor, pandera = result["guard"], result["floor"], result["pandera"]
    print(
        f"{result['rows']:>11,} rows | table {floor['table_mb']:.0f} MB in memory, {result['file_mb']:.0f} MB "
        f"of parquet (generated in {result['generate_s']:.1f} s)"
    )
    for name, run in (("guard", guard), ("floor", floor), ("pandera", pandera)):
        extra = f"  (load {run['load_s']:.2f} s)" if "load_s" in run else ""
        print(
            f"    {name:<8} {run['seconds']:7.2f} s (cpu {run['cpu_s']:6.2f} s)   peak RSS {run['peak_mb']:6.0f} MB "
            f"(+{run['peak_mb'] - run['base_mb']:5.0f} MB over imports){extra}"
        )
    print(
        f"    guard/floor {guard['seconds'] / floor['seconds']:5.2f}x (cpu {guard['cpu_s'] / floor['cpu_s']:.2f}x)"
        f"   pandera/guard {pandera['seconds'] / guard['seconds']:5.2f}x "
        f"(cpu {pandera['cpu_s'] / guard['cpu_s']:.2f}x)   guard peak / table "
        f"{guard['peak_mb'] / floor['table_mb']:5.2f}   guard verdict {guard['verdict']} "
        f"{guard['findings'] or ''}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="comma-separated row counts")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest is kept")
    parser.add_argument("--profile", action="store_true", help="also cProfile one guard run (stderr)")
    parser.add_argument("--child", choices=("guard", "floor", "pandera"), help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--reference", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child_main(args)
        return
    with tempfile.TemporaryDirectory(prefix="guard-bench-") as tmp:
        workdir = Path(tmp)
        reference = workdir / "reference.parquet"
        write_table(reference, REFERENCE_ROWS, seed=1)
        print(
            f"guard benchmark: 10 columns, row groups of {ROW_GROUP:,}, best of {args.repeat}; "
            "peak = VmHWM of each child process"
        )
        for rows in (int(size) for size in args.sizes.split(",")):
            print_row(bench_size(rows, workdir, reference, args.repeat, args.profile))


if __name__ == "__main__":
    main()
