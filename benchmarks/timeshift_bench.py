"""How many hours a clock must move before the guard names it: every clean batch of each real hourly or daily
dataset, moved by a few hours, against the rolling reference of the batches before it.

    python benchmarks/timeshift_bench.py [--hours -6,-5,-4,-3,-2,2,3,4,5,6] [--datasets a,b]

For each dataset of `chaos.realdata` and each offset: the batches (after the first K) whose time column alone
moved by that many hours, and of them how many the timestamp_shift check names, how many on the time column,
and how many within an hour of the true offset. The clean batches themselves are judged too: a finding on one
is a false alarm. The pure guard only: the control plane's pins (`controlplane.stages.batchshift`, `tableshift`) then
place a named shift to the hour where the kept batches say where it went.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chaos.falsealarms import load_batches  # noqa: E402
from chaos.realdata import DATASETS  # noqa: E402
from guard.checks.timeshift import check_timestamp_shift  # noqa: E402
from guard.context import GuardContext  # noqa: E402
from guard.findings import Finding  # noqa: E402
from profiles.reference import Reference, build_reference  # noqa: E402
from profiles.snapshot import read_snapshot  # noqa: E402


def _named(dataset_name: str, hours: list[int], scratch: Path) -> None:
    dataset = DATASETS[dataset_name]
    contract, time_column = dataset.contract(), dataset.time_column
    batches = load_batches(dataset, scratch)
    k = dataset.reference_batches
    started = time.perf_counter()
    counts = {h: [0, 0, 0] for h in hours}
    false_alarms = 0
    for i in range(k, len(batches)):
        reference = build_reference([b.snapshot.batch for b in batches[i - k : i] if b.snapshot.batch is not None])
        frame = batches[i].frame

        def shifts(rows: pd.DataFrame, name: str, reference: Reference = reference) -> list[Finding]:
            path = scratch / f"{name}.parquet"
            rows.to_parquet(path, index=False)
            snapshot = read_snapshot(path, time_column=time_column, batch_id=name)
            return list(check_timestamp_shift(GuardContext(contract.dataset_urn, contract, snapshot, reference, (), 0)))

        false_alarms += bool(shifts(frame, f"clean-{i}"))
        for h in hours:
            found = shifts(frame.assign(**{time_column: frame[time_column] + pd.Timedelta(hours=h)}), f"{h}-{i}")
            on_time = [f for f in found if f.column == time_column]
            near = [f for f in on_time if abs(int(f.params.get("offset_hours", 99)) - h) <= 1]
            counts[h] = [counts[h][0] + bool(found), counts[h][1] + bool(on_time), counts[h][2] + bool(near)]
    judged = len(batches) - k
    print(f"== {dataset_name}: {judged} batches, false alarms on the clean ones: {false_alarms}")
    print("  hours  named  on the time column  within an hour")
    for h in hours:
        named, on_column, within = counts[h]
        print(f"  {h:+5d}  {named:3d}/{judged}  {on_column:3d}/{judged}            {within:3d}/{judged}")
    print(f"  ({time.perf_counter() - started:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", default="-6,-5,-4,-3,-2,2,3,4,5,6")
    parser.add_argument("--datasets", default=",".join(sorted(DATASETS)))
    args = parser.parse_args()
    hours = [int(h) for h in args.hours.split(",")]
    for name in args.datasets.split(","):
        if name not in DATASETS:
            parser.error(f"unknown dataset {name!r}: use some of {', '.join(sorted(DATASETS))}")
        with tempfile.TemporaryDirectory() as scratch:
            _named(name, hours, Path(scratch))


if __name__ == "__main__":
    main()
