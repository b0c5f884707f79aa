"""False blocks on real data, and injected failures: the guard vs pandera vs evidently, on the same batches.

    python benchmarks/realdata_bench.py [--datasets a,b] [--tools guard,pandera,evidently] [--cadence month]

For each dataset of `chaos.corpus.realdata` (real public data shipped inside pip packages, loaded offline): the
reference is the first K batches; every later clean batch is judged in time order and, when it passes,
rolled into that tool's window of the last N = K batches (`chaos.corpus.falsealarms.walk`). A BLOCKED verdict
on a clean batch is a false block. Then failures are injected into the newest batch only and into all
rows, and each tool's verdict is printed: detected (blocked) or missed; for the guard also whether a
finding names the true cause (kind and column).

- guard: every check, against a `profiles.reference.Reference` merged from batch profiles; guard-leak: the
  same with target_leakage findings left out of the verdict (what the other checks catch alone);
  "guard names" is right when a blocking finding names the true cause (kind, column, and the unit a
  unit change wrote the column in);
- pandera: `pandera.infer_schema` on the reference window's rows (its checks on the event-time column
  dropped: an inferred "time <= the reference's last time" would fail every later batch by
  construction), then `validate(lazy=True)`: blocked when it raises;
- evidently (the `bench` extra): `Report([DataDriftPreset()])` on every column but the event time (time
  always moves on), blocked when the preset says the dataset drifted (its default: at least half of the
  columns drifted); an error (a column it did not expect) is shown as "error". evidently 0.7 imports a helper
  pandas 3 removed; the bench restores it before importing evidently.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaos.corpus.falsealarms import (  # noqa: E402
    INJECTIONS,
    Batch,
    GuardJudge,
    Judge,
    Outcome,
    WalkResult,
    injected_outcomes,
    load_batches,
    named_right,
    walk,
)
from chaos.corpus.realdata import DATASETS, RealDataset  # noqa: E402


@dataclass
class PanderaJudge:
    time_column: str
    name: str = "pandera"

    def judge(self, reference: Sequence[Batch], candidate: Batch) -> Outcome:
        import pandera.pandas as pa

        frame = pd.concat([b.frame for b in reference], ignore_index=True)
        try:
            schema = pa.infer_schema(frame)
            schema = schema.update_column(self.time_column, checks=[])
            schema.validate(candidate.frame, lazy=True)
        except pa.errors.SchemaErrors as exc:
            failed = exc.failure_cases
            reasons = {f"{str(row['check']).split('(')[0]}:{row['column']}" for _, row in failed.iterrows()}
            return Outcome(True, tuple(sorted(reasons))[:12])
        except Exception as exc:  # noqa: BLE001 - a peer that breaks gives no verdict
            return Outcome(None, (f"error: {type(exc).__name__}",))
        return Outcome(False)


@dataclass
class EvidentlyJudge:
    time_column: str
    name: str = "evidently"

    def __post_init__(self) -> None:
        import pandas.core.dtypes.common as common

        if not hasattr(common, "infer_dtype_from_object"):  # removed in pandas 3; evidently 0.7 imports it
            common.infer_dtype_from_object = lambda dtype: pd.api.types.pandas_dtype(dtype).type  # type: ignore
        from evidently import Report
        from evidently.presets import DataDriftPreset

        self._report = lambda: Report([DataDriftPreset()])

    def judge(self, reference: Sequence[Batch], candidate: Batch) -> Outcome:
        frame = pd.concat([b.frame for b in reference], ignore_index=True).drop(columns=[self.time_column])
        current = candidate.frame.drop(columns=[self.time_column], errors="ignore")  # time always "drifts"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = self._report().run(current_data=current, reference_data=frame).dict()
        except Exception as exc:  # noqa: BLE001
            return Outcome(None, (f"error: {type(exc).__name__}",))
        share = drift_share(result)
        if share is None:
            return Outcome(None, ("error: no DriftedColumnsCount",))
        return Outcome(share >= 0.5, (f"drifted share {share:.2f}",) if share >= 0.5 else ())


def drift_share(result: dict[str, Any]) -> float | None:
    """The share of columns an evidently report's DriftedColumnsCount metric calls drifted (None: no such metric)."""
    for metric in result.get("metrics", []):
        value = metric.get("value")
        if isinstance(value, dict) and "share" in value and "count" in value:
            return float(value["share"])
    return None


