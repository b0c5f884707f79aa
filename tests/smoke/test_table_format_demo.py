"""`kintsugi demo --format delta|iceberg`: the same story on a table format. Each batch lands as one commit and each
heal is one commit on the version the guard read; the passport names the version trained on; undo is time travel
back to exactly the rows landed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from deltalake import DeltaTable

from tables.iceberg import workspace_catalog

from smoke_support import PIPELINE, kintsugi, the_demo_shows_the_served_harm_once_and_quietly


def _delta_commits(ws: Path) -> list[str]:
    """The table's commits, oldest first, by the operation each made."""
    history = sorted(DeltaTable(str(ws / "data" / "eta_features")).history(), key=lambda h: h["version"])
    return [h["operationParameters"]["mode"] for h in history]


def _iceberg_table(ws: Path):
    return workspace_catalog(ws).load_table("delivery.eta_features")


def _iceberg_commits(ws: Path) -> list[str]:
    return [s.summary.operation.value for s in _iceberg_table(ws).snapshots()]


def _rows(ws: Path, kind: str, version: int | None = None) -> pd.DataFrame:
    """A version's rows by content (sorted by the key), whatever files hold them."""
    if kind == "delta":
        frame = DeltaTable(str(ws / "data" / "eta_features"), version=version).to_pandas()
    else:
        frame = _iceberg_table(ws).scan(snapshot_id=version).to_pandas()
    return frame.sort_values("order_id", kind="stable").reset_index(drop=True)


def _current(ws: Path, kind: str) -> str:
    if kind == "delta":
        return f"delta version {DeltaTable(str(ws / 'data' / 'eta_features')).version()}"
    return f"iceberg snapshot {_iceberg_table(ws).current_snapshot().snapshot_id}"


@pytest.mark.parametrize("kind", ["delta", "iceberg"])
def test_the_demo_on_a_table_format_heals_in_one_commit_and_undoes_by_time_travel(kind: str, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    demo = kintsugi("demo", "--format", kind, "--workspace", str(ws))
    assert demo.returncode == 0, demo.stderr[-1500:]
    the_demo_shows_the_served_harm_once_and_quietly(demo.stdout, demo.stderr)
    # seeded, then each of the two batches landed as one append and healed as one overwrite (Iceberg writes an
    # overwrite as a delete snapshot and an append snapshot, in one catalog commit)
    if kind == "delta":
        assert _delta_commits(ws) == ["ErrorIfExists", "Append", "Overwrite", "Append", "Overwrite"]
    else:
        assert _iceberg_commits(ws) == ["append", "append", "delete", "append", "append", "delete", "append"]
    assert f"as {_current(ws, kind)}" in demo.stdout  # the publish names the version it made
    passport = kintsugi("passport", "show", PIPELINE, "--workspace", str(ws))
    assert passport.returncode == 0, passport.stderr[-1500:]
    assert json.loads(passport.stdout)["body"]["snapshot"]["version"] == _current(ws, kind)
    landed = 3 if kind == "delta" else _iceberg_table(ws).snapshots()[4].snapshot_id  # the second batch, as it landed
    runs = json.loads(kintsugi("runs", "--pipeline", PIPELINE, "--json", "--workspace", str(ws)).stdout)["runs"]
    undo = kintsugi("undo", max(runs, key=lambda r: r["started_ms"])["run_id"], "--workspace", str(ws))
    assert undo.returncode == 0, undo.stderr[-1500:]
    pd.testing.assert_frame_equal(_rows(ws, kind), _rows(ws, kind, landed), check_exact=True)
