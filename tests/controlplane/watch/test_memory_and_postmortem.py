"""Memory of failure modes (the third unit failure links the first two, re-uses the verified heal, is CRITICAL and
names the upstream owner) and postmortems (the demo incident's, with the poisoned-vs-healed metric, in DataHub,
linked from the dataset, and as markdown in the healing run's folder)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from datahub.metadata import schema_classes as s

from controlplane.datahub.incidents import incident_evidence
from controlplane.datahub.lite import LiteMetadata
from controlplane.frontdoor.scheduler import Scheduler
from controlplane.pipeline import run_pipeline
from controlplane.runs.journal import list_runs
from controlplane.spec import load_spec
from controlplane.stages.memory import fingerprint
from controlplane.watch.postmortem import read_postmortem
from demo.seed import FEATURE_TABLE, PIPELINE
from demo.story import land_batch
from tests.support import DEMO_NOW, LATER, iso, kintsugi, ms

OWNER = "urn:li:corpGroup:delivery-data"  # the orders table's owner (it produces distance_km)


def _unit_incidents(ws) -> list[tuple[str, s.IncidentInfoClass]]:
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        found = [(u, store.aspect(u, s.IncidentInfoClass)) for u in store.urns("incident")]
    finally:
        store.close()
    unit = [
        (u, i)
        for u, i in found
        if i is not None and (incident_evidence(i).get("key") or [None, None])[1] == "unit_mismatch"
    ]
    return sorted(unit, key=lambda pair: pair[1].created.time)


def test_the_third_unit_failure_links_the_first_two_reuses_the_heal_and_is_critical(demo_copy):
    ws, result = demo_copy
    spec = load_spec(ws, PIPELINE)
    runs = []
    for day in (0, 1):  # the demo healed the first; the orders service writes metres twice more
        anchor = LATER + timedelta(days=day)  # one more day each time: the rows already there stay as they were
        land_batch(ws, spec, seed=7, anchor=anchor, metres=True)
        runs.append(run_pipeline(ws, spec, now_ms=ms(anchor + timedelta(minutes=5))))
    assert all(r.resolved for r in runs), [r.outcome for r in runs]
    (first, one), (second, two), (third, three) = _unit_incidents(ws)
    assert first == result.healed.incidents[0]
    evidence = incident_evidence(three)
    assert evidence["seen_before"] == [first, second] and evidence["seen"] == 3
    assert evidence["fingerprint"] == incident_evidence(one)["fingerprint"] == incident_evidence(two)["fingerprint"]
    assert "seen 3 times, last healed by run " + runs[0].run_id in three.description
    assert (one.priority, two.priority, three.priority) == (1, 1, 0)  # the third in 30 days: CRITICAL
    assert [a.actor for a in three.assignees] == [OWNER] and OWNER in three.description
    assert two.assignees is None
    heal = next(e for e in runs[1].events if e.stage == "heal")
    (reused,) = heal.evidence["reused"]
    assert reused["from_run"] == runs[0].run_id and reused["params"]["scale"] == 1000.0
    assert heal.evidence["steps"][0]["params"]["scale"] == 1000.0


def test_a_different_unit_is_a_different_failure_mode():
    from guard.findings import make_finding
    from guard.kinds import FindingKind

    def unit(actual: str, scale: float):
        return make_finding(
            FindingKind.UNIT_MISMATCH,
            FEATURE_TABLE,
            "distance_km",
            observed={},
            expected={},
            message="",
            playbook="unit_rescale",
            declared_unit="km",
            actual_unit=actual,
            scale=scale,
            offset=0.0,
            rows=5,
        )

    assert fingerprint(unit("m", 1000.0)) == fingerprint(unit("m", 1000.0))
    assert fingerprint(unit("m", 1000.0)) != fingerprint(unit("mi", 0.621371))


def test_the_demo_incident_postmortem_is_written_to_datahub_and_printed(demo_copy, monkeypatch, capsys):
    ws, result = demo_copy
    incident = result.healed.incidents[0]
    code, out, err = kintsugi(monkeypatch, capsys, "postmortem", incident, "-w", str(ws.root))
    assert code == 0 and "not yet in DataHub" in err  # built on the fly before any watch pass
    code, out, err = kintsugi(
        monkeypatch, capsys, "watch", "--once", "-w", str(ws.root), "--now", iso(DEMO_NOW + timedelta(hours=1))
    )
    assert code == 0 and f"postmortem {incident}: written" in out, out + err
    code, out, err = kintsugi(monkeypatch, capsys, "postmortem", incident, "-w", str(ws.root))
    assert code == 0 and err == ""
    impact = result.healed.impact
    assert impact is not None and impact.poisoned is not None and impact.healed is not None
    assert out.startswith("# Postmortem: unit_mismatch on distance_km")
    assert f"holdout mae of a model trained on the poisoned data: {impact.poisoned:.4g}" in out
    assert f"on the healed data (v2): {impact.healed:.4g}" in out
    # the batch in metres is newer than the training split: trained on the same rows, scored the same on the holdout
    assert impact.poisoned == impact.healed
    assert (result.mae_poisoned, result.mae_healed) == (impact.poisoned, impact.healed)  # the demo's numbers
    assert "playbook `unit_rescale` on `distance_km`" in out and "rows touched" in out
    assert f"{PIPELINE} v2 trained on the healed data: APPROVED" in out
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        assert read_postmortem(store, incident) == out
        memory = store.aspect(FEATURE_TABLE, s.InstitutionalMemoryClass)
    finally:
        store.close()
    assert [e.url for e in memory.elements] == [incident]
    path = ws.run_dir(result.healed.run_id)
    assert [p.read_text() for p in path.glob("postmortem-*.md")] == [out]
    # idempotent: a second pass writes nothing more
    code, out, _ = kintsugi(
        monkeypatch, capsys, "watch", "--once", "-w", str(ws.root), "--now", iso(DEMO_NOW + timedelta(hours=2))
    )
    assert code == 0 and "postmortem" not in out
    # the watch's record is no run of the loop: a schedule still counts from the last real run
    loop = max(r.started_ms for r in list_runs(ws) if r.pipeline == PIPELINE and r.kind == "run")
    assert any(r.kind == "watch" and r.started_ms > loop for r in list_runs(ws))
    last = Scheduler(ws, clock=lambda: datetime(2000, 1, 1, tzinfo=timezone.utc)).last_runs([PIPELINE])[PIPELINE]
    assert last == datetime.fromtimestamp(loop / 1000, tz=timezone.utc)


def test_postmortem_of_an_unknown_or_active_incident(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    code, _, err = kintsugi(monkeypatch, capsys, "postmortem", "urn:li:incident:nope", "-w", str(ws.root))
    assert code == 2 and "DataHub holds no incident urn:li:incident:nope" in err
    code, _, err = kintsugi(monkeypatch, capsys, "postmortem", "not-an-urn", "-w", str(ws.root))
    assert code == 2 and "is not an incident URN" in err
