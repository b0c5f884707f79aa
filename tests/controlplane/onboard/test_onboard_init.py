"""`kintsugi init --yes` then `kintsugi run`, from an empty workspace and one parquet file: a first champion, and
the dataset, its schema (DataHub's field types) and its lineage readable in DataHub."""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import yaml
from datahub.metadata import schema_classes as s

from controlplane.datahub.datasets import FRESHNESS_PROPERTY
from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.urns import contract_urn
from controlplane.documents.odcs import parse_odcs
from controlplane.onboard.unitguess import UnitGuess, contract_unit
from controlplane.runs.journal import list_runs
from controlplane.stages.pin import file_hash
from controlplane.workspace import Workspace
from tests.support import champion

from onboard_support import INIT_AT, NAME, UPSTREAM, cli, copy_ws, init_args, weather


def _dataset(ws) -> str:
    return yaml.safe_load((ws.pipelines / f"{NAME}.yaml").read_text())["feature_table"]


def test_init_yes_then_run_promotes_a_first_champion_with_no_file_written_by_hand(onboarded):
    ws, (code, out, err), (run_code, run_out, _) = onboarded
    assert code == 0, err
    assert run_code == 0 and "APPROVED v1" in run_out, run_out
    assert champion(ws, NAME) == 1
    unitless = "wind" if contract_unit(UnitGuess("m/s", "", True)) is None else "none"  # a guard without speeds
    assert f"recorded unitless: {unitless}" in out.splitlines()  # one line: the numeric columns kept without a unit
    spec = yaml.safe_load((ws.pipelines / f"{NAME}.yaml").read_text())
    assert spec["data"] == "data/seattle-weather.parquet"  # inside the workspace: kept relative to it
    assert spec["features"] == {"numeric": ["precipitation", "temp_min", "wind"], "categorical": ["weather"]}
    assert spec["model"]["estimator"].endswith("HistGradientBoostingRegressor") and spec["promotion"]["metric"] == "mae"
    assert f"kintsugi run {NAME}" in out


def test_the_dataset_schema_and_lineage_are_readable_in_datahub(onboarded):
    ws, _, _ = onboarded
    urn = _dataset(ws)
    assert urn == "urn:li:dataset:(urn:li:dataPlatform:file,data/seattle-weather.parquet,PROD)"
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        fields = {f.fieldPath: f for f in store.aspect(urn, s.SchemaMetadataClass).fields}
        lineage = store.aspect(urn, s.UpstreamLineageClass)
        upstream = store.aspect(UPSTREAM, s.DatasetPropertiesClass)
        owners = store.aspect(urn, s.OwnershipClass)
        contract = parse_odcs(store.aspect(contract_urn(urn), s.DataContractPropertiesClass).rawContract)
        profile = store.aspect(urn, s.DatasetProfileClass)
    finally:
        store.close()
    assert isinstance(fields["temp_max"].type.type, s.NumberTypeClass) and fields["temp_max"].nativeDataType == "double"
    assert isinstance(fields["date"].type.type, s.TimeTypeClass)
    assert fields["date"].nativeDataType.startswith("timestamp")
    assert isinstance(fields["weather"].type.type, s.StringTypeClass)
    assert [u.dataset for u in lineage.upstreams] == [UPSTREAM]
    assert upstream.customProperties[FRESHNESS_PROPERTY] == "48.0"
    assert owners.owners and owners.owners[0].owner.startswith("urn:li:corpuser:")
    assert contract.label_column == "temp_max" and contract.event_timestamp_column == "date"
    assert contract.column("temp_max").unit == contract_unit(UnitGuess("degC", "", True))
    assert contract.column("precipitation").unit == contract_unit(UnitGuess("mm", "", True, rain=True))
    assert profile.rowCount == 366


