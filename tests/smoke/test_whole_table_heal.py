"""An upstream that rewrites the whole table in other units, twice: each time the guard names it, the heal
converts every row back once, verify passes and the incident is resolved; the table ends as it began."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from smoke_support import PIPELINE, kintsugi, the_demo_shows_the_served_harm_once_and_quietly


def _rewrite_in_metres(table: Path) -> None:
    """What the producer does: the whole table, history included, written again with distance in metres."""
    frame = pd.read_parquet(table)
    frame["distance_km"] *= 1000.0
    frame.to_parquet(table.with_suffix(".tmp"), index=False)
    os.replace(table.with_suffix(".tmp"), table)


def test_a_whole_table_in_metres_twice_is_healed_twice_back_to_the_clean_values(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    demo = kintsugi("demo", "--workspace", str(ws))
    assert demo.returncode == 0, demo.stderr[-1500:]
    the_demo_shows_the_served_harm_once_and_quietly(demo.stdout, demo.stderr)
    table = ws / "data" / "eta_features.parquet"
    clean = pd.read_parquet(table)
    for attempt in (1, 2):
        _rewrite_in_metres(table)
        done = kintsugi("run", PIPELINE, "--workspace", str(ws))
        assert done.returncode == 0, f"run {attempt}: {done.stdout[-1500:]}{done.stderr[-500:]}"
        assert "verify   CLEAN" in done.stdout and "unit_rescale on distance_km" in done.stdout
    incidents = kintsugi("incidents", "--workspace", str(ws)).stdout
    units = [line for line in incidents.splitlines() if "unit_mismatch on distance_km" in line]
    assert len(units) >= 2 and all(line.startswith("RESOLVED") for line in units), incidents
    healed = pd.read_parquet(table)
    pd.testing.assert_frame_equal(healed, clean, check_exact=True)
    assert (healed["distance_km"].to_numpy() == clean["distance_km"].to_numpy()).all()  # every value exactly
