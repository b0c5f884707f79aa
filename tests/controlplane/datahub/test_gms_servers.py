"""The demo story on real servers: DataHub is a GMS (the stand-in), MLflow a real `mlflow server` process.

It must write what the same story writes on DataHub Lite and MLflow sqlite (the session's `demo_run`, same
`now`): the same incidents, assertions, datasets and models — compared per URN by aspect names and key fields,
timestamps aside — and leave the champion alias on the tracking server."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.datahub.config import GmsConfig
from controlplane.datahub.gms import GmsMetadata
from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import PASSPORT_PROPERTY
from controlplane.workspace import Workspace
from demo.seed import PIPELINE
from demo.story import DemoResult, run_demo
from tests.controlplane.datahub.conftest import TOKEN, MlflowServer, configure
from tests.controlplane.datahub.standin import GmsStandIn
from tests.support import DEMO_NOW

ENTITY_TYPES = ("dataset", "dataContract", "assertion", "incident", "mlModelGroup", "mlModel", "dataProcessInstance")
RUN_KEYED = ("dataProcessInstance",)  # URNs derive from the run id, which is random: compared by count


@pytest.fixture(scope="module")
def on_servers(
    tmp_path_factory: pytest.TempPathFactory, mlflow_server: MlflowServer
) -> Iterator[tuple[Workspace, GmsStandIn, DemoResult]]:
    root = tmp_path_factory.mktemp("servers")
    standin = GmsStandIn(root / "gms.db", token=TOKEN).start()
    ws = Workspace(root / "ws").ensure()
    configure(ws, standin.url, timeout_sec=10.0, retries=2)
    mlflow_server.wait_healthy()
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
        result = run_demo(ws, now=DEMO_NOW)
    yield ws, standin, result
    standin.stop()


def _aspect_names(store: Path) -> dict[str, set[str]]:
    with closing(sqlite3.connect(store)) as db:
        rows = db.execute("SELECT urn, aspect_name FROM metadata_aspect_v2 WHERE version = 0").fetchall()
    names: dict[str, set[str]] = {}
    for urn, aspect in rows:
        names.setdefault(urn, set()).add(aspect)
    return names


def _key_fields(port: Any, urn: str) -> dict[str, Any]:
    """What an entity says, without instants, run ids or MLflow ids."""
    kind = urn.split(":")[2]
    if kind == "incident":
        info = port.aspect(urn, s.IncidentInfoClass)
        return {
            "type": info.type,
            "title": info.title,
            "entities": info.entities,
            "state": info.status.state,
            "stage": info.status.stage,
            "source": info.source.sourceUrn,
            "priority": info.priority,
            "states": [v.status.state for v in port.history(urn, s.IncidentInfoClass)],
        }
    if kind == "assertion":
        events = port.history(urn, s.AssertionRunEventClass)
        return {
            "info": port.aspect(urn, s.AssertionInfoClass).to_obj(),
            "results": [(e.asserteeUrn, e.result.type) for e in events],
        }
    if kind == "mlModel":
        props = port.aspect(urn, s.MLModelPropertiesClass)
        passport = json.loads(props.customProperties[PASSPORT_PROPERTY])["body"]
        return {
            "name": props.name,
            "version": props.version.versionTag,
            "groups": props.groups,
            "metrics": sorted(m.name for m in props.trainingMetrics),
            "verdict": props.customProperties["kintsugi.verdict"],
            "passport verdict": passport["verdict"],
            "remediations": [r["playbook"] for r in passport["remediations"]],
            "data": port.aspect(urn, s.TrainingDataClass).to_obj(),
            "tags": port.aspect(urn, s.GlobalTagsClass).to_obj(),
        }
    if kind == "dataset":
        properties, lineage = port.aspect(urn, s.DatasetPropertiesClass), port.aspect(urn, s.UpstreamLineageClass)
        profile = port.aspect(urn, s.DatasetProfileClass)
        return {
            "name": properties.name,
            "custom": properties.customProperties,
            "fields": [(f.fieldPath, f.nativeDataType) for f in port.aspect(urn, s.SchemaMetadataClass).fields],
            "upstreams": sorted(u.dataset for u in lineage.upstreams) if lineage else [],
            "owners": port.aspect(urn, s.OwnershipClass).to_obj(),
            "rows": profile.rowCount if profile else None,
        }
    if kind == "dataContract":
        return port.aspect(urn, s.DataContractPropertiesClass).to_obj()
    if kind == "mlModelGroup":  # each workspace signs with its own key: the key's id and PEM differ by design
        found = port.aspect(urn, s.MLModelGroupPropertiesClass).to_obj()
        return {**found, "customProperties": sorted(found.get("customProperties", {}))}
    return {}


def test_the_demo_on_gms_writes_what_it_writes_on_lite(on_servers, demo_run):
    _, standin, result = on_servers
    ws_lite, reference = demo_run
    assert (result.first.status, result.healed.status) == (reference.first.status, reference.healed.status)
    lite = LiteMetadata(ws_lite.datahub_db, read_only=True)
    gms = GmsMetadata(GmsConfig(server=standin.url, token=TOKEN, timeout_sec=10.0, retries=1))
    names_lite, names_gms = _aspect_names(ws_lite.datahub_db), _aspect_names(standin.store)
    for kind in ENTITY_TYPES:
        urns_lite, urns_gms = lite.urns(kind), gms.urns(kind)
        assert urns_lite, kind
        if kind in RUN_KEYED:
            assert len(urns_gms) == len(urns_lite), kind
            assert sorted(map(sorted, (names_gms[u] for u in urns_gms))) == sorted(
                map(sorted, (names_lite[u] for u in urns_lite))
            )
            continue
        assert urns_gms == urns_lite, kind
        for urn in urns_lite:
            assert names_gms[urn] == names_lite[urn], urn
            assert _key_fields(gms, urn) == _key_fields(lite, urn), urn
    lite.close()
    gms.close()


def test_the_tracking_server_holds_the_champion_and_its_artifacts(on_servers, mlflow_server):
    ws, _, result = on_servers
    assert not ws.mlflow_db.exists(), "the runs went to the server, not to the workspace's sqlite store"
    client = MlflowClient(tracking_uri=mlflow_server.url)
    promote = next(e for e in result.healed.events if e.stage == "promote")
    champion = client.get_model_version_by_alias(PIPELINE, "champion")
    assert int(champion.version) == promote.evidence["version"] == 2
    assert int(client.get_model_version_by_alias(PIPELINE, "previous").version) == 1
    assert "passport.json" in {a.path for a in client.list_artifacts(champion.run_id)}
    assert any(mlflow_server.artifacts.rglob("passport.json")), "artifacts are served from the server's store"