def test_init_is_recorded_with_its_ledger_and_listed(onboarded):
    ws, _, _ = onboarded
    record = next(r for r in list_runs(ws) if r.kind == "init")
    assert record.status.value == "onboarded" and record.pipeline == NAME
    assert all(e.state == "done" for e in record.ledger)
    kinds = [(e.kind, e.detail.get("what") or e.detail.get("aspect")) for e in record.ledger]
    assert ("workspace-file", "contract") in kinds and ("workspace-file", "pipeline spec") in kinds
    assert ("datahub-aspect", "dataContract") in kinds and ("datahub-aspect", "datasetProfile") in kinds
    code, out, _ = cli("runs", "--json", workspace=ws.root)
    assert code == 0 and any(r["status"] == "onboarded" for r in json.loads(out)["runs"])


def test_init_again_refuses_without_force_and_changes_nothing(onboarded):
    ws, _, _ = onboarded
    before = store_hashes_of(ws)
    code, _, err = cli(
        "init",
        NAME,
        "--data",
        "data/seattle-weather.parquet",
        "--target",
        "temp_max",
        "--time-column",
        "date",
        "--yes",
        workspace=ws.root,
    )
    assert code == 2 and err.count("\n") == 1 and "already exists" in err and "--force" in err
    assert store_hashes_of(ws) == before


@pytest.mark.parametrize(
    "change, words",
    [
        ({"name": "bad\x07name"}, "is not a pipeline name"),
        ({"target": "date"}, "--target 'date' is also the --time-column"),
        ({"unit": "wind=blorbs"}, "unit 'blorbs' is not one Kintsugi knows"),
        ({"workspace": "/"}, "/ is the file system's root, not a workspace folder"),
    ],
    ids=["unprintable-name", "time-column-as-target", "unknown-unit", "filesystem-root"],
)
def test_init_refuses_a_wrong_option_in_one_line_before_anything_is_written(tmp_path, change, words):
    table = tmp_path / "table.parquet"
    weather().to_parquet(table, index=False)
    ws_root = Path(change.get("workspace", tmp_path / "ws"))
    top = sorted(os.listdir("/"))
    args = ["init", change.get("name", NAME), "--data", str(table), "--target", change.get("target", "temp_max")]
    args += ["--time-column", "date", "--unit", change.get("unit", "wind=none"), "--now", INIT_AT, "--yes"]
    code, out, err = cli(*args, workspace=ws_root)
    assert code == 2, out + err
    assert err.count("\n") == 1 and err.startswith("error: ") and words in err, err
    assert sorted(os.listdir("/")) == top  # not a folder made at the file system's root
    assert ws_root == Path("/") or not ws_root.exists()  # not even the workspace's folders


def store_hashes_of(ws) -> tuple[str, ...]:
    return (
        file_hash(ws.datahub_db),
        file_hash(ws.mlflow_db),
        file_hash(ws.pipelines / f"{NAME}.yaml"),
        file_hash(ws.contracts / f"{NAME}.odcs.yaml"),
    )


