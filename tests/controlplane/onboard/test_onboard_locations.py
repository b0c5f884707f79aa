"""Data where teams keep it: a folder of hive partitions, a folder of CSV files, a Delta table, an Iceberg table and
an s3:// prefix each run the loop end to end (init, a first champion, a batch landed, a clean run); a bad location is
one line naming the fix and changes nothing."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from pyiceberg.catalog.sql import SqlCatalog

from controlplane.stages.pin import file_hash
from controlplane.workspace import Workspace
from tests.support import as_nobody

from onboard_support import NAME, RUN_AT, UPSTREAM, cli, init_args, weather

LATER_LAND, LATER_RUN = "2013-02-01T06:00:00+00:00", "2013-02-01T07:00:00+00:00"


def _halves(frame):
    middle = len(frame) // 2
    return frame.iloc[:middle], frame.iloc[middle:]


def _partitions(root: Path, tmp_path: Path) -> tuple[str, Path]:
    for index, half in enumerate(_halves(weather())):  # hive folders: station=... becomes a column
        folder = root / "data" / "weather" / "station=USW00024233"
        folder.mkdir(parents=True, exist_ok=True)
        half.to_parquet(folder / f"part-{index}.parquet", index=False)
    batch = tmp_path / "january.parquet"
    weather("2013-01-01", "2013-02-01").assign(station="USW00024233").to_parquet(batch, index=False)
    return "data/weather/", batch


def _csv_folder(root: Path, tmp_path: Path) -> tuple[str, Path]:
    (root / "data" / "csv").mkdir(parents=True)
    for index, half in enumerate(_halves(weather())):
        half.to_csv(root / "data" / "csv" / f"part-{index}.csv", index=False, date_format="%Y-%m-%d")
    batch = tmp_path / "january.csv"
    weather("2013-01-01", "2013-02-01").to_csv(batch, index=False, date_format="%Y-%m-%d")
    return "data/csv", batch


def _delta(root: Path, tmp_path: Path) -> tuple[str, Path]:
    for index, half in enumerate(_halves(weather())):  # two commits: the pin reads the version, not loose files
        write_deltalake(str(root / "data" / "weather"), half, mode="append" if index else "error")
    batch = tmp_path / "january.parquet"
    weather("2013-01-01", "2013-02-01").to_parquet(batch, index=False)
    return "data/weather", batch


def _iceberg(root: Path, tmp_path: Path) -> tuple[str, Path]:
    (root / "iceberg" / "warehouse").mkdir(parents=True)  # the workspace's own catalog, where `data:` finds it
    warehouse = (root / "iceberg" / "warehouse").as_uri()
    catalog = SqlCatalog("kintsugi", uri=f"sqlite:///{root}/iceberg/catalog.db", warehouse=warehouse)
    catalog.create_namespace("weather")
    first, second = _halves(weather())
    table = catalog.create_table("weather.daily", schema=pa.Schema.from_pandas(first, preserve_index=False))
    for half in (first, second):  # two commits: the pin reads the snapshot
        table.append(pa.Table.from_pandas(half, preserve_index=False))
    batch = tmp_path / "january.parquet"
    weather("2013-01-01", "2013-02-01").to_parquet(batch, index=False)
    return "iceberg:weather.daily", batch


def _s3_prefix(bucket, tmp_path: Path) -> tuple[str, Path]:
    filesystem, name = bucket
    for index, half in enumerate(_halves(weather())):
        local = tmp_path / f"part-{index}.parquet"
        half.to_parquet(local, index=False)
        with filesystem.open_output_stream(f"{name}/weather/part-{index}.parquet") as out:
            out.write(local.read_bytes())
    batch = tmp_path / "january.parquet"
    weather("2013-01-01", "2013-02-01").to_parquet(batch, index=False)
    return f"s3://{name}/weather/", batch


@pytest.mark.parametrize("kind", ["partitions", "csv-folder", "delta", "iceberg", "s3-prefix"])
def test_a_table_kept_where_teams_keep_it_runs_the_loop(kind, tmp_path, request, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.chdir(root)
    if kind == "partitions":
        data, batch = _partitions(root, tmp_path)
    elif kind == "csv-folder":
        data, batch = _csv_folder(root, tmp_path)
    elif kind == "delta":
        data, batch = _delta(root, tmp_path)
    elif kind == "iceberg":
        data, batch = _iceberg(root, tmp_path)
    else:
        data, batch = _s3_prefix(request.getfixturevalue("s3_bucket"), tmp_path)
    code, out, err = cli(*init_args(data), workspace=root)
    assert code == 0, err
    platform = {"delta": "delta-lake", "iceberg": "iceberg"}.get(kind)
    if platform:  # DataHub's platform for the table
        assert f"urn:li:dataPlatform:{platform}," in (root / "pipelines" / f"{NAME}.yaml").read_text()
    code, out, err = cli("run", NAME, "--now", RUN_AT, workspace=root)
    assert code == 0 and "APPROVED v1" in out, err + out
    code, out, err = cli("land", NAME, str(batch), "--now", LATER_LAND, "--upstream", UPSTREAM, workspace=root)
    assert code == 0 and "31 rows" in out, err + out
    code, out, err = cli("run", NAME, "--now", LATER_RUN, workspace=root)
    assert "detect   CLEAN" in out and "train    trained" in out and code == 0, err + out


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


BAD = {
    "missing": (lambda base: base / "nowhere.parquet", "no table at", "check the path"),
    "unreadable": (
        lambda base: _write(base / "broken.parquet", b"PAR1 not really"),
        "not a readable parquet file",
        "replace it with a parquet file",
    ),
    "wrong format": (lambda base: _write(base / "table.json", b"{}"), "neither .parquet nor .csv", "name the file"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_location_is_one_line_naming_the_fix_and_changes_nothing(case, onboarded, tmp_path):
    ws: Workspace = onboarded[0]
    where, said, fix = BAD[case]
    location = where(tmp_path)
    before = (file_hash(ws.datahub_db), file_hash(ws.mlflow_db), sorted(os.listdir(ws.runs)))
    code, out, err = cli(
        "init",
        "another",
        "--data",
        str(location),
        "--target",
        "temp_max",
        "--time-column",
        "date",
        "--yes",
        workspace=ws.root,
    )
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: --data {location}: "), err
    assert said in err and fix in err, err
    assert (file_hash(ws.datahub_db), file_hash(ws.mlflow_db), sorted(os.listdir(ws.runs))) == before
    assert not (ws.pipelines / "another.yaml").exists()
    empty = tmp_path / "empty-ws"  # nor does it start a workspace's stores
    assert (
        cli(
            "init", "another", "--data", str(location), "--target", "t", "--time-column", "d", "--yes", workspace=empty
        )[0]
        == 2
    )
    assert not (empty / "datahub.db").exists() and not (empty / "mlflow.db").exists()


def test_no_permission_on_the_data_is_one_line_naming_the_fix(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="kintsugi-onboard-perm-"))  # nobody must reach it: not under pytest's 0700
    try:
        os.chmod(base, 0o777)
        table = base / "weather.parquet"
        weather().to_parquet(table, index=False)
        os.chmod(table, 0)
        code, _, err = as_nobody(lambda: _init(base, str(table))).partition("|")
        assert code == "2" and err.count("\n") == 1 and "permission denied" in err, err
        assert "give the user running kintsugi read" in err or "give this user read access" in err, err
        assert not (base / "ws" / "datahub.db").exists()
    finally:
        os.chmod(base / "weather.parquet", 0o644)
        shutil.rmtree(base, ignore_errors=True)


def _init(base: Path, data: str) -> str:
    """`kintsugi init` on `data`: its exit code and stderr, as `CODE|ERR`."""
    code, _, err = cli(
        "init", NAME, "--data", data, "--target", "temp_max", "--time-column", "date", "--yes", workspace=base / "ws"
    )
    return f"{code}|{err}"
