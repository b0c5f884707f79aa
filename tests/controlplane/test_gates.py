"""Incidents reused, ratify gates that survive a restart, dry-run that writes nothing, and undo."""
from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.datahub.lite import LiteMetadata
from controlplane.errors import RunError
from controlplane.gates import approve, reject, undo
from controlplane.journal import load_run
from controlplane.loop import run_pipeline
from controlplane.spec import load_spec
from demo.seed import FEATURE_TABLE, PIPELINE
from demo.story import land_batch
from remediations.sandbox import content_hash
from tests.conftest import DEMO_NOW

LATER = DEMO_NOW + timedelta(days=10)
LATER_MS = int((LATER + timedelta(minutes=5)).timestamp() * 1000)


def _poison(ws):
    spec = load_spec(ws, PIPELINE)
    land_batch(ws, spec, seed=7, anchor=LATER, metres=True, days=50)  # 10 more days of a slowing city
    return spec


def _incidents(ws) -> dict[str, s.IncidentInfoClass]:
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        infos = {urn: store.aspect(urn, s.IncidentInfoClass) for urn in store.urns("incident")}
    finally:
        store.close()
    return {urn: info for urn, info in infos.items() if FEATURE_TABLE in info.entities}


def _champion(ws) -> str:
    return MlflowClient(tracking_uri=ws.mlflow_uri).get_model_version_by_alias(PIPELINE, "champion").version


def _hashes(ws) -> tuple[str, str, str]:
    return content_hash(ws.datahub_db), content_hash(ws.mlflow_db), content_hash(ws.data / "eta_features.parquet")


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
    assert paused.status == "paused" and paused.state["gate"] == "publish"
    assert content_hash(spec.data) == poisoned  # nothing published at the gate
    (urn,) = [u for u, i in _incidents(ws).items() if i.status.state == s.IncidentStateClass.ACTIVE]
    # a second run while the first waits reuses the ACTIVE incident instead of raising another
    second = run_pipeline(ws, spec, policy="ratify", now_ms=LATER_MS + 60_000)
    incident_event = next(e for e in second.events if e.stage == "incident")
    assert [i["urn"] for i in incident_event.evidence["incidents"]] == [urn]
    assert incident_event.evidence["incidents"][0]["created"] is False
    reject(ws, second.run_id, "duplicate of the first run")
    # approve in a new process: the paused run lives on disk, not in this process
    done = subprocess.run([sys.executable, "-m", "controlplane", "approve", paused.run_id, "-w", str(ws.root),
                           "--now", (LATER + timedelta(minutes=10)).isoformat()],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    record = load_run(ws, paused.run_id)
    assert record.status == "paused" and record.state["gate"] == "promote"
    assert content_hash(spec.data) != poisoned
    assert _incidents(ws)[urn].status.state == s.IncidentStateClass.RESOLVED
    champion = _champion(ws)
    record = approve(ws, paused.run_id, now_ms=LATER_MS + 600_000)
    assert record.status == "promoted", record.outcome
    assert _champion(ws) != champion


def test_reject_at_the_publish_gate_publishes_nothing(demo_copy):
    ws, _ = demo_copy
    spec = _poison(ws)
    before = content_hash(spec.data)
    paused = run_pipeline(ws, spec, policy="ratify", now_ms=LATER_MS)
    record = reject(ws, paused.run_id, "not today")
    assert record.status == "rejected" and "nothing was published" in record.outcome
    assert content_hash(spec.data) == before
    assert any(i.status.state == s.IncidentStateClass.ACTIVE for i in _incidents(ws).values())
    with pytest.raises(RunError, match="not paused"):
        approve(ws, paused.run_id)


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
    resolved_by_run = record.state["incidents"]
    assert all(_incidents(ws)[u].status.state == s.IncidentStateClass.ACTIVE for u in resolved_by_run)
    with pytest.raises(RunError, match="already undone"):
        undo(ws, record.run_id)


def test_undo_of_a_run_that_published_nothing(demo_copy):
    ws, result = demo_copy
    first_clean = result.first  # promoted, published nothing — but it moved the alias
    spec = load_spec(ws, PIPELINE)
    dry = run_pipeline(ws, spec, policy="dry-run", now_ms=int((DEMO_NOW + timedelta(minutes=9)).timestamp() * 1000))
    with pytest.raises(RunError, match="published nothing and moved no alias"):
        undo(ws, dry.run_id)
    assert first_clean.status == "promoted"


def test_approve_of_an_unknown_run(demo_copy):
    ws, _ = demo_copy
    with pytest.raises(RunError, match="no run 'nope'"):
        approve(ws, "nope")


def _land(ws, corrupt):
    import pandas as pd

    spec = _poison(ws)
    frame = corrupt(pd.read_parquet(spec.data))
    frame.to_parquet(spec.data, index=False)
    return spec


def test_a_heal_that_does_not_verify_blocks_and_leaves_the_incident_open(demo_copy):
    ws, _ = demo_copy

    def absurd(frame):  # metres, and a few trips that are absurd in any unit
        frame.loc[frame.index[::2000], "distance_km"] = 9.0e7
        return frame

    spec = _land(ws, absurd)
    before = content_hash(spec.data)
    record = run_pipeline(ws, spec, now_ms=LATER_MS)
    assert record.status == "blocked" and "did not verify" in record.outcome
    verify = next(e for e in record.events if e.stage == "verify")
    assert {f["kind"] for f in verify.evidence["findings"] if f["severity"] == "block"} == {"out_of_range"}
    assert content_hash(spec.data) == before
    (urn,) = record.state["incidents"]
    assert _incidents(ws)[urn].status.state == s.IncidentStateClass.ACTIVE


def test_a_playbook_over_its_limit_refuses_and_changes_nothing(demo_copy):
    ws, _ = demo_copy
    spec = _land(ws, lambda f: f.assign(distance_km=f["distance_km"] / 1000,
                                        rain_mm=f["rain_mm"].mask(f.index % 5 < 3)))  # 60% nulls, quarantine limit 50%
    before = content_hash(spec.data)
    record = run_pipeline(ws, spec, now_ms=LATER_MS)
    assert record.status == "blocked"
    assert "over its limit of 50% of rows" in record.outcome
    assert content_hash(spec.data) == before
    assert [e.stage for e in record.events] == ["detect", "incident", "heal"]
