"""The pin of a table in each format it can be kept in, against the floor, in one run: what detect pays before the
guard reads a row.

    python benchmarks/format_bench.py [--rows 10000000] [--rounds 3] [--files 4]

The table: `guard_bench.write_table`'s 10 columns (a string key, an event time, five numbers, two categories, a
label), N rows, written once as one parquet file, as a Delta table and as an Iceberg table in a SQL catalog on
sqlite, each of the two formats in --files commits (setup, not timed). Each round runs every contender back to
back, in this process (imports done before the first round):

- floor: pyarrow reads every column of every data file of the parquet table once (`pq.read_table`): the least a
  pin that decodes the rows must read.
- pin parquet / delta / iceberg: `tables.locations.parse_location(...).pin(folder)`, the run's pin as detect
  takes it (a fresh folder each time).

Per round, each pin's wall and CPU are divided by that round's floor; the lines print the median of those
per-round ratios and their range, with the 1-minute load average of every round (a round whose load passed the
cores is marked: other work shared them).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from guard_bench import _cpu_seconds, write_table  # noqa: E402

FORMATS = ("parquet", "delta", "iceberg")


def prepare(folder: Path, rows: int, files: int) -> dict[str, str]:
    """The same rows in each format; returns each table's `data:` text (relative to `folder`)."""
    import pyarrow.parquet as pq

    from demo.feature_tables import write_rows

    write_table(folder / "table.parquet", rows, seed=7)
    table = pq.read_table(folder / "table.parquet")
    step = -(-rows // files)
    for start in range(0, rows, step):
        for data in ("delta", "iceberg:bench.table"):
            write_rows(folder, data, table.slice(start, step), append=True)
    return {"parquet": "table.parquet", "delta": "delta", "iceberg": "iceberg:bench.table"}


def floor_once(folder: Path) -> None:
    import pyarrow.parquet as pq

    pq.read_table(folder / "table.parquet")


def pin_once(folder: Path, data: str, into: Path) -> None:
    from tables.locations import parse_location

    parse_location(data, folder).pin(into)
    shutil.rmtree(into)


def timed(work: Callable[[], None]) -> tuple[float, float]:
    cpu, started = _cpu_seconds(), time.perf_counter()
    work()
    return time.perf_counter() - started, _cpu_seconds() - cpu


def spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):5.2f}x [{min(ratios):.2f}-{max(ratios):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=4, help="commits each table-format table is written in")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="kintsugi-format-bench-") as work:
        folder = Path(work)
        started = time.perf_counter()
        print(f"writing {args.rows:,} rows as parquet, Delta ({args.files} commits) and Iceberg ({args.files} commits)")
        tables = prepare(folder, args.rows, args.files)
        print(f"  set up in {time.perf_counter() - started:.0f} s")
        ratios: dict[str, list[tuple[float, float]]] = {name: [] for name in FORMATS}
        for index in range(args.rounds):
            load = os.getloadavg()[0]
            floor = timed(lambda: floor_once(folder))
            said = [f"round {index + 1}: load {load:.1f}{' (over the cores)' if load > cores else ''}"]
            said.append(f"floor {floor[0]:.2f} s")
            for name in FORMATS:
                wall, cpu = timed(lambda name=name: pin_once(folder, tables[name], folder / f"pin-{name}"))
                ratios[name].append((wall / floor[0], cpu / max(floor[1], 1e-9)))
                said.append(f"{name} {wall:.2f} s")
            print("  " + ", ".join(said))
        label = f"{args.rows / 1e6:g}M" if args.rows >= 1_000_000 else f"{args.rows:,}"
        print(f"\npin/floor {label} (median of {args.rounds} per-round ratios [range]):")
        for name in FORMATS:
            walls, cpus = [w for w, _ in ratios[name]], [c for _, c in ratios[name]]
            print(f"  pin/floor {label} {name + ':':<9} wall {spread(walls)}  cpu {spread(cpus)}")


if __name__ == "__main__":
    main()