def test_init_force_keeps_the_earlier_contract_as_a_file_and_a_datahub_version(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    urn = _dataset(ws)
    table = str(ws.root / "data" / "seattle-weather.parquet")
    code, _, err = cli(*init_args(table, "--force", "--key", "wind"), workspace=ws.root)
    assert code == 2 and err.startswith("error: --key 'wind' is number") and err.count("\n") == 1
    code, out, err = cli(
        "init",
        NAME,
        "--data",
        table,
        "--target",
        "temp_max",
        "--time-column",
        "date",
        "--unit",
        "wind=m/s",
        "--now",
        INIT_AT,
        "--yes",
        "--force",
        workspace=ws.root,
    )
    assert code == 0, err
    kept = ws.contracts / f"{NAME}.odcs.v1.0.0.yaml"
    assert kept.is_file() and "version: 2.0.0" in (ws.contracts / f"{NAME}.odcs.yaml").read_text()
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        versions = store.history(contract_urn(urn), s.DataContractPropertiesClass)
    finally:
        store.close()
    assert [yaml.safe_load(v.rawContract)["version"] for v in versions][-2:] == ["1.0.0", "2.0.0"]
    assert champion(ws, NAME) == 1  # the model is not touched


def test_init_asks_about_every_unsure_guess_and_takes_the_answers(tmp_path, monkeypatch):
    import io
    import sys

    root = tmp_path / "ws"
    (root / "data").mkdir(parents=True)
    weather().to_parquet(root / "data" / "w.parquet", index=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO("wobbles\nmph\ny\n"))  # a unit it does not know: asked again
    code, out, err = cli(
        "init",
        NAME,
        "--data",
        str(root / "data" / "w.parquet"),
        "--target",
        "temp_max",
        "--time-column",
        "date",
        "--now",
        INIT_AT,
        workspace=root,
    )
    assert code == 0, err
    assert "unit of wind?" in out and "not one Kintsugi knows" in out and "write pipeline" in out
    contract = parse_odcs((root / "contracts" / f"{NAME}.odcs.yaml").read_text())
    assert contract.column("wind").unit == contract_unit(UnitGuess("mph", "", True))
    assert "reviewed" in (root / "contracts" / f"{NAME}.odcs.yaml").read_text()


def test_init_creates_the_mlflow_store_marked_for_the_workspace_so_the_first_run_migrates_nothing(tmp_path):
    from controlplane.runs.identity import load_identity
    from training.registry import ModelStore

    ws = Workspace(tmp_path / "ws")
    (ws.root / "data").mkdir(parents=True)
    table = ws.root / "data" / "seattle-weather.parquet"
    weather().to_parquet(table, index=False)
    code, _, err = cli(*init_args(str(table)), workspace=ws.root)
    assert code == 0, err
    with closing(sqlite3.connect(ws.mlflow_db)) as db:  # created, its migrations run: alembic holds a revision
        assert db.execute("SELECT version_num FROM alembic_version").fetchall()
    identity = load_identity(ws)
    assert identity is not None and identity.mlflow_marked
    assert ModelStore(ws.mlflow_uri, ws.artifacts).workspace_marker() == identity.workspace_id
    record = next(r for r in list_runs(ws) if r.kind == "init")
    assert [e.state for e in record.ledger if e.kind == "mlflow-tags"] == ["done"]
    code, _, err = cli(*init_args(str(table), "--force"), workspace=ws.root)  # again: the same store, only checked
    assert code == 0, err
    assert ModelStore(ws.mlflow_uri, ws.artifacts).workspace_marker() == identity.workspace_id


def test_init_leaves_the_caches_a_run_leaves_so_the_first_run_reads_only_its_new_rows(tmp_path):
    """`kintsugi init` keeps the kept batches' row-group fingerprints and the key index of their rows, as a run's
    guard does: the first run's history check reads no row group of them, and its duplicates across batches come
    from the index (it covers exactly the batches kept), not from the table's key columns read again."""
    from controlplane.stages.kept_reference import changed_batches, fingerprint_cache_path, load_state
    from controlplane.stages.key_history import index_folder
    from profiles.fingerprints import FingerprintCache

    ws = Workspace(tmp_path / "ws")
    (ws.root / "data").mkdir(parents=True)
    table = ws.root / "data" / "seattle-weather.parquet"
    frame = weather()
    frame.assign(reading_id="r" + frame.index.astype(str)).to_parquet(table, index=False, row_group_size=30)
    code, _, err = cli(*init_args(str(table), "--key", "reading_id"), workspace=ws.root)
    assert code == 0, err
    state = load_state(ws, NAME)
    assert state is not None and len(state.batches) > 1
    history = changed_batches(ws, NAME, table, state, cache=FingerprintCache.load(fingerprint_cache_path(ws, NAME)))
    assert history.intact and history.groups_read == 0 and history.groups_cached > 0
    covered = json.loads((index_folder(ws, NAME) / "index.json").read_text())["covered"]
    assert [batch for batch, _ in covered["batches"]] == list(state.batches)
