"""A pipeline with `engine: spark`: the demo story's heal end to end on a real local Spark session (detect, heal by
the Spark unit_rescale, verify, publish, train, promote) publishing the very bytes the arrow engine publishes;
training over the row budget on a recorded sample; bad engine settings and an unreachable Spark Connect master
as one line, nothing written."""

from __future__ import annotations

import json
import shutil
import socket
from datetime import timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import PASSPORT_PROPERTY
from controlplane.datahub.urns import model_urn
from controlplane.errors import SpecError
from controlplane.pipeline import reject, run_pipeline
from controlplane.runs.engine import acquire_session, release_session
from controlplane.runs.identity import rebase_if_moved
from controlplane.runs.journal import load_run
from controlplane.spec import load_spec, parse_spec
from controlplane.stages.pin import file_hash
from controlplane.takeback.undo import undo
from controlplane.vocab import LedgerKind
from controlplane.workspace import Workspace
from demo.feature_tables import read_table
from demo.seed import PIPELINE
from demo.story import run_demo
from profiles.engines.content import content_hash_of_tables
from tests.support import DEMO_NOW, champion, kintsugi, ms, store_hashes

MASTER = "local[1]"


@pytest.fixture(scope="module")
def spark_held():
    """One local Spark session for the module: every run's engine shares it (the runs start none, stop none)."""
    session = acquire_session(MASTER)
    yield session
    release_session(MASTER)


def _set_spec(ws: Workspace, **changes: object) -> None:
    path = ws.pipelines / f"{PIPELINE}.yaml"
    raw = yaml.safe_load(path.read_text())
    raw.update(changes)
    path.write_text(yaml.safe_dump(raw))


def _copy(ws: Workspace, target: Path) -> Workspace:
    shutil.copytree(ws.root, target)
    copied = Workspace(target)
    rebase_if_moved(copied)
    return copied


@pytest.fixture(scope="module")
def spark_story(spark_held, demo_run, tmp_path_factory):
    """The demo told again with `engine: spark`: a copy of the demo workspace with the arrow engine's heal taken
    back (`undo`: the batch in metres is in the table again, v1 is the champion), then the loop on Spark."""
    arrow_ws, arrow = demo_run
    ws = _copy(arrow_ws, tmp_path_factory.mktemp("spark-story") / "ws")
    undo(ws, arrow.healed.run_id, now_ms=ms(DEMO_NOW + timedelta(minutes=6)))
    before = champion(ws)
    _set_spec(ws, engine="spark", spark={"master": MASTER})
    healed = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(DEMO_NOW + timedelta(minutes=7)))
    return ws, before, healed


def _event(record, stage: str):
    return next(e for e in record.events if e.stage == stage)


def test_the_demo_story_on_spark_heals_publishes_the_arrow_bytes_and_promotes(spark_story, demo_run):
    ws, before, healed = spark_story
    assert healed.status == "promoted", healed.outcome
    detect = _event(healed, "detect")
    assert detect.status == "BLOCKED"
    assert ("unit_mismatch", "distance_km") in {(f["kind"], f["column"]) for f in detect.evidence["findings"]}
    heal = _event(healed, "heal")
    assert heal.status == "healed" and heal.evidence["engine"] == "spark"
    assert [s["playbook"] for s in heal.evidence["steps"]] == ["unit_rescale"]
    assert heal.evidence["steps"][0]["params"]["rows"]["column"] == "event_ts"  # the new batch's rows only
    assert [_event(healed, stage).status for stage in ("verify", "publish")] == ["CLEAN", "published"]

    arrow_ws, arrow = demo_run  # the same story, told by the arrow engine
    published = file_hash(ws.data / "eta_features.parquet")
    assert published == file_hash(arrow_ws.data / "eta_features.parquet") == heal.evidence["after_hash"]
    assert heal.evidence["after_hash"] == _event(arrow.healed, "heal").evidence["after_hash"]
    version = _event(healed, "promote").evidence["version"]
    assert before == 1 and champion(ws) == version == 3  # the champion moved to the Spark-healed version


