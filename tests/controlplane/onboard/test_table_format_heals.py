"""A unit failure in a Delta Lake or Iceberg table, through the CLI as a team runs it: `init` on the table, a first
champion, a month landed in another unit (one commit), the run that heals it (one commit on the version the guard
read, named in the passport), and `undo` (time travel back to exactly the rows landed)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd
import pyarrow as pa
import pytest
from datahub.metadata.schema_classes import DataProcessInstancePropertiesClass
from deltalake import DeltaTable, write_deltalake
from mlflow import MlflowClient
from pyiceberg.catalog.sql import SqlCatalog

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.urns import run_urn
from controlplane.workspace import Workspace

from onboard_support import NAME, RUN_AT, UPSTREAM, cli, init_args, weather

LATER_LAND, LATER_RUN = "2013-02-01T06:00:00+00:00", "2013-02-01T07:00:00+00:00"


@dataclass(frozen=True)
class Format:
    data: str  # the spec's `data:`
    create: Callable[[Path, pd.DataFrame], None]  # the table, written as its team's own jobs write it
    version: Callable[[Path], str]  # the version the table is at, as the passport names it
    rows: Callable[[Path], pd.DataFrame]  # its rows now, by content


def _delta_table(root: Path) -> Path:
    return root / "data" / "weather"


def _catalog(root: Path) -> SqlCatalog:
    (root / "iceberg" / "warehouse").mkdir(parents=True, exist_ok=True)
    warehouse = (root / "iceberg" / "warehouse").as_uri()
    return SqlCatalog("kintsugi", uri=f"sqlite:///{root}/iceberg/catalog.db", warehouse=warehouse)


def _create_iceberg(root: Path, frame: pd.DataFrame) -> None:
    catalog = _catalog(root)
    catalog.create_namespace("weather")
    rows = pa.Table.from_pandas(frame, preserve_index=False)
    catalog.create_table("weather.daily", schema=rows.schema).append(rows)


def _by_date(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("date", kind="stable").reset_index(drop=True)


FORMATS = {
    "delta": Format(
        "data/weather",
        lambda root, frame: write_deltalake(str(_delta_table(root)), frame),
        lambda root: f"delta version {DeltaTable(str(_delta_table(root))).version()}",
        lambda root: _by_date(DeltaTable(str(_delta_table(root))).to_pandas()),
    ),
    "iceberg": Format(
        "iceberg:weather.daily",
        _create_iceberg,
        lambda root: f"iceberg snapshot {_catalog(root).load_table('weather.daily').current_snapshot().snapshot_id}",
        lambda root: _by_date(_catalog(root).load_table("weather.daily").scan().to_pandas()),
    ),
}


def _mlflow_training_input(root: Path, run_id: str):
    client = MlflowClient(tracking_uri=Workspace(root).mlflow_uri)
    (found,) = client.search_runs(
        [e.experiment_id for e in client.search_experiments()], f"tags.`kintsugi.run_id` = '{run_id}'"
    )
    return found.inputs.dataset_inputs[0].dataset


@pytest.mark.parametrize("kind", list(FORMATS))
def test_a_unit_failure_is_healed_in_one_commit_and_undone_to_the_rows_landed(kind, tmp_path, monkeypatch):
    table = FORMATS[kind]
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.chdir(root)
    table.create(root, weather())
    assert cli(*init_args(table.data), workspace=root)[0] == 0
    assert cli("run", NAME, "--now", RUN_AT, workspace=root)[0] == 0
    month = weather("2013-01-01", "2013-02-01")
    month["temp_min"] = month["temp_min"] * 9 / 5 + 32  # the month arrives in another unit
    month.to_parquet(tmp_path / "fahrenheit.parquet", index=False)
    fahrenheit = str(tmp_path / "fahrenheit.parquet")
    code, out, err = cli("land", NAME, fahrenheit, "--now", LATER_LAND, "--upstream", UPSTREAM, workspace=root)
    assert code == 0, err + out
    landed, landed_rows = table.version(root), table.rows(root)
    code, out, err = cli("run", NAME, "--now", LATER_RUN, "--json", workspace=root)
    record = json.loads(out)
    assert code == 0 and record["status"] == "promoted", (code, record["outcome"], err)
    healed = table.rows(root)
    celsius = ((month["temp_min"] - 32) * 5 / 9).tolist()
    assert healed["temp_min"].tolist() == pytest.approx(weather()["temp_min"].tolist() + celsius, abs=1e-9)
    published = [e for e in record["events"] if e["stage"] == "publish"][-1]["evidence"]
    assert published["snapshot"] == table.version(root) != landed  # the commit the heal made is the table's now
    code, out, err = cli("passport", "show", NAME, workspace=root)
    assert code == 0 and json.loads(out)["body"]["snapshot"]["version"] == table.version(root), err + out[-2000:]
    trained = _mlflow_training_input(root, record["run_id"])  # MLflow's dataset input names the same version
    assert json.loads(trained.source)["version"] == table.version(root)
    lineage = LiteMetadata(Workspace(root).datahub_db).aspect(
        run_urn(record["run_id"]), DataProcessInstancePropertiesClass
    )
    assert lineage.customProperties["kintsugi.tableVersion"] == table.version(root)  # and DataHub's run lineage
    code, out, err = cli("undo", record["run_id"], workspace=root)
    assert code == 0 and f"back at the rows of {landed}" in out, err + out  # undo says where time travel took it
    pd.testing.assert_frame_equal(table.rows(root), landed_rows, check_exact=True)  # back to exactly the rows landed
    if kind == "iceberg":  # Iceberg moves the branch back to the very snapshot; Delta restores it as a new version
        assert table.version(root) == landed
