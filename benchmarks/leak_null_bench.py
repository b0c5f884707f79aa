"""How often the relations check reads leakage into values changed at random: the null of its monotone rule.

    python benchmarks/leak_null_bench.py [--seeds 20] [--datasets seattle_weather,greensboro_tmy]

`guard.checks.relations` names `target_leakage` where, on the rows that break an order of two columns, one of
them is an exact monotone function of the label. Values dealt out in the label's order do that by construction;
this measures what measured values changed any other way do. For each dataset, each batch after the first K is
judged against the K before it, and the whole table against the K before the newest, as the real-data bench
does. Each of the order's two columns is changed on a random share of the rows (10%, 30%, 50% or all): lowered or
raised by up to 12, halved, shuffled among those rows, or scattered uniformly over the column's range. A trial
"breaks" when the order fails on at least `policy.relation_min_broken` rows; a "fire" is a target_leakage finding. Then, for
contrast, the real-data bench's partial leak (`chaos.corpus.falsealarms.partial_leak`: the same column dealt out in the
label's order) on the same shares.
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

from chaos.corpus.falsealarms import load_batches, partial_leak, true_cause  # noqa: E402
from chaos.corpus.realdata import DATASETS  # noqa: E402
from guard.checks.relations import check_relations  # noqa: E402
from guard.context import GuardContext  # noqa: E402
from guard.kinds import FindingKind  # noqa: E402
from guard.policy import DEFAULT as POLICY  # noqa: E402
from profiles.reference import Reference, build_reference  # noqa: E402
from profiles.snapshot import read_snapshot  # noqa: E402

# each dataset's declared order (its spec's `at_least`): Seattle's temp_min <= temp_max, Greensboro's dew <= air
ORDERS = {name: d.contract().declared_orders[0] for name, d in DATASETS.items() if d.contract().declared_orders}
CHANGES = ("lower", "raise", "halve", "shuffle", "scatter")
SHARES = (0.1, 0.3, 0.5, 1.0)


def changed(values: np.ndarray, how: str, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    out = values.copy()
    if how == "lower":
        out[rows] -= rng.uniform(0, 12, rows.sum())
    elif how == "raise":
        out[rows] += rng.uniform(0, 12, rows.sum())
    elif how == "halve":
        out[rows] *= 0.5
    elif how == "shuffle":
        out[rows] = rng.permutation(out[rows])
    else:
        out[rows] = rng.uniform(np.nanmin(values), np.nanmax(values), rows.sum())
    return np.round(out, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="random trials per case, column and change")
    parser.add_argument("--datasets", default=",".join(ORDERS), help="comma-separated: " + ", ".join(ORDERS))
    args = parser.parse_args()
    print(__doc__.splitlines()[0])
    with tempfile.TemporaryDirectory(prefix="leak-null-") as folder:
        for name in args.datasets.split(","):
            run_dataset(name, Path(folder), args.seeds)


def run_dataset(name: str, folder: Path, seeds: int) -> None:
    started = time.perf_counter()
    dataset = DATASETS[name]
    contract = dataset.contract()
    label = contract.label_column
    assert label is not None
    (folder / name).mkdir()
    batches = load_batches(dataset, folder / name)
    k = dataset.reference_batches
    cases: list[tuple[Reference, pd.DataFrame]] = [
        (build_reference([b.snapshot.batch for b in batches[i - k : i] if b.snapshot.batch]), batches[i].frame)
        for i in range(k, len(batches))
    ]
    table = pd.concat([b.frame for b in batches], ignore_index=True)
    cases.append((build_reference([b.snapshot.batch for b in batches[-k - 1 : -1] if b.snapshot.batch]), table))
    path = folder / name / "trial.parquet"

    def leakage(frame: pd.DataFrame, reference: Reference) -> bool:
        frame.to_parquet(path, index=False)
        snapshot = read_snapshot(path, time_column=dataset.time_column, batch_id="trial")
        context = GuardContext(contract.dataset_urn, contract, snapshot, reference, (), now_ms=0)
        return any(f.kind is FindingKind.TARGET_LEAKAGE for f in check_relations(context))

    low, high = ORDERS[name]
    assert true_cause(dataset, "leak 50% rows")[1] == (high,), "the bench's partial leak must deal out `high`"
    counts = {"random": [0, 0, 0], "label order": [0, 0, 0]}  # trials, breaking the order, leakage found
    for reference, frame in cases:
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            for column in (low, high):
                values = frame[column].to_numpy(dtype=float)
                for how in CHANGES:
                    rows = rng.random(len(frame)) < rng.choice(SHARES)
                    trial = frame.assign(**{column: changed(values, how, rows, rng)})
                    tally(counts["random"], trial, low, high, leakage(trial, reference))
        for share in SHARES:  # the real-data bench's partial leak (into `high`), on each share of the rows
            trial = partial_leak(frame, dataset, share)
            tally(counts["label order"], trial, low, high, leakage(trial, reference))
    print(f"\n== {name}: {low} <= {high}, label {label}; {len(cases)} cases ({time.perf_counter() - started:.0f} s)")
    print(f"  {'changed':<12} {'trials':>7} {'break the order':>16} {'leakage found':>14}")
    for kind, (trials, broke, found) in counts.items():
        print(f"  {kind:<12} {trials:>7} {broke:>16} {found:>14}")


def tally(count: list[int], trial: pd.DataFrame, low: str, high: str, found: bool) -> None:
    count[0] += 1
    count[1] += int((trial[low] > trial[high]).sum() >= POLICY.relation_min_broken)
    count[2] += int(found)


if __name__ == "__main__":
    main()
