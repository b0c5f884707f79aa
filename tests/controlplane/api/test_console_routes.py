"""The reads the operator console is built on, over HTTP on real stores: runs by status (the approval queue), a run's
findings with the rows they name, a passport's verification state, the watch's last decisions, the latest drill
kept in the workspace, and what the liveness answer tells the page. Only an open incident puts models at risk."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from mlflow import MlflowClient

from controlplane.api.app import create_app
from controlplane.datahub.urns import model_urn
from controlplane.frontdoor.access import ApiSettings
from controlplane.models.passport_signing import unsigned
from controlplane.signing import load_or_create_key, sign_passport
from controlplane.workspace import Workspace
from demo.seed import CANCEL_PIPELINE, PIPELINE
from tests.controlplane.watch.test_watch import INCIDENT, WATCH_AT
from tests.support import TOKEN, ms, rewrite_passport


def _client(ws: Workspace, settings: ApiSettings | None = None) -> TestClient:
    return TestClient(create_app(ws, settings or ApiSettings(token=TOKEN)), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def estate(at_risk_estate) -> tuple[TestClient, Workspace, str]:
    ws, proposal = at_risk_estate
    return _client(ws), ws, proposal


def test_the_queue_lists_runs_paused_at_a_gate_and_refuses_an_unknown_status(estate):
    client, _, proposal = estate
    paused = client.get("/runs", params={"status": "paused"}).json()["runs"]
    assert [(r["run_id"], r["kind"], r["gate"]) for r in paused] == [(proposal, "rollback", "rollback")]
    assert {r["status"] for r in client.get("/runs").json()["runs"]} > {"paused"}
    refused = client.get("/runs", params={"status": "waiting"})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_input"
    assert "status 'waiting' is not a run status" in refused.json()["error"]["message"]
    assert "paused" in refused.json()["error"]["fix"]


def test_a_runs_findings_name_kind_column_severity_and_the_rows_they_concern(estate, demo_run):
    client, _, proposal = estate
    healed = demo_run[1].healed.run_id
    stages = client.get(f"/runs/{healed}/findings").json()["stages"]
    assert [(st["stage"], st["verdict"]) for st in stages] == [("detect", "BLOCKED"), ("verify", "CLEAN")]
    unit = next(f for f in stages[0]["findings"] if f["kind"] == "unit_mismatch")
    assert (unit["column"], unit["severity"]) == ("distance_km", "block")
    assert unit["rows"]["column"] == "event_ts" and isinstance(unit["rows"]["after_ms"], int)
    assert unit["rows"]["through_ms"] is None and unit["rows"]["also"] == []
    assert stages[1]["findings"] == []
    assert client.get(f"/runs/{proposal}/findings").json() == {"run_id": proposal, "stages": []}
    missing = client.get("/runs/nope/findings")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "run_not_found"


def test_only_an_open_incident_puts_models_at_risk(estate):
    client, _, _ = estate
    incidents = {i["title"]: i for i in client.get("/incidents").json()["incidents"]}
    healed = incidents["unit_mismatch on distance_km"]
    assert healed["state"] == "RESOLVED" and healed["at_risk_models"] == []
    upstream = incidents["orders double-counted since yesterday"]
    assert upstream["state"] == "ACTIVE"
    assert set(upstream["at_risk_models"]) == {
        model_urn(PIPELINE, 1),
        model_urn(PIPELINE, 2),
        model_urn(CANCEL_PIPELINE, 1),
    }


def test_the_watch_shows_its_last_decisions_the_versions_at_risk_and_what_it_wrote(estate, demo_run):
    client, _, proposal = estate
    watch = client.get("/watch").json()
    last = watch["last_pass"]
    assert last["at_ms"] == ms(WATCH_AT) and last["errors"] == []
    decisions = {d["pipeline"]: d for d in last["decisions"]}
    assert decisions[PIPELINE]["action"] == "proposed" and decisions[PIPELINE]["record"] == proposal
    assert (decisions[PIPELINE]["champion"], decisions[PIPELINE]["target"]) == (2, 1)
    assert decisions[PIPELINE]["at_risk"] == [f"v2 <- {INCIDENT}"]
    assert decisions[CANCEL_PIPELINE]["action"] == "healthy"
    assert [(m["model"], m["caused_by"], m["state"]) for m in watch["at_risk"]] == [
        (model_urn(PIPELINE, 2), INCIDENT, "ACTIVE")
    ]
    assert proposal in [r["run_id"] for r in watch["records"] if r["kind"] == "rollback"]
    before_any_pass = _client(demo_run[0]).get("/watch").json()
    assert before_any_pass["last_pass"] is None and before_any_pass["at_risk"] == []


def test_the_lineage_marks_each_models_champion(estate):
    client, _, _ = estate
    models = {(m["model"], m["version"]): m["champion"] for m in client.get("/lineage").json()["models"]}
    assert models == {(PIPELINE, 1): False, (PIPELINE, 2): True, (CANCEL_PIPELINE, 1): True}


def _model_dir(ws: Workspace, model: str, version: int) -> Path:
    source = MlflowClient(tracking_uri=ws.mlflow_uri).get_model_version(model, str(version)).source
    return Path(source.removeprefix("file://"))


def test_the_passport_says_whether_it_is_valid_altered_signed_by_an_untrusted_key_or_unsigned(demo_copy, tmp_path):
    ws, _ = demo_copy
    client = _client(ws)

    def state(version: int | None = None) -> dict:
        params = {"version": version} if version else {}
        response = client.get(f"/models/{PIPELINE}/passport", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    champion = state()
    assert champion["version"] == 2 and champion["verification"]["status"] == "valid"
    assert champion["verification"]["ok"] and champion["passport"]["body"]["verdict"]["verdict"] == "APPROVED"
    signed = state(1)["passport"]
    altered = {
        **signed,
        "body": {**signed["body"], "metrics": {**signed["body"]["metrics"], "candidate": {"mae": 0.1}}},
    }
    rewrite_passport(ws, PIPELINE, 1, altered)
    check = state(1)["verification"]
    assert (check["ok"], check["status"]) == (False, "altered")
    assert any(r.startswith("DataHub copy: altered: metrics.candidate") for r in check["reasons"]), check["reasons"]
    other = load_or_create_key(tmp_path / "another-team", env={})
    rewrite_passport(ws, PIPELINE, 1, sign_passport(signed["body"], _model_dir(ws, PIPELINE, 1), other))
    assert state(1)["verification"]["status"] == "untrusted_key"
    rewrite_passport(ws, PIPELINE, 1, unsigned(signed["body"], "written without a key"))
    assert state(1)["verification"]["status"] == "unsigned"
    assert state()["verification"]["status"] == "valid"  # the others are untouched


def test_the_latest_drill_is_none_until_one_is_kept_and_a_damaged_one_says_so(demo_copy):
    ws, _ = demo_copy
    client = _client(ws)
    assert client.get("/drills/latest").json() == {"scoreboard": None, "folder": "drills"}
    damaged = ws.drills / "20261101T000000Z"
    damaged.mkdir(parents=True)
    (damaged / "scoreboard.json").write_text("{")
    refused = client.get("/drills/latest")
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "data"
    assert "drills/20261101T000000Z/scoreboard.json cannot be read" in refused.json()["error"]["message"]


def test_health_tells_the_page_whether_it_may_offer_writes_and_the_page_stays_public(demo_run):
    ws = demo_run[0]
    flags = ("read_only", "writes_need_token", "reads_need_token")
    cases = [
        (ApiSettings(token=TOKEN), (False, True, False)),
        (ApiSettings(read_only=True), (True, False, False)),
        (ApiSettings(insecure_local=True), (False, False, False)),
        (ApiSettings(token=TOKEN, host="0.0.0.0"), (False, True, True)),
    ]
    for settings, expected in cases:
        health = _client(ws, settings).get("/health").json()
        assert tuple(health[f] for f in flags) == expected, settings
    exposed = _client(ws, ApiSettings(token=TOKEN, host="0.0.0.0"))
    assert exposed.get("/pipelines").status_code == 401
    script = exposed.get("/console.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert exposed.get("/").status_code == 200


def test_served_errors_are_none_until_the_demo_keeps_one_and_a_damaged_one_says_so(demo_copy):
    ws, _ = demo_copy
    client = _client(ws)
    assert client.get("/served").json() == {"served": []}
    ws.served.mkdir(parents=True)
    (ws.served / "delivery-eta.json").write_text('{"pipeline": "delivery-eta"}')
    refused = client.get("/served")
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "data"
    assert "served/delivery-eta.json cannot be read" in refused.json()["error"]["message"]
