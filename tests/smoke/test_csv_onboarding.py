"""A CSV folder as people write it (ISO-8601 text times with an offset, as pandas' to_csv writes UTC times),
onboarded with `kintsugi init --yes`, run, a new CSV batch landed and run again: every step exits 0."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from smoke_support import kintsugi

START = datetime(2026, 3, 1, tzinfo=timezone.utc)


def _rows(first_hour: int, hours: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    load, speed = rng.normal(10, 2, hours).round(3), rng.uniform(0, 5, hours).round(3)
    target = (3 * load - 2 * speed + rng.normal(0, 0.3, hours)).round(3)
    ts = pd.date_range(START + timedelta(hours=first_hour), periods=hours, freq="h", tz="UTC")
    return pd.DataFrame({"ts": ts, "load": load, "speed": speed, "target": target})


def _at(hours: int) -> str:
    return (START + timedelta(hours=hours)).isoformat()


def test_a_csv_folder_with_iso_text_times_onboards_lands_and_runs(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    _rows(0, 300, 1).to_csv(tmp_path / "data" / "part-0.csv", index=False)
    _rows(300, 48, 2).to_csv(tmp_path / "batch.csv", index=False)
    assert "+00:00" in (tmp_path / "batch.csv").read_text().splitlines()[1]  # text, as a CSV writer stores it
    ws = ["--workspace", str(tmp_path / "ws")]
    init = ["init", "smoke", "--data", str(tmp_path / "data"), "--target", "target", "--time-column", "ts", "--yes"]
    steps = [
        [*init, "--now", _at(300), *ws],
        ["run", "smoke", "--now", _at(301), *ws],
        ["land", "smoke", str(tmp_path / "batch.csv"), "--now", _at(349), *ws],
        ["run", "smoke", "--now", _at(350), *ws],
    ]
    for args in steps:
        done = kintsugi(*args)
        assert done.returncode == 0, f"{args[0]}: {done.stdout[-1500:]}{done.stderr[-800:]}"
        if args[0] == "init":
            assert "ISO-8601 text, parsed as UTC timestamps" in done.stdout + done.stderr
