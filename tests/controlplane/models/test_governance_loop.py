"""Governance and trust through the whole loop on the demo estate (as `kintsugi demo` seeds it), read back from the
real stores: a PII tag on the upstream column a feature is made from blocks promotion; the pipeline's domain rule
lets it promote with the exception on the record; the trust score and its deductions are DataHub structured
properties of the version and its group and are signed in the passport."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from datahub.metadata import schema_classes as s

from controlplane.datahub.classifications import domain_mcps, field_marker_mcps
from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import read_passport
from controlplane.datahub.trust_properties import TRUST_SCORE, read_trust
from controlplane.datahub.urns import model_group_urn, model_urn
from controlplane.models.passport import verify_passport
from controlplane.pipeline import run_pipeline
from controlplane.spec import load_spec
from controlplane.vocab import Stage
from controlplane.workspace import Workspace
from demo.seed import FEATURE_TABLE, PIPELINE, UPSTREAMS, seed_estate
from tests.support import DEMO_NOW, ms

SOURCE = UPSTREAMS[0]  # the upstream the feature table's distance_km is named after
DOMAIN = "urn:li:domain:delivery-analytics"


@pytest.fixture
def estate(tmp_path):
    """The demo estate as seeded, before any run: the first run's candidate has no champion to beat."""
    ws = Workspace(tmp_path / "ws").ensure()
    seed_estate(ws, seed=7, anchor=DEMO_NOW)
    return ws


def _emit(ws, mcps) -> None:
    store = LiteMetadata(ws.datahub_db)
    try:
        store.emit(mcps, ms(DEMO_NOW))
    finally:
        store.close()


def _tag_source_column(ws) -> None:
    store = LiteMetadata(ws.datahub_db)
    try:
        store.emit(field_marker_mcps(store, SOURCE, "distance_km", "urn:li:tag:pii", ms(DEMO_NOW)), ms(DEMO_NOW))
    finally:
        store.close()


def _allow_pii_in(ws, domain: str) -> None:
    path = ws.pipelines / f"{PIPELINE}.yaml"
    raw = yaml.safe_load(path.read_text())
    raw["governance"] = {"pii_allowed_in_domain": domain}
    path.write_text(yaml.safe_dump(raw))


def _run(ws, minutes: int):
    return run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(DEMO_NOW + timedelta(minutes=minutes)))


def test_a_pii_tag_on_the_upstream_column_of_a_feature_blocks_promotion_and_says_why(estate):
    ws = estate
    _tag_source_column(ws)
    record = _run(ws, 60)
    assert record.status == "blocked", record.outcome
    promote = record.last_event(Stage.PROMOTE)
    assert promote.evidence["reasons"][0] == (
        "governance: PII on feature distance_km: urn:li:tag:pii on column distance_km, which it is made from "
        f"(distance_km of {SOURCE})"
    )
    (finding,) = [f for f in promote.evidence["governance"] if f["severity"] == "block"]
    assert (finding["kind"], finding["column"], finding["dataset"]) == ("pii", "distance_km", SOURCE)
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        trust = read_trust(store, model_urn(PIPELINE, promote.evidence["version"]))
    finally:
        store.close()
    assert trust is not None and any(
        d.reason == "governance findings block" and d.points == 30 for d in trust.deductions
    )


def test_the_domain_rule_promotes_pii_with_the_exception_recorded_and_the_trust_score_reads_back(estate):
    ws = estate
    _tag_source_column(ws)
    _allow_pii_in(ws, DOMAIN)
    _emit(ws, domain_mcps(SOURCE, DOMAIN) + domain_mcps(FEATURE_TABLE, DOMAIN))
    record = _run(ws, 60)
    assert record.status == "promoted", record.outcome
    promote = record.last_event(Stage.PROMOTE)
    version = promote.evidence["version"]
    (exception,) = [r for r in promote.evidence["reasons"] if r.startswith("governance exception: ")]
    assert f"allowed: it lies in {DOMAIN} (governance.pii_allowed_in_domain)" in exception
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        on_version = read_trust(store, model_urn(PIPELINE, version))
        on_group = read_trust(store, model_group_urn(PIPELINE))
        definition = store.aspect(TRUST_SCORE, s.StructuredPropertyDefinitionClass)
        passport = read_passport(store, PIPELINE, version)
    finally:
        store.close()
    assert definition is not None and definition.qualifiedName == "kintsugi.trust_score"
    assert on_version is not None and on_version.exceptions == (exception.removeprefix("governance exception: "),)
    rows = [(d.reason, d.points) for d in on_version.deductions]
    assert ("governance exceptions are in force", 5) in rows
    assert on_version.score == 100 - sum(points for _, points in rows) and on_version.band == "high"
    assert on_group is not None and (on_group.score, on_group.version) == (on_version.score, version)
    signed = passport["body"]
    assert signed["trust"]["score"] == on_version.score
    assert [(d["reason"], d["points"], d["evidence"]) for d in signed["trust"]["deductions"]] == [
        (d.reason, d.points, d.evidence) for d in on_version.deductions
    ]
    assert signed["governance"]["rules"]["pii_allowed_in_domain"] == DOMAIN
    assert [f["severity"] for f in signed["governance"]["findings"] if f["kind"] == "pii" and f["column"]] == [
        "exception"
    ]
    check = verify_passport(ws, PIPELINE, version)
    assert check.ok, check.reasons


def test_the_trust_score_is_signed_a_changed_score_in_datahub_does_not_verify(demo_copy):
    import json

    from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP

    from controlplane.datahub.models import PASSPORT_PROPERTY
    from tests.support import champion

    ws, _ = demo_copy
    version = champion(ws)
    store = LiteMetadata(ws.datahub_db)
    try:
        urn = model_urn(PIPELINE, version)
        properties = store.aspect(urn, s.MLModelPropertiesClass)
        document = json.loads(properties.customProperties[PASSPORT_PROPERTY])
        document["body"]["trust"]["score"] = 100
        properties.customProperties[PASSPORT_PROPERTY] = json.dumps(document, sort_keys=True)
        store.emit([MCP(entityUrn=urn, aspect=properties)])
    finally:
        store.close()
    check = verify_passport(ws, PIPELINE, version)
    assert not check.ok and check.status == "altered", check.reasons
