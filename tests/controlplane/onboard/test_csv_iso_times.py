"""A CSV table whose time column is ISO-8601 text, as CSV writers store it (pandas' to_csv of UTC times, offsets,
Z, none): init reads it as UTC timestamps and says so, land takes a new batch of such text, and the loop runs; a
value that is not ISO-8601 text is one line naming the column and the value, and nothing is written."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from controlplane.runs.journal import list_runs
from controlplane.spec import load_spec
from controlplane.stages.pin import pin_table
from controlplane.vocab import RunStatus
from controlplane.workspace import Workspace

from onboard_support import cli

PIPELINE = "iso-times"
START = datetime(2026, 3, 1, tzinfo=timezone.utc)
SAID = "event time ts: ISO-8601 text, parsed as UTC timestamps (offsets honoured; none given: read as UTC)"


def _rows(first_hour: int, hours: int, seed: int) -> pd.DataFrame:
    """Hourly rows from START + first_hour: a numeric target of three features, ts as UTC timestamps."""
    rng = np.random.default_rng(seed)
    load, speed = rng.normal(10, 2, hours).round(3), rng.uniform(0, 5, hours).round(3)
    kind = rng.choice(["a", "b", "c"], hours)
    target = (3 * load - 2 * speed + (kind == "b") + rng.normal(0, 0.3, hours)).round(3)
    ts = pd.date_range(START + timedelta(hours=first_hour), periods=hours, freq="h", tz="UTC")
    return pd.DataFrame({"ts": ts, "load": load, "speed": speed, "kind": kind, "target": target})


def _init(root: Path, data: str, now: datetime) -> tuple[int, str, str]:
    return cli(
        "init",
        PIPELINE,
        "--data",
        data,
        "--target",
        "target",
        "--time-column",
        "ts",
        "--now",
        now.isoformat(),
        "--yes",
        workspace=root,
    )


def _pinned_times(root: Path, tmp_path: Path) -> list[datetime]:
    ws = Workspace(root)
    pinned = pin_table(ws, load_spec(ws, PIPELINE), tmp_path / "pin")
    return pq.read_table(pinned.path(ws), columns=["ts"]).column("ts").to_pylist()


def test_to_csv_times_with_offsets_onboard_land_and_run_clean(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    (root / "data").mkdir(parents=True)
    monkeypatch.chdir(root)
    for index, part in enumerate((_rows(0, 150, 1), _rows(150, 150, 2))):
        part.to_csv(root / "data" / f"part-{index}.csv", index=False)  # ts as 2026-03-01 00:00:00+00:00
    assert (root / "data" / "part-0.csv").read_text().splitlines()[1].startswith("2026-03-01 00:00:00+00:00,")
    code, out, err = _init(root, "data", START + timedelta(hours=300))
    assert code == 0 and SAID in out, err + out
    assert SAID in (root / "pipelines" / f"{PIPELINE}.yaml").read_text()
    code, out, err = cli("run", PIPELINE, "--now", (START + timedelta(hours=301)).isoformat(), workspace=root)
    assert code == 0 and "APPROVED v1" in out, err + out

    batch = tmp_path / "batch.csv"
    _rows(300, 48, 3).to_csv(batch, index=False)
    at = (START + timedelta(hours=349)).isoformat()
    code, out, err = cli("guard", PIPELINE, "--data", str(batch), "--now", at, "--json", workspace=root)
    assert code == 0 and json.loads(out)["verdict"] == "CLEAN", err + out  # the CSV batch, read as land reads it
    code, out, err = cli(
        "land", PIPELINE, str(batch), "--now", (START + timedelta(hours=349)).isoformat(), workspace=root
    )
    assert code == 0 and "48 rows from batch.csv landed" in out, err + out
    code, out, err = cli("run", PIPELINE, "--now", (START + timedelta(hours=350)).isoformat(), workspace=root)
    assert code == 0 and "detect   CLEAN" in out, err + out
    last = list_runs(Workspace(root))[-1]
    trained = (RunStatus.PROMOTED, RunStatus.NEEDS_REVIEW, RunStatus.REJECTED)  # the gate's verdict is not at issue
    assert last.pipeline == PIPELINE and last.status in trained, last.outcome
    assert [(e.status, e.evidence["rows"]) for e in last.events if e.stage == "detect"] == [("CLEAN", 48)]
    assert _pinned_times(root, tmp_path)[-1] == START + timedelta(hours=347)


def test_offsets_z_and_no_offset_are_read_as_the_utc_instants(tmp_path):
    root = tmp_path / "ws"
    (root / "data").mkdir(parents=True)
    frame = _rows(0, 240, 4)
    instants = list(frame["ts"])
    zones = [timezone(timedelta(hours=2)), timezone.utc, timezone(timedelta(hours=-5)), None]
    text = []
    for index, moment in enumerate(instants):
        zone = zones[index % 4]
        if zone is None:
            text.append(moment.strftime("%Y-%m-%dT%H:%M:%S"))  # no offset: read as UTC
        elif zone is timezone.utc:
            text.append(moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
        else:
            text.append(moment.astimezone(zone).isoformat())  # 2026-03-01T02:00:00+02:00
    assert text[:2] == ["2026-03-01T02:00:00+02:00", "2026-03-01T01:00:00Z"]
    frame.assign(ts=text).to_csv(root / "data" / "table.csv", index=False)
    code, out, err = _init(root, str(root / "data" / "table.csv"), START + timedelta(hours=240))
    assert code == 0 and SAID in out, err + out
    assert _pinned_times(root, tmp_path) == [m.to_pydatetime() for m in instants]


def test_a_time_value_that_is_not_iso_text_names_column_and_value_and_writes_nothing(tmp_path):
    root = tmp_path / "ws"
    (root / "data").mkdir(parents=True)
    frame = _rows(0, 200, 5)
    text = frame["ts"].dt.strftime("%Y-%m-%dT%H:%M:%S").tolist()
    text[57] = "03/02/2026 09:00"
    frame.assign(ts=text).to_csv(root / "data" / "part-0.csv", index=False)
    code, out, err = _init(root, str(root / "data"), START + timedelta(hours=200))
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: "), err + out
    assert "time column 'ts'" in err and "'03/02/2026 09:00'" in err and "ISO-8601" in err, err
    written = [p for p in root.rglob("*") if p.is_file() and "data" not in p.relative_to(root).parts]
    assert written == [] and not list(root.glob("*.db")), written
