"""`kintsugi watch`: an incident raised later by another team on an upstream puts the champion's training instant
under it; one reconcile pass marks the version at risk and — under the pipeline's policy — rolls the champion
back (auto, undoable), proposes it (ratify, through `approve`) or only reports it (dry-run). Resolving the
incident retrains every pipeline that reads the upstream. Real stores throughout."""

from __future__ import annotations

from datetime import timedelta

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.champion.promote import promote_version
from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.model_risk import UNSAFE_TAG, at_risk_urn, risks_of
from controlplane.datahub.models import read_model_tags
from controlplane.datahub.urns import model_urn
from controlplane.pipeline import approve
from controlplane.runs.journal import RunRecord, list_runs, load_run
from controlplane.takeback.undo import undo
from controlplane.vocab import Policy, RunKind
from controlplane.watch.actions import event_urns
from controlplane.watch.follow import on_change, watch_pass
from controlplane.watch.retrain import in_quiet_hours, is_loop_run, last_loop_run_ms
from demo.seed import CANCEL_PIPELINE, PIPELINE, UPSTREAMS
from tests.support import DEMO_NOW, active_incident, champion, iso, kintsugi, ms, store_hashes

ORDERS = UPSTREAMS[0]
INCIDENT = "urn:li:incident:orders-double-counted"
ONCALL = "urn:li:corpuser:orders-oncall"
RAISED = DEMO_NOW + timedelta(hours=1)  # recorded an hour after v2 was trained (at DEMO_NOW + 5 min)...
STARTED = DEMO_NOW - timedelta(days=1)  # ...for a failure that began a day before: v2's instant is covered, v1's not
WATCH_AT = DEMO_NOW + timedelta(hours=2)


def raise_upstream_incident(ws, *, resolved_at=None, port=None) -> None:
    """Another team's incident on the orders table (priority HIGH), optionally resolved later; written to the
    workspace's DataHub Lite, or through `port` (a GMS)."""
    store = port or LiteMetadata(ws.datahub_db)
    info = active_incident(
        ORDERS, "orders double-counted since yesterday", ms(RAISED), actor=ONCALL, startedAt=ms(STARTED), priority=1
    )
    store.emit([MCP(entityUrn=INCIDENT, aspect=info)], ms(RAISED))
    if resolved_at is not None:
        info.status = s.IncidentStatusClass(
            state=s.IncidentStateClass.RESOLVED,
            lastUpdated=s.AuditStampClass(time=ms(resolved_at), actor=ONCALL),
            message="dedup job fixed",
        )
        store.emit([MCP(entityUrn=INCIDENT, aspect=info)], ms(resolved_at))
    if port is None:
        store.close()


def _watch(monkeypatch, capsys, ws, *more, at=WATCH_AT):
    return kintsugi(monkeypatch, capsys, "watch", "--once", "-w", str(ws.root), "--now", iso(at), *more)


def _records(ws, kind):
    return [r for r in list_runs(ws) if r.kind == kind]


def _mark(ws, version=2):
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        return (
            store.aspect(at_risk_urn(PIPELINE, version, INCIDENT), s.IncidentInfoClass),
            store.history(at_risk_urn(PIPELINE, version, INCIDENT), s.IncidentInfoClass),
            read_model_tags(store, model_urn(PIPELINE, version)),
        )
    finally:
        store.close()


def _mlflow_tags(ws, version, model=PIPELINE):
    return MlflowClient(tracking_uri=ws.mlflow_uri).get_model_version(model, str(version)).tags


