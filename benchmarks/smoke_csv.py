"""Smoke test of a CSV table with ISO-8601 text times, through the real `kintsugi` CLI in subprocesses.

In a temporary folder: a CSV table (ISO text with offsets, as pandas' to_csv writes UTC times), then `init --yes`,
`run` (a first champion), `land` of a new CSV batch and `run` again. Prints one line per step with its exit code;
exits 1 if any step fails. `make smoke` runs it (about half a minute).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

START = datetime(2026, 3, 1, tzinfo=timezone.utc)


def rows(first_hour: int, hours: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    load, speed = rng.normal(10, 2, hours).round(3), rng.uniform(0, 5, hours).round(3)
    target = (3 * load - 2 * speed + rng.normal(0, 0.3, hours)).round(3)
    ts = pd.date_range(START + timedelta(hours=first_hour), periods=hours, freq="h", tz="UTC")
    return pd.DataFrame({"ts": ts, "load": load, "speed": speed, "target": target})


def at(hours: int) -> str:
    return (START + timedelta(hours=hours)).isoformat()


def steps(root: Path) -> list[tuple[str, list[str]]]:
    ws = ["--workspace", str(root)]
    init = ["init", "smoke", "--data", str(root / "data"), "--target", "target", "--time-column", "ts", "--yes"]
    return [
        ("init", [*init, "--now", at(300), *ws]),
        ("run", ["run", "smoke", "--now", at(301), *ws]),
        ("land", ["land", "smoke", str(root / "batch.csv"), "--now", at(349), *ws]),
        ("run", ["run", "smoke", "--now", at(350), *ws]),
    ]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="kintsugi-smoke-csv-") as folder:
        root = Path(folder)
        (root / "data").mkdir()
        rows(0, 300, 1).to_csv(root / "data" / "part-0.csv", index=False)
        rows(300, 48, 2).to_csv(root / "batch.csv", index=False)
        for name, args in steps(root):
            began = time.monotonic()
            done = subprocess.run([sys.executable, "-m", "controlplane", *args], capture_output=True, text=True)
            said = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
            line = next((s for s in said if s.startswith(("outcome:", "error:"))), said[-1] if said else "")
            print(f"{name:<5} exit {done.returncode}  {time.monotonic() - began:5.1f}s  {line[:110]}")
            if done.returncode != 0:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