def judges_for(dataset: RealDataset, tools: Sequence[str]) -> list[Judge]:
    made: list[Judge] = []
    for tool in tools:
        if tool == "guard":
            made.append(GuardJudge(dataset.contract()))
        elif tool == "guard-leak":  # the guard with target_leakage left out of the verdict
            made.append(GuardJudge(dataset.contract(), name="guard-leak", ignore=frozenset({"target_leakage"})))
        elif tool == "pandera":
            made.append(PanderaJudge(dataset.time_column))
        elif tool == "evidently":
            made.append(EvidentlyJudge(dataset.time_column))
        else:
            raise SystemExit(f"unknown tool {tool!r}: choose among guard, pandera, evidently")
    return made


def run_dataset(dataset: RealDataset, tools: Sequence[str], cadence: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="realdata-bench-") as tmp:
        started = time.perf_counter()
        batches = load_batches(dataset, Path(tmp), cadence)
        judges = judges_for(dataset, tools)
        walks: dict[str, WalkResult] = {}
        for judge in judges:
            walks[judge.name] = walk(dataset, batches, judge)
        injected = injected_outcomes(dataset, batches, judges, {n: w.window for n, w in walks.items()}, Path(tmp))
        elapsed = time.perf_counter() - started
    first = walks[judges[0].name]
    print(
        f"\n== {dataset.name} ({dataset.package}): {len(batches)} {cadence or dataset.cadence} batches, "
        f"{sum(len(b.frame) for b in batches):,} rows; reference = first {dataset.reference_batches}, "
        f"rolling window of {dataset.reference_batches}; {first.batches} clean batches judged ({elapsed:.1f} s)"
    )
    print(f"  {'tool':<10} {'false blocks':>14}  what blocked (count of batches)")
    for name, result in walks.items():
        shown = ", ".join(f"{reason} {count}" for reason, count in list(result.reasons.items())[:8])
        more = " …" if len(result.reasons) > 8 else ""
        errors = f"; {len(result.errors)} errors" if result.errors else ""
        print(f"  {name:<10} {len(result.false_blocks):>6} of {result.batches:<5}  {shown}{more}{errors}")
    print(
        "  injected (true cause)            scope  "
        + "  ".join(f"{j.name:<10}" for j in judges)
        + "  guard names  guard heal (verified on the training view)"
    )
    control = [next(o for i, s, t, o in injected if i == "clean" and t == j.name) for j in judges]
    print(
        f"  {'clean newest batch (control)':<32} {'batch':<6} "
        + "  ".join(f"{'BLOCKED' if o.blocked else 'error' if o.blocked is None else 'passed':<10}" for o in control)
    )
    for injection in INJECTIONS:
        for scope in ("batch", "table"):
            cells, guard_reasons, heal = [], (), ""
            for judge in judges:
                outcome = next(o for i, s, t, o in injected if i == injection.name and s == scope and t == judge.name)
                cells.append("error" if outcome.blocked is None else "detected" if outcome.blocked else "MISSED")
                if judge.name == "guard" or (judge.name == "guard-leak" and not guard_reasons):
                    guard_reasons, heal = outcome.reasons, outcome.heal or "-"
            right = "right" if named_right(guard_reasons, dataset, injection.name) else "no"
            label = f"{injection.name} ({injection.expected})"
            print(
                f"  {label:<32} {scope:<6} "
                + "  ".join(f"{c:<10}" for c in cells)
                + (f"  {right:<11}  {heal}" if "guard" in tools else "")
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated dataset names")
    parser.add_argument(
        "--tools",
        default="guard,guard-leak,pandera,evidently",
        help="comma-separated: guard, guard-leak (target_leakage left out), pandera, evidently",
    )
    parser.add_argument("--cadence", default=None, help="month, week or day (default: each dataset's own)")
    args = parser.parse_args()
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    print(
        "real-data false alarms: clean batches in time order against a rolling reference "
        "(a false block = BLOCKED on a clean batch); then injected failures"
    )
    for name in args.datasets.split(","):
        run_dataset(DATASETS[name.strip()], tools, args.cadence)


if __name__ == "__main__":
    main()
