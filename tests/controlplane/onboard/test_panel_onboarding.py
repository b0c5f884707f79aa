"""A periodic panel (one row per entity and period, every row of a period stamped with its first instant) onboarded
with `kintsugi init` and no code: its key is the entity and the period, a key that repeats is refused in one line
with nothing written, and the next clean period runs without a volume or placeholder block."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from controlplane.workspace import Workspace

from onboard_support import cli

PIPELINE = "panel"
ENTITIES = 30


def _periods(first: int, count: int, seed: int = 11) -> pd.DataFrame:
    """Yearly periods from 2001 + first: entity, a signed score, a flag that switches on in 2008, the target."""
    rng = np.random.default_rng(seed + first)
    frames = []
    for year in range(2001 + first, 2001 + first + count):
        level = rng.normal(0, 20, ENTITIES).round(2)  # a signed quantity: negative on clean rows
        frames.append(
            pd.DataFrame(
                {
                    "period": pd.Timestamp(f"{year}-01-01", tz="UTC"),
                    "entity": [f"e{j:02d}" for j in range(ENTITIES)],
                    "level": level,
                    "flag": int(year >= 2008),
                    "target": (3 * level + rng.normal(50, 2, ENTITIES)).round(2),
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    return frame


def _init(root: Path, data: Path, *keys: str) -> tuple[int, str, str]:
    key_args = [arg for k in keys for arg in ("--key", k)]
    return cli(
        "init",
        PIPELINE,
        "--data",
        str(data),
        "--target",
        "target",
        "--time-column",
        "period",
        *key_args,
        "--now",
        "2007-01-01T02:00:00Z",
        "--yes",
        workspace=root,
    )


def test_a_panel_key_is_its_entity_and_its_period_and_the_next_periods_run_clean(tmp_path):
    root, data = tmp_path / "ws", tmp_path / "first.parquet"
    _periods(0, 6).to_parquet(data, index=False)
    code, _, err = _init(root, data, "entity")
    assert code == 2 and err.count("\n") == 1 and "--key entity is not unique" in err and "its period" in err
    assert not (root / "pipelines" / f"{PIPELINE}.yaml").exists()  # nothing half-written

    code, out, err = _init(root, data, "entity", "period")
    assert code == 0, err
    contract = (Workspace(root).contracts / f"{PIPELINE}.odcs.yaml").read_text()
    assert "minimum" not in contract.split("name: level", 1)[1].split("name:", 1)[0]  # signed: not bounded at 0
    code, out, err = cli("run", PIPELINE, "--now", "2007-01-01T03:00:00Z", "--json", workspace=root)
    assert code in (0, 1, 3), err  # decided, blocked or paused: never an error
    for first in (6, 7):  # 2007, then 2008, when the flag switches on for every row of the period
        batch = tmp_path / f"batch-{first}.parquet"
        _periods(first, 1).to_parquet(batch, index=False)
        now = f"{2002 + first}-01-01T01:00:00Z"
        code, _, err = cli("land", PIPELINE, str(batch), "--now", now, workspace=root)
        assert code == 0, err
        code, out, err = cli("run", PIPELINE, "--now", now.replace("T01", "T02"), "--json", workspace=root)
        record = json.loads(out)
        (detect,) = [e for e in record["events"] if e["stage"] == "detect"]
        assert detect["evidence"]["rows"] == ENTITIES  # the new period, guarded
        blocking = [
            f"{f['kind']}:{f.get('column')}"
            for e in record["events"]
            for f in (e.get("evidence") or {}).get("findings", [])
            if f.get("severity") == "block"
        ]
        assert blocking == [], blocking
        assert record["status"] != "blocked", record["outcome"]  # a candidate that regresses keeps the champion
