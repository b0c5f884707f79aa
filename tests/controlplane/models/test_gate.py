"""The promotion gate (pure), a worse candidate kept out, passports verified, and the audit's temporal join."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
import yaml
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import PASSPORT_PROPERTY
from controlplane.datahub.urns import model_urn
from controlplane.models.gate import GuardWarning, decide
from controlplane.models.passport import audit_versions, verify_passport
from controlplane.pipeline import reject, run_pipeline
from controlplane.spec import load_spec
from controlplane.vocab import Verdict as PromotionVerdict
from demo.seed import PIPELINE, UPSTREAMS
from tests.controlplane.models.evidence_support import GOOD
from tests.support import DEMO_NOW, active_incident


def _ms(delta: timedelta) -> int:
    return int((DEMO_NOW + delta).timestamp() * 1000)


def test_gate_approves_complete_evidence_that_beats_the_champion():
    assert decide(GOOD).verdict is PromotionVerdict.APPROVED


@pytest.mark.parametrize(
    "missing",
    [
        {"guard_verdict": None},
        {"guard_verdict": "BLOCKED"},
        {"candidate_score": None},
        {"candidate_score": float("nan")},
        {"champion_score": None},
        {"snapshot_hash": None},
        {"unhealed_upstream_incidents": ("urn:li:incident:x",)},
        {"governance": None},
    ],
)
def test_missing_or_failing_evidence_is_never_approved(missing):
    decision = decide(replace(GOOD, **missing))
    assert decision.verdict is PromotionVerdict.BLOCKED and decision.reasons


def test_small_gain_or_warnings_need_review_and_regression_blocks():
    assert decide(replace(GOOD, candidate_score=2.499)).verdict is PromotionVerdict.NEEDS_REVIEW
    assert (
        decide(replace(GOOD, guard_warnings=(GuardWarning("drift", "distance"),))).verdict
        is PromotionVerdict.NEEDS_REVIEW
    )
    assert decide(replace(GOOD, candidate_score=2.6)).verdict is PromotionVerdict.BLOCKED


@pytest.mark.parametrize(
    "candidate, error, verdict, why",
    [
        (2.51, 0.01, PromotionVerdict.APPROVED, "level with the champion"),  # 0.4% short, error 1%
        (2.51, 0.003, PromotionVerdict.NEEDS_REVIEW, "gain below"),  # 0.4% short, beyond an error of 0.3%
        (2.51, None, PromotionVerdict.NEEDS_REVIEW, "gain below"),  # no error measured: nothing is level
        (2.51, float("nan"), PromotionVerdict.NEEDS_REVIEW, "gain below"),
        (2.49, 0.01, PromotionVerdict.APPROVED, "level with the champion"),  # 0.4% better: not measurable either
        (2.56, 0.5, PromotionVerdict.BLOCKED, "regresses beyond 2.0% (sampling error ±50.00%)"),  # 2.4% short:
        # beyond max_regression whatever the error, and the reason says how far the holdout can tell
        (2.56, None, PromotionVerdict.BLOCKED, "regresses beyond 2.0%: mae"),
    ],
)
def test_a_shortfall_within_the_holdouts_sampling_error_is_level(candidate, error, verdict, why):
    evidence = replace(GOOD, champion_score=2.5, candidate_score=candidate, gain_error=error)
    decision = decide(evidence)
    assert decision.verdict is verdict and why in " ".join(decision.reasons)
    assert decide(evidence, level_within=0.0).verdict is not PromotionVerdict.APPROVED  # a team may turn it off
    assert decide(evidence, min_gain=0.05).verdict is not PromotionVerdict.APPROVED  # a bar the holdout can measure


@pytest.mark.parametrize(
    "warning, verdict",
    [
        (GuardWarning("drift", "distance"), PromotionVerdict.NEEDS_REVIEW),  # a feature the model leans on
        (GuardWarning("label_immature", "eta"), PromotionVerdict.NEEDS_REVIEW),  # the label
        (GuardWarning("volume_spike", None), PromotionVerdict.NEEDS_REVIEW),  # the table as a whole
        (GuardWarning("drift", "weekday"), PromotionVerdict.APPROVED),  # a feature the model barely uses
    ],
)
def test_a_warning_asks_for_a_person_only_where_it_can_change_the_model(warning, verdict):
    decision = decide(replace(GOOD, guard_warnings=(warning,)))
    assert decision.verdict is verdict
    assert str(warning) in " ".join(decision.reasons)  # on the record either way


def test_configuration_cannot_loosen_the_gate(demo_copy):
    from controlplane.errors import SpecError

    ws, _ = demo_copy
    path = ws.pipelines / "delivery-eta.yaml"
    raw = yaml.safe_load(path.read_text())
    for key, value in (("max_regression", 0.5), ("level_within", 2.0)):
        path.write_text(yaml.safe_dump({**raw, "promotion": {**raw["promotion"], key: value}}))
        with pytest.raises(SpecError, match="loosen the gate"):
            load_spec(ws, PIPELINE)


def test_a_worse_candidate_keeps_the_champion_a_decision_that_exits_0_and_the_reason_is_recorded(demo_copy):
    ws, _ = demo_copy
    path = ws.pipelines / "delivery-eta.yaml"
    raw = yaml.safe_load(path.read_text())
    raw["model"] = {"estimator": "sklearn.dummy.DummyRegressor", "params": {}, "seed": 1}
    path.write_text(yaml.safe_dump(raw))
    client = MlflowClient(tracking_uri=ws.mlflow_uri)
    champion = client.get_model_version_by_alias(PIPELINE, "champion").version
    record = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=_ms(timedelta(minutes=20)))
    assert record.status == "kept" and record.status.exit_code == 0  # clean data, the gate's decision: not a block
    version = next(e for e in record.events if e.stage == "promote").evidence["version"]
    assert client.get_model_version_by_alias(PIPELINE, "champion").version == champion
    tags = client.get_model_version(PIPELINE, str(version)).tags
    assert tags["kintsugi.verdict"] == "BLOCKED" and "regresses" in tags["kintsugi.reasons"]
    store = LiteMetadata(ws.datahub_db, read_only=True)
    urn = model_urn(PIPELINE, version)
    assert [t.tag for t in store.aspect(urn, s.GlobalTagsClass).tags] == ["urn:li:tag:blocked"]
    assert "regresses" in store.aspect(urn, s.MLModelPropertiesClass).description
    store.close()


def test_signed_passport_verifies_and_a_tampered_one_does_not(demo_copy, monkeypatch):
    ws, _ = demo_copy
    monkeypatch.delenv("KINTSUGI_PASSPORT_KEY", raising=False)  # signed by default: no key to configure
    path = ws.pipelines / "delivery-eta.yaml"
    raw = yaml.safe_load(path.read_text())
    raw["promotion"]["min_gain"] = 0.9  # stricter: this run will not be promoted, but it is trained and signed
    raw["model"]["seed"] = 1  # a fit the champion is not, so a candidate is trained on the same rows
    path.write_text(yaml.safe_dump(raw))
    record = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=_ms(timedelta(minutes=25)))
    assert record.status == "paused" and record.checkpoint["verdict"] == "NEEDS_REVIEW", record.outcome
    record = reject(ws, record.run_id, "the gain is too small to bother", by="tester")
    assert record.status == "rejected"
    version = next(e for e in record.events if e.stage == "promote").evidence["version"]
    assert verify_passport(ws, PIPELINE, version).ok
    store = LiteMetadata(ws.datahub_db)
    urn = model_urn(PIPELINE, version)
    properties = store.aspect(urn, s.MLModelPropertiesClass)
    passport = json.loads(properties.customProperties[PASSPORT_PROPERTY])
    passport["body"]["verdict"]["verdict"] = "APPROVED"
    properties.customProperties[PASSPORT_PROPERTY] = json.dumps(passport)
    store.emit([MCP(entityUrn=urn, aspect=properties)])
    store.close()
    check = verify_passport(ws, PIPELINE, version)
    assert not check.ok and check.status == "altered"
    assert any("DataHub copy: altered" in r and "verdict.verdict" in r for r in check.reasons), check.reasons
    assert "DataHub and MLflow copies differ" in check.reasons


def test_audit_flags_the_version_trained_inside_a_later_recorded_incident(demo_copy):
    """v1 trained at +1h before the demo day... an incident recorded afterwards covers only v1's instant."""
    ws, result = demo_copy
    first_at = result.first.now_ms  # the training instants
    healed_at = result.healed.now_ms
    store = LiteMetadata(ws.datahub_db)
    incident = "urn:li:incident:recorded-late"
    info = active_incident(
        UPSTREAMS[0], "orders double-counted for a day", healed_at + 3_600_000, startedAt=first_at - 3_600_000
    )
    store.emit([MCP(entityUrn=incident, aspect=info)], healed_at + 3_600_000)
    info.status = s.IncidentStatusClass(
        state=s.IncidentStateClass.RESOLVED,
        lastUpdated=s.AuditStampClass(time=first_at + 3_600_000, actor="urn:li:corpuser:oncall"),
    )
    store.emit([MCP(entityUrn=incident, aspect=info)], healed_at + 7_200_000)
    store.close()
    rows = {r.version: r for r in audit_versions(ws, PIPELINE)}
    assert rows[1].unsafe and rows[1].disagrees and incident in rows[1].recomputed
    assert not rows[2].unsafe and not rows[2].disagrees
    assert rows[2].champion