def test_auto_rolls_the_champion_back_once_and_undo_restores_it(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    assert champion(ws) == 2
    raise_upstream_incident(ws)
    code, out, err = _watch(monkeypatch, capsys, ws)
    assert code == 0, out + err
    assert f"incident {INCIDENT} raised by {ONCALL}" in out
    assert champion(ws) == 1 and champion(ws, CANCEL_PIPELINE) == 1  # cancel-risk v1 predates the failure
    (rollback,) = _records(ws, "rollback")
    assert rollback.status == "rolled-back" and rollback.rollback.causes == (INCIDENT,)
    alias = [e for e in rollback.ledger if e.kind == "mlflow-alias"]
    assert [(e.detail["version"], e.detail["previous"], e.state) for e in alias] == [(1, 2, "done")]
    # v2 is marked at risk: an incident on its mlModel linked to the upstream one, ACTIVE while it served
    info, history, _ = _mark(ws)
    assert info.entities == [model_urn(PIPELINE, 2)] and info.priority == 1 and INCIDENT in info.description
    assert [h.status.state for h in history] == ["ACTIVE", "RESOLVED"] and "rolled back" in info.status.message
    assert INCIDENT in _mlflow_tags(ws, 2)["kintsugi.at_risk"]
    store = LiteMetadata(ws.datahub_db, read_only=True)
    marks = risks_of(store, caused_by=INCIDENT)
    store.close()
    assert [(m.pipeline, m.version, m.state) for m in marks] == [(PIPELINE, 2, "RESOLVED")]
    # level-based: a second pass finds nothing to do
    before = len(list_runs(ws))
    assert _watch(monkeypatch, capsys, ws)[0] == 0
    assert len(list_runs(ws)) == before and champion(ws) == 1
    # a standing rollback keeps v2 out of settle: undoing an unrelated move of the champion lands on v1, not v2
    manual = promote_version(ws, PIPELINE, 1, reason="back to the first", by="tester")
    assert undo(ws, manual.run_id).status == "undone" and champion(ws) == 1
    # undo of the rollback restores v2, at risk again; the next pass does not roll back twice: it flags v2
    assert undo(ws, rollback.run_id).status == "undone"
    assert champion(ws) == 2
    assert _mark(ws)[0].status.state == "ACTIVE"
    code, out, _ = _watch(monkeypatch, capsys, ws)
    assert code == 1 and champion(ws) == 2
    assert f"the rollback of run {rollback.run_id} was undone" in out
    assert UNSAFE_TAG in _mark(ws)[2] and "undone" in _mlflow_tags(ws, 2)["kintsugi.flagged"]
    assert len(_records(ws, "rollback")) == 1


def test_ratify_proposes_the_rollback_and_approve_applies_it(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    raise_upstream_incident(ws)
    code, out, _ = _watch(monkeypatch, capsys, ws, "--policy", "ratify")
    assert code == 1 and champion(ws) == 2  # waits, the champion flagged meanwhile
    (proposal,) = _records(ws, "rollback")
    assert proposal.status == "paused" and proposal.checkpoint == {
        "gate": "rollback",
        "from_version": 2,
        "to_version": 1,
        "causes": [INCIDENT],
    }
    assert UNSAFE_TAG in _mark(ws)[2]
    code, out, _ = _watch(monkeypatch, capsys, ws, "--policy", "ratify")
    assert code == 1 and "waits for `kintsugi approve`" in out and len(_records(ws, "rollback")) == 1
    record = approve(
        ws, proposal.run_id, reason="orders are wrong", by="tester", now_ms=ms(WATCH_AT + timedelta(minutes=5))
    )
    assert record.status == "rolled-back", record.outcome
    assert champion(ws) == 1 and "approved by tester: orders are wrong" in record.outcome
    assert UNSAFE_TAG not in _mark(ws)[2] and "kintsugi.flagged" not in _mlflow_tags(ws, 2)
    assert _watch(monkeypatch, capsys, ws, "--policy", "ratify")[0] == 0


def test_a_rejected_rollback_keeps_the_champion_flagged_and_is_not_proposed_again(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    raise_upstream_incident(ws)
    assert _watch(monkeypatch, capsys, ws, "--policy", "ratify")[0] == 1
    (proposal,) = _records(ws, "rollback")
    code, out, _ = kintsugi(
        monkeypatch, capsys, "reject", proposal.run_id, "--reason", "v1 is worse", "-w", str(ws.root)
    )
    assert code == 0 and "v2 stays champion, flagged" in out
    code, out, _ = _watch(monkeypatch, capsys, ws, "--policy", "ratify")
    assert code == 1 and f"the rollback of run {proposal.run_id} was rejected" in out
    assert champion(ws) == 2 and UNSAFE_TAG in _mark(ws)[2] and len(_records(ws, "rollback")) == 1


def test_dry_run_only_reports(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    raise_upstream_incident(ws)
    before = store_hashes(ws)
    code, out, _ = _watch(monkeypatch, capsys, ws, "--policy", "dry-run")
    assert code == 1 and f"{PIPELINE}: reported" in out and f"v2 <- {INCIDENT}" in out
    assert store_hashes(ws) == before and champion(ws) == 2
    assert not _records(ws, "rollback") and not _records(ws, "watch")


def test_resolving_the_upstream_incident_retrains_every_pipeline_that_reads_it(demo_copy):
    ws, _ = demo_copy
    resolved = DEMO_NOW + timedelta(minutes=90)
    raise_upstream_incident(ws, resolved_at=resolved)
    report = watch_pass(ws, now_ms=ms(WATCH_AT))
    started = {r["pipeline"]: r["run_id"] for r in report.retrains}
    assert set(started) == {PIPELINE, CANCEL_PIPELINE}, report.lines()
    for pipeline, run_id in started.items():
        record = load_run(ws, run_id)
        assert record.pipeline == pipeline and record.now_ms == ms(WATCH_AT) and record.status.finished
    assert champion(ws) != 2  # rolled back first (v1), then the retrain may promote a new version
    # the upstream incident's postmortem names the version at risk, the rollback and both retrains
    store = LiteMetadata(ws.datahub_db, read_only=True)
    notes = store.aspect(INCIDENT, s.IncidentNotesClass)
    store.close()
    text = notes.notes[-1].message
    assert f"at risk: {PIPELINE} v2" in text and f"retrained: {CANCEL_PIPELINE} run {started[CANCEL_PIPELINE]}" in text
    assert "No Kintsugi heal: resolved at the source by urn:li:corpuser:orders-oncall" in text
    # level-based: the next pass starts nothing
    assert watch_pass(ws, now_ms=ms(WATCH_AT + timedelta(minutes=1))).retrains == []


def test_an_event_only_wakes_the_pass_for_a_watched_urn(demo_copy):
    ws, _ = demo_copy
    before = store_hashes(ws)
    assert on_change(ws, ["urn:li:dataset:(urn:li:dataPlatform:kafka,unrelated,PROD)"], now_ms=ms(WATCH_AT)) is None
    assert store_hashes(ws) == before
    raise_upstream_incident(ws)

    class Change:  # the shape of a DataHub Actions EntityChangeEvent envelope
        event = type("E", (), {"entityUrn": ORDERS, "modifier": INCIDENT})()

    assert event_urns(Change()) == [ORDERS, INCIDENT]
    report = on_change(ws, event_urns(Change()), now_ms=ms(WATCH_AT))
    assert report is not None and [c.action for c in report.champions if c.pipeline == PIPELINE] == ["rolled-back"]


def test_a_land_an_init_or_a_watch_pass_is_not_the_retrain_a_resolution_asks_for():
    def record(run_id, now_ms, kind=RunKind.LOOP):
        return RunRecord(run_id, PIPELINE, Policy.AUTO, now_ms, now_ms, kind=kind)

    records = [
        record("loop", 100),
        record("init", 150, RunKind.INIT),
        record("land", 200, RunKind.LAND),
        record("watch", 300, RunKind.WATCH),
        record("promote", 400, RunKind.PROMOTE),
    ]
    assert last_loop_run_ms(records, PIPELINE) == 100
    assert [r.run_id for r in records if is_loop_run(r)] == ["loop"]


def test_quiet_hours_wrap_midnight():
    at = DEMO_NOW.replace(hour=23)
    assert in_quiet_hours("22-06", ms(at)) and in_quiet_hours("22-06", ms(at.replace(hour=5)))
    assert not in_quiet_hours("22-06", ms(at.replace(hour=6))) and not in_quiet_hours(None, ms(at))
    assert in_quiet_hours("01-03", ms(at.replace(hour=2))) and not in_quiet_hours("01-03", ms(at))


def test_serve_runs_the_watch_while_it_serves(demo_run):
    from controlplane.frontdoor.access import ApiSettings
    from mcp_server.commands import build_app, server_watcher
    from tests.support import TOKEN, served

    ws, _ = demo_run
    watcher = server_watcher(ws, 3600.0)  # no pass within the test: only its life with the server's
    with served(build_app(ws, ApiSettings(token=TOKEN), watcher=watcher)):
        assert watcher._thread is not None and watcher._thread.is_alive()
    assert not watcher._thread.is_alive()
