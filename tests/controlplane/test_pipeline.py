"""The loop as one story on the demo estate, asserted by reading the real stores back (DataHub Lite, MLflow sqlite)."""

from __future__ import annotations

import json
from datetime import timedelta

import numpy as np
import pytest
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import PASSPORT_PROPERTY
from controlplane.datahub.urns import assertion_urn, model_urn
from controlplane.pipeline import run_pipeline
from controlplane.runs.journal import load_run
from controlplane.spec import load_spec
from controlplane.stages.pin import file_hash as content_hash
from demo.seed import FEATURE_TABLE, PIPELINE, UPSTREAMS
from tests.support import DEMO_NOW, active_incident


@pytest.fixture
def lite(demo_run):
    ws, _ = demo_run
    store = LiteMetadata(ws.datahub_db, read_only=True)
    yield store
    store.close()


def _incidents_on(store: LiteMetadata, dataset: str) -> list[s.IncidentInfoClass]:
    infos = [store.aspect(urn, s.IncidentInfoClass) for urn in store.urns("incident")]
    return [i for i in infos if i is not None and dataset in i.entities]


def test_estate_has_datasets_with_lineage_and_owners(lite):
    assert set(UPSTREAMS) | {FEATURE_TABLE} <= set(lite.urns("dataset"))
    lineage = lite.aspect(FEATURE_TABLE, s.UpstreamLineageClass)
    assert {u.dataset for u in lineage.upstreams} == set(UPSTREAMS)
    assert lite.aspect(FEATURE_TABLE, s.OwnershipClass).owners
    assert lite.aspect(FEATURE_TABLE, s.SchemaMetadataClass).fields


def test_one_incident_on_the_feature_table_resolved_with_heal_notes(lite, demo_run):
    _, result = demo_run
    incidents = _incidents_on(lite, FEATURE_TABLE)
    assert len(incidents) == 1
    info = incidents[0]
    assert info.status.state == s.IncidentStateClass.RESOLVED
    assert "unit_rescale" in info.status.message and "sha256:" in info.status.message
    assert "distance_km" in info.title and "unit_mismatch" in info.title
    assert info.source.sourceUrn == assertion_urn(FEATURE_TABLE, "units", "distance_km")
    assert "'m'" in info.description or " m," in info.description


def test_model_carries_the_passport_and_training_lineage(lite, demo_run):
    _, result = demo_run
    promote = next(e for e in result.healed.events if e.stage == "promote")
    version = promote.evidence["version"]
    urn = model_urn(PIPELINE, version)
    properties = lite.aspect(urn, s.MLModelPropertiesClass)
    passport = json.loads(properties.customProperties[PASSPORT_PROPERTY])
    assert passport["body"]["verdict"]["verdict"] == "APPROVED"
    assert passport["body"]["remediations"][0]["playbook"] == "unit_rescale"
    assert passport["body"]["snapshot"]["content_hash"].startswith("sha256:")
    training = lite.aspect(urn, s.TrainingDataClass)
    assert [d.dataset for d in training.trainingData] == [FEATURE_TABLE]
    tags = lite.aspect(urn, s.GlobalTagsClass)
    assert [t.tag for t in tags.tags] == ["urn:li:tag:approved", "urn:li:tag:champion"]
    first = lite.aspect(model_urn(PIPELINE, 1), s.GlobalTagsClass)
    assert [t.tag for t in first.tags] == ["urn:li:tag:approved"]  # exactly one version is the champion


def test_mlflow_champion_is_the_healed_version(demo_run):
    ws, result = demo_run
    promote = next(e for e in result.healed.events if e.stage == "promote")
    assert result.healed.status == "promoted", result.healed.outcome
    client = MlflowClient(tracking_uri=ws.mlflow_uri)
    champion = client.get_model_version_by_alias(PIPELINE, "champion")
    assert int(champion.version) == promote.evidence["version"] == 2
    assert int(client.get_model_version_by_alias(PIPELINE, "previous").version) == 1
    run = client.get_run(champion.run_id)
    assert run.data.tags["kintsugi.dataset.content_hash"] == content_hash(ws.data / "eta_features.parquet")


