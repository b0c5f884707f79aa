"""Incidents reused, ratify gates that survive a restart, dry-run that writes nothing, undo, and the stale-approve
cases: approving at the promote gate decides again on the current champion, incidents and data."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.errors import RunNotFound, RunStateError
from controlplane.pipeline import approve, reject, run_pipeline
from controlplane.runs.journal import list_runs, load_run
from controlplane.spec import load_spec
from controlplane.stages.pin import file_hash as content_hash
from controlplane.takeback.undo import undo
from controlplane.vocab import Stage
from demo.seed import FEATURE_TABLE, PIPELINE
from tests.support import DEMO_NOW, LATER, LATER_MS, active_incident, champion, incidents_on, poison, store_hashes


def _poison(ws):
    poison(ws)  # 10 more days of a slowing city, distance written in metres
    return load_spec(ws, PIPELINE)


def _incidents(ws) -> dict[str, s.IncidentInfoClass]:
    return incidents_on(ws, FEATURE_TABLE)


_champion, _hashes = champion, store_hashes


def test_dry_run_leaves_datahub_mlflow_and_data_byte_for_byte(demo_copy):
    ws, _ = demo_copy
    spec = _poison(ws)
    before = _hashes(ws)
    record = run_pipeline(ws, spec, policy="dry-run", now_ms=LATER_MS)
    assert record.status == "planned", record.outcome
    assert [e.stage for e in record.events] == ["detect", "incident", "heal", "verify"]
    assert _hashes(ws) == before


def test_ratify_pauses_survives_a_restart_and_an_incident_is_reused(demo_copy):
    ws, _ = demo_copy
    spec = _poison(ws)
    poisoned = content_hash(spec.data)
    paused = run_pipeline(ws, spec, policy="ratify", now_ms=LATER_MS)
    assert paused.status == "paused" and paused.checkpoint["gate"] == "publish"
    assert content_hash(spec.data) == poisoned  # nothing published at the gate
    (urn,) = [u for u, i in _incidents(ws).items() if i.status.state == s.IncidentStateClass.ACTIVE]
    # a second run while the first waits reuses the ACTIVE incident instead of raising another
    second = run_pipeline(ws, spec, policy="ratify", now_ms=LATER_MS + 60_000)
    incident_event = next(e for e in second.events if e.stage == "incident")
    assert [i["urn"] for i in incident_event.evidence["incidents"]] == [urn]
    assert incident_event.evidence["incidents"][0]["created"] is False
    reject(ws, second.run_id, "duplicate of the first run", by="tester")
    # approve in a new process: the paused run lives on disk, not in this process
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controlplane",
            "approve",
            paused.run_id,
            "--reason",
            "the heal is right",
            "-w",
            str(ws.root),
            "--now",
            (LATER + timedelta(minutes=10)).isoformat(),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 3, done.stdout + done.stderr  # paused at the next gate: a person must decide
    record = load_run(ws, paused.run_id)
    assert record.status == "paused" and record.checkpoint["gate"] == "promote"
    assert content_hash(spec.data) != poisoned
    assert _incidents(ws)[urn].status.state == s.IncidentStateClass.RESOLVED
    champion = _champion(ws)
    record = approve(ws, paused.run_id, reason="reviewed", by="tester", now_ms=LATER_MS + 600_000)
    assert record.status == "promoted", record.outcome
    assert _champion(ws) != champion


def test_reject_at_the_publish_gate_publishes_nothing(demo_copy):
    ws, _ = demo_copy
    spec = _poison(ws)
    before = content_hash(spec.data)
    paused = run_pipeline(ws, spec, policy="ratify", now_ms=LATER_MS)
    record = reject(ws, paused.run_id, "not today", by="tester")
    assert record.status == "rejected" and "nothing was published" in record.outcome
    assert content_hash(spec.data) == before
    assert any(i.status.state == s.IncidentStateClass.ACTIVE for i in _incidents(ws).values())
    with pytest.raises(RunStateError, match="approve needs it paused"):
        approve(ws, paused.run_id, reason="again", by="tester")


def test_undo_restores_the_exact_bytes_moves_champion_back_and_reopens(demo_copy):
    ws, _ = demo_copy
    spec = _poison(ws)
    poisoned = content_hash(spec.data)
    champion = _champion(ws)
    record = run_pipeline(ws, spec, now_ms=LATER_MS)
    assert record.status == "promoted", record.outcome
    assert _champion(ws) != champion
    undone = undo(ws, record.run_id)
    assert undone.status == "undone"
    assert content_hash(spec.data) == poisoned
    assert _champion(ws) == champion
    resolved_by_run = record.resolved
    assert all(_incidents(ws)[u].status.state == s.IncidentStateClass.ACTIVE for u in resolved_by_run)
    with pytest.raises(RunStateError, match="already undone"):
        undo(ws, record.run_id)


def test_undo_of_a_run_that_published_nothing(demo_copy):
    ws, result = demo_copy
    first_clean = result.first  # promoted, published nothing — but it moved the alias
    spec = load_spec(ws, PIPELINE)
    dry = run_pipeline(ws, spec, policy="dry-run", now_ms=int((DEMO_NOW + timedelta(minutes=9)).timestamp() * 1000))
    with pytest.raises(RunStateError, match="nothing to undo"):
        undo(ws, dry.run_id)
    assert first_clean.status == "promoted"


def test_approve_of_an_unknown_run(demo_copy):
    ws, _ = demo_copy
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        approve(ws, "nope", reason="none", by="tester")


def _land(ws, corrupt):
    """The demo's poisoned batch (metres) landed, then `corrupt` applied to that new batch only: the rows that
    passed earlier stay as they were."""
    import pandas as pd

    passed = len(pd.read_parquet(load_spec(ws, PIPELINE).data, columns=["order_id"]))
    spec = _poison(ws)
    frame = pd.read_parquet(spec.data)
    new = corrupt(frame.iloc[passed:].copy())
    pd.concat([frame.iloc[:passed], new]).to_parquet(spec.data, index=False)
    return spec


def test_a_heal_that_does_not_verify_blocks_and_leaves_the_incident_open(demo_copy):
    ws, _ = demo_copy

    def absurd(frame):  # metres, and a few trips that are absurd in any unit
        frame.loc[frame.index[::1000], "distance_km"] = 9.0e7
        return frame

    spec = _land(ws, absurd)
    before = content_hash(spec.data)
    record = run_pipeline(ws, spec, now_ms=LATER_MS)
    assert record.status == "blocked" and "did not verify" in record.outcome
    verify = next(e for e in record.events if e.stage == "verify")
    assert {f["kind"] for f in verify.evidence["findings"] if f["severity"] == "block"} == {"out_of_range"}
    assert content_hash(spec.data) == before
    (urn,) = record.incidents
    assert _incidents(ws)[urn].status.state == s.IncidentStateClass.ACTIVE


def test_a_playbook_over_its_limit_refuses_and_changes_nothing(demo_copy):
    ws, _ = demo_copy
    spec = _land(
        ws, lambda f: f.assign(distance_km=f["distance_km"] / 1000, rain_mm=f["rain_mm"].mask(f.index % 5 < 3))
    )  # 60% nulls, quarantine limit 50%
    before = content_hash(spec.data)
    record = run_pipeline(ws, spec, now_ms=LATER_MS)
    assert record.status == "blocked"
    assert "over its limit of 50% of rows" in record.outcome
    assert content_hash(spec.data) == before
    assert [e.stage for e in record.events] == ["detect", "incident", "heal"]


def _paused_at_promote(ws):
    spec = _poison(ws)
    paused = run_pipeline(ws, spec, policy="ratify", now_ms=LATER_MS)
    record = approve(ws, paused.run_id, reason="the heal looks right", by="tester", now_ms=LATER_MS + 60_000)
    assert record.status == "paused" and record.checkpoint["gate"] == "promote", record.outcome
    return spec, record


def test_approve_at_the_promote_gate_rescores_a_champion_that_moved(demo_copy):
    from controlplane.models.modelstore import open_store

    ws, result = demo_copy
    spec, paused = _paused_at_promote(ws)
    trained = paused.checkpoint["trained"]
    assert trained["champion_version"] == 2
    open_store(ws).set_champion(PIPELINE, 1)  # someone moved the champion back while the run waited
    record = approve(ws, paused.run_id, reason="ship it", by="tester", now_ms=LATER_MS + 120_000)
    redecided = next(e for e in record.events if e.status == "re-decided")
    assert "the champion moved from v2 to v1" in redecided.summary
    promote = record.last_event(Stage.PROMOTE)
    train = next(e for e in record.events if e.stage == "train")
    assert promote.evidence["version"] == train.evidence["version"]
    local = MlflowClient(tracking_uri=ws.mlflow_uri).download_artifacts(
        trained["mlflow_run"], "passport.json", str(ws.root)
    )
    passport = json.loads(open(local).read())
    assert passport["body"]["metrics"]["champion_version"] == 1  # decided against the champion of now
    assert passport["body"]["approval"] == {"approved": True, "reason": "ship it", "by": "tester"}


def test_approve_at_the_promote_gate_blocks_on_an_upstream_incident_raised_meanwhile(demo_copy):
    from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP

    from controlplane.datahub.lite import LiteMetadata
    from demo.seed import UPSTREAMS

    ws, _ = demo_copy
    spec, paused = _paused_at_promote(ws)
    champion_before = _champion(ws)
    info = active_incident(
        UPSTREAMS[0],
        "orders late",
        LATER_MS + 90_000,
        actor="urn:li:corpuser:orders-oncall",
        startedAt=LATER_MS + 90_000,
    )
    store = LiteMetadata(ws.datahub_db)
    store.emit([MCP(entityUrn="urn:li:incident:orders-late", aspect=info)], LATER_MS + 90_000)
    store.close()
    record = approve(ws, paused.run_id, reason="ship it", by="tester", now_ms=LATER_MS + 120_000)
    assert record.status == "blocked", record.outcome
    assert "urn:li:incident:orders-late" in record.outcome
    assert _champion(ws) == champion_before


def test_approve_at_the_promote_gate_blocks_when_the_table_changed_meanwhile(demo_copy):
    import pandas as pd

    ws, _ = demo_copy
    spec, paused = _paused_at_promote(ws)
    champion_before = _champion(ws)
    frame = pd.read_parquet(spec.data)
    frame.assign(distance_km=frame["distance_km"] * 1000).to_parquet(spec.data)  # re-poisoned in place
    record = approve(ws, paused.run_id, reason="ship it", by="tester", now_ms=LATER_MS + 120_000)
    assert record.status == "blocked" and "changed" in record.outcome, record.outcome
    assert _champion(ws) == champion_before


def test_a_run_without_a_contract_ends_blocked_naming_the_fix(demo_copy, monkeypatch, capsys):
    from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP

    from controlplane.datahub.lite import LiteMetadata
    from controlplane.datahub.urns import contract_urn
    from tests.support import kintsugi

    ws, _ = demo_copy
    _poison(ws)
    store = LiteMetadata(ws.datahub_db)  # the contract is emptied in DataHub
    store.emit(
        [
            MCP(
                entityUrn=contract_urn(FEATURE_TABLE),
                aspect=s.DataContractPropertiesClass(entity=FEATURE_TABLE, rawContract=None),
            )
        ]
    )
    store.close()
    code, out, err = kintsugi(
        monkeypatch, capsys, "run", PIPELINE, "-w", str(ws.root), "--now", (LATER + timedelta(minutes=5)).isoformat()
    )
    assert code == 1, out + err
    assert "Traceback" not in out + err and err == ""
    record = list_runs(ws)[-1]
    assert record.status == "blocked" and record.events[0].status == "BLOCKED"
    assert "no data contract is registered" in record.outcome and "kintsugi contract apply" in record.outcome
