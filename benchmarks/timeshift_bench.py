"""How many hours a clock must move before the guard names it: every clean batch of each real hourly or daily
dataset, moved by a few hours, against the reference of the batches before it.

    python benchmarks/timeshift_bench.py [--hours -6,-5,-4,-3,-2,2,3,4,5,6] [--datasets a,b] [--corpus a,b]

For each dataset of `chaos.corpus.realdata` (against the rolling reference of its K batches before it), each table of
`chaos.corpus.tables` given (`--corpus`: tables whose times fall through the day, cut into their own batches, against
every batch before, from their `init_batches` on, as a kept workspace grows its reference), and each offset: the
batches (after the first K) whose time column alone moved by that many hours, and of them how many the
timestamp_shift check names, how many on the time column, and how many within an hour of the true offset. The clean
batches themselves are judged too: a finding on one is a false alarm. The pure guard only: the control plane's pins
(`controlplane.stages.batchshift`, `tableshift`) then place a named shift to the hour where the kept batches say
where it went.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from chaos.corpus.falsealarms import load_batches  # noqa: E402
from chaos.corpus.realdata import DATASETS  # noqa: E402
from chaos.corpus.tables import TABLES  # noqa: E402
from guard.checks.timeshift import check_timestamp_shift  # noqa: E402
from guard.context import GuardContext  # noqa: E402
from guard.contract import ColumnContract, Contract  # noqa: E402
from guard.findings import Finding  # noqa: E402
from profiles.profile import BatchProfile  # noqa: E402
from profiles.reference import Reference, build_reference  # noqa: E402
from profiles.snapshot import read_snapshot  # noqa: E402

# corpus tables whose times fall through the day: orders over a business day (rows per hour), a half-hourly
# measurement (a flat count of rows, a diurnal value)
CORPUS = ("pizza_orders", "elec_demand")


class Walk:
    """A table's contract, time column and batches (rows and batch profile each, oldest first), and which batches
    the reference of batch i holds."""

    def __init__(
        self,
        contract: Contract,
        time_column: str,
        batches: list[tuple[pd.DataFrame, BatchProfile]],
        k: int,
        rolling: bool,
    ) -> None:
        self.contract, self.time_column, self.batches, self.k, self.rolling = contract, time_column, batches, k, rolling

    def reference(self, i: int) -> Reference:
        return build_reference([b for _, b in self.batches[i - self.k if self.rolling else 0 : i]])


def _dataset(name: str, scratch: Path) -> Walk:
    dataset = DATASETS[name]
    batches = [(b.frame, b.snapshot.batch) for b in load_batches(dataset, scratch) if b.snapshot.batch is not None]
    return Walk(dataset.contract(), dataset.time_column, batches, dataset.reference_batches, rolling=True)


def _corpus(name: str, scratch: Path) -> Walk:
    """A corpus table, its contract each column's profiled type."""
    table = TABLES[name]
    batches = []
    for batch in table.batches():
        path = scratch / f"{name}-{batch.batch_id}.parquet"
        batch.rows.to_parquet(path, index=False)
        profile = read_snapshot(path, time_column=table.time_column, batch_id=batch.batch_id).batch
        assert profile is not None
        batches.append((batch.rows, profile))
    types = batches[0][1].profile.columns
    contract = Contract(
        f"urn:li:dataset:(urn:li:dataPlatform:file,corpus.{name},PROD)",
        tuple(ColumnContract(c, types[c].logical_type) for c in table.columns),
        event_timestamp_column=table.time_column,
    )
    return Walk(contract, table.time_column, batches, table.init_batches, rolling=False)


def _named(name: str, walk: Walk, hours: list[int], scratch: Path) -> None:
    contract, time_column = walk.contract, walk.time_column
    started = time.perf_counter()
    counts = {h: [0, 0, 0] for h in hours}
    false_alarms = 0
    for i in range(walk.k, len(walk.batches)):
        reference = walk.reference(i)
        frame = walk.batches[i][0]

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
    judged = len(walk.batches) - walk.k
    print(f"== {name}: {judged} batches, false alarms on the clean ones: {false_alarms}")
    print("  hours  named  on the time column  within an hour")
    for h in hours:
        named, on_column, within = counts[h]
        print(f"  {h:+5d}  {named:3d}/{judged}  {on_column:3d}/{judged}            {within:3d}/{judged}")
    print(f"  ({time.perf_counter() - started:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", default="-6,-5,-4,-3,-2,2,3,4,5,6")
    parser.add_argument("--datasets", default=",".join(sorted(DATASETS)))
    parser.add_argument("--corpus", default=",".join(CORPUS), help="corpus tables, comma-separated ('' for none)")
    args = parser.parse_args()
    hours = [int(h) for h in args.hours.split(",")]
    chosen = [(n, False) for n in args.datasets.split(",") if n] + [(n, True) for n in args.corpus.split(",") if n]
    for name, corpus in chosen:
        known = TABLES if corpus else DATASETS
        if name not in known:
            parser.error(f"unknown {'corpus table' if corpus else 'dataset'} {name!r}: use some of {', '.join(known)}")
        with tempfile.TemporaryDirectory() as scratch:
            _named(name, (_corpus if corpus else _dataset)(name, Path(scratch)), hours, Path(scratch))


if __name__ == "__main__":
    main()