def test_doctor_probes_the_spark_master_in_one_line(spark_story, monkeypatch, capsys):
    ws, _, _ = spark_story
    code, out, _ = kintsugi(monkeypatch, capsys, "doctor", "--workspace", str(ws.root))
    lines = [line for line in out.splitlines() if MASTER in line]
    assert code == 0, out
    assert len(lines) == 1 and lines[0].split()[0] == "ok" and f"({PIPELINE})" in lines[0], out
    assert "executors run the guard" in lines[0]


def test_over_the_row_budget_training_fits_a_recorded_seeded_sample(spark_story, tmp_path):
    ws = _copy(spark_story[0], tmp_path / "ws")
    _set_spec(ws, training={"row_budget": 6000})
    record = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(DEMO_NOW + timedelta(minutes=30)))
    if record.status == "paused":  # NEEDS_REVIEW: the passport is written when a person decides
        record = reject(ws, record.run_id, "a sample-trained candidate, checked by a test", by="tester")
    train = _event(record, "train")
    sample = train.evidence["sample"]
    assert train.evidence["rows_train"] + train.evidence["rows_holdout"] == sample["sample_rows"] == 6000
    table = ws.run_dir(record.run_id) / "snapshot" / "files" / "eta_features.parquet"
    full_hash = content_hash_of_tables([pq.read_table(table)])
    assert sample["sample_seed"] == 42 and sample["sample_engine"] == "spark"
    assert sample["sample_table_hash"] == full_hash and sample["sample_labelled_rows"] > 6000

    run = MlflowClient(tracking_uri=ws.mlflow_uri).get_run(_mlflow_run(ws, record.run_id))
    assert run.data.tags["kintsugi.dataset.sample_rows"] == "6000"
    assert run.data.tags["kintsugi.dataset.sample_table_hash"] == full_hash
    (dataset_input,) = run.inputs.dataset_inputs
    tags = {t.key: t.value for t in dataset_input.tags}
    assert tags["kintsugi.sample_seed"] == "42" and tags["kintsugi.sample_table_hash"] == full_hash

    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        properties = store.aspect(model_urn(PIPELINE, train.evidence["version"]), s.MLModelPropertiesClass)
    finally:
        store.close()
    body = json.loads(properties.customProperties[PASSPORT_PROPERTY])["body"]
    assert body["training_sample"]["rows"] == 6000 and body["training_sample"]["seed"] == 42
    assert body["training_sample"]["table_hash"] == full_hash
    assert body["snapshot"]["content_hash"] == file_hash(table)