def test_a_break_newer_than_the_training_split_leaves_the_holdout_score_unchanged(demo_run):
    """The batch in metres (10 of 60 days) is newer than the newest 20% a retrain holds out: the model trained on the
    poisoned table trained on no row in metres, so on the healed holdout it scores as the healed one. The harm is in
    what it is served (tests/demo/test_serving.py)."""
    _, result = demo_run
    assert result.broken_in_training == 0 and result.training_rows > 0
    assert result.mae_healed == result.mae_poisoned


def test_healed_table_holds_kilometres_and_source_was_kept(demo_run):
    import pandas as pd

    ws, result = demo_run
    healed = pd.read_parquet(ws.data / "eta_features.parquet")
    previous = pd.read_parquet(ws.run_dir(result.healed.run_id) / "backup" / "files" / "eta_features.parquet")
    metres = previous["distance_km"] > 100  # the new batch: the orders service wrote metres
    assert 0 < metres.sum() < len(previous)
    assert np.allclose(healed["distance_km"][metres], previous["distance_km"][metres] / 1000, rtol=1e-12)
    assert healed["distance_km"][~metres].equals(previous["distance_km"][~metres])  # the past is untouched
    assert 1.0 < healed["distance_km"].median() < 6.0


def test_rerun_on_unchanged_data_raises_nothing_and_the_champion_stands_with_nothing_registered(demo_copy):
    ws, _ = demo_copy
    spec = load_spec(ws, PIPELINE)
    store = LiteMetadata(ws.datahub_db, read_only=True)
    incidents_before, assertions_before = store.urns("incident"), store.urns("assertion")
    units = assertion_urn(FEATURE_TABLE, "units", "distance_km")
    events_before = store.history(units, s.AssertionRunEventClass)
    store.close()
    client = MlflowClient(tracking_uri=ws.mlflow_uri)
    champion_before = client.get_model_version_by_alias(PIPELINE, "champion").version
    versions_before = len(client.search_model_versions(f"name = '{PIPELINE}'"))
    record = run_pipeline(ws, spec, now_ms=int((DEMO_NOW + timedelta(minutes=30)).timestamp() * 1000))
    store = LiteMetadata(ws.datahub_db, read_only=True)
    assert store.urns("incident") == incidents_before
    assert store.urns("assertion") == assertions_before  # same checks, same URNs: no new assertions
    events = store.history(units, s.AssertionRunEventClass)
    store.close()
    assert len(events) == len(events_before) + 1 and events[-1].runId == record.run_id
    assert [e.result.type for e in events] == ["SUCCESS", "FAILURE", "SUCCESS"]
    # the same rows and spec as the champion's: no second copy of it is trained, registered or put to a person
    assert record.status == "unchanged" and record.status.exit_code == 0, record.outcome
    assert f"the champion v{champion_before} stands" in record.outcome
    assert len(client.search_model_versions(f"name = '{PIPELINE}'")) == versions_before
    assert client.get_model_version_by_alias(PIPELINE, "champion").version == champion_before
    assert load_run(ws, record.run_id).events[0].status == "CLEAN"


def test_one_upstream_incident_marks_both_demo_models_at_risk(demo_copy):
    from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP

    from controlplane.datahub.urns import parse_model_urn
    from controlplane.frontdoor.services import incidents
    from demo.seed import CANCEL_PIPELINE

    ws, _ = demo_copy
    info = active_incident(UPSTREAMS[0], "orders duplicated", 1)
    store = LiteMetadata(ws.datahub_db)
    store.emit([MCP(entityUrn="urn:li:incident:orders-dup", aspect=info)])
    store.close()
    (row,) = [i for i in incidents(ws, active_only=True) if i.row.urn == "urn:li:incident:orders-dup"]
    pipelines = {parse_model_urn(urn)[0] for urn in row.at_risk_models}
    assert pipelines == {PIPELINE, CANCEL_PIPELINE}