def _mlflow_run(ws: Workspace, run_id: str) -> str:
    entry = next(e for e in load_run(ws, run_id).ledger if e.kind == LedgerKind.MLFLOW_RUN)
    return entry.result["mlflow_run"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_spark_connect_master_is_one_line_and_nothing_is_written(
    spark_story, tmp_path, monkeypatch, capsys
):
    ws = _copy(spark_story[0], tmp_path / "ws")
    url = f"sc://127.0.0.1:{_free_port()}"
    _set_spec(ws, spark={"master": url})
    before, runs = store_hashes(ws), set(ws.runs.iterdir())
    code, _, err = kintsugi(
        monkeypatch,
        capsys,
        "run",
        PIPELINE,
        "--workspace",
        str(ws.root),
        "--now",
        (DEMO_NOW + timedelta(minutes=30)).isoformat(),
    )
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"cannot reach Spark Connect at '{url}'" in err and "spark: {master: ...}" in err
    assert store_hashes(ws) == before  # no DataHub, MLflow or table write
    (new,) = set(ws.runs.iterdir()) - runs
    record = load_run(ws, new.name)
    assert record.status == "failed" and not record.ledger

    code, out, _ = kintsugi(monkeypatch, capsys, "doctor", "--workspace", str(ws.root))
    (line,) = [line for line in out.splitlines() if url in line]
    assert code == 1 and line.split()[0] == "FAIL" and "cannot reach Spark Connect" in line


BASE = yaml.safe_load((Path(__file__).resolve().parents[2] / "demo" / "pipelines" / "delivery-eta.yaml").read_text())


@pytest.mark.parametrize(
    "changes, said, fix",
    [
        (
            {"engine": "duckdb"},
            "has engine 'duckdb'",
            "use engine: arrow (the default, in this process) or engine: spark",
        ),
        ({"engine": "spark", "spark": {"master": "yarn"}}, "has spark master 'yarn'", 'use "local[N]"'),
        (
            {"engine": "spark", "spark": {"mastr": "local[2]"}},
            "has spark: {'mastr'",
            'write spark: {master: "local[2]"}',
        ),
        ({"spark": {"master": "local[2]"}}, "has a spark: section but engine 'arrow'", "set engine: spark"),
        ({"training": {"row_budget": 0}}, "has training row_budget 0", "use a positive whole number of rows"),
        ({"training": {"rows": 10}}, "has training: {'rows': 10}", "write training: {row_budget: N}"),
    ],
)
def test_bad_engine_settings_are_refused_naming_the_fix(tmp_path, changes, said, fix):
    with pytest.raises(SpecError) as refused:
        parse_spec({**BASE, **changes}, tmp_path / "p.yaml", Workspace(tmp_path))
    assert said in refused.value.message and fix in refused.value.fix


def test_engine_settings_default_to_arrow_and_two_million_rows(tmp_path):
    spec = parse_spec(BASE, tmp_path / "p.yaml", Workspace(tmp_path))
    assert (spec.engine, spec.spark_master, spec.row_budget) == ("arrow", None, 2_000_000)
    spark = parse_spec({**BASE, "engine": "spark"}, tmp_path / "p.yaml", Workspace(tmp_path))
    assert (spark.engine, spark.spark_master) == ("spark", "local[2]")


def test_a_bad_engine_value_stops_the_run_in_one_line_before_anything_is_written(
    spark_story, tmp_path, monkeypatch, capsys
):
    ws = _copy(spark_story[0], tmp_path / "ws")
    _set_spec(ws, engine="duckdb")
    before, runs = store_hashes(ws), set(ws.runs.iterdir())
    code, _, err = kintsugi(monkeypatch, capsys, "run", PIPELINE, "--workspace", str(ws.root))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "has engine 'duckdb'; use engine: arrow" in err
    assert store_hashes(ws) == before and set(ws.runs.iterdir()) == runs


def test_a_delta_table_on_spark_heals_the_version_pinned_in_one_commit_as_arrow_does(spark_held, tmp_path):
    """Spark reads the run's pinned file, so a table format's version reaches it as it reaches the arrow engine."""
    ws = Workspace(tmp_path / "ws").ensure()
    arrow = run_demo(ws, now=DEMO_NOW, table_format="delta")
    spec = load_spec(ws, PIPELINE)
    by_arrow = read_table(ws, spec).sort_values("order_id").reset_index(drop=True)
    undo(ws, arrow.healed.run_id, now_ms=ms(DEMO_NOW + timedelta(minutes=6)))  # the batch in metres is back
    _set_spec(ws, engine="spark", spark={"master": MASTER})
    healed = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(DEMO_NOW + timedelta(minutes=7)))
    assert healed.status == "promoted", healed.outcome
    assert _event(healed, "heal").evidence["engine"] == "spark"
    assert _event(healed, "publish").evidence["snapshot"] == "delta version 4"  # seeded, landed, healed, undone: 4
    by_spark = read_table(ws, load_spec(ws, PIPELINE)).sort_values("order_id").reset_index(drop=True)
    assert by_spark.equals(by_arrow)
