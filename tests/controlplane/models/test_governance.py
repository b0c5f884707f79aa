"""The governance scan and the trust score, pure: what marks PII or restricted data, how a trained column is traced
to its sources, what blocks, what asks a person, what a spec's rule may allow (and only record), and a score that
shows its work."""

from __future__ import annotations

from dataclasses import replace

import pytest

from controlplane.datahub.classifications import Classified, FieldMarker, Marker
from controlplane.datahub.column_lineage import ColumnEdge, ColumnRef
from controlplane.models.gate import GuardWarning, decide
from controlplane.models.governance import (
    Classification,
    GovernanceKind,
    GovernanceRules,
    GovernanceSeverity,
    TrainingLineage,
    classify,
    scan,
)
from controlplane.models.trust import POINTS, TrustBand, TrustEvidence, band_of, trust_score
from controlplane.vocab import Verdict
from tests.controlplane.models.evidence_support import GOOD

TABLE = "urn:li:dataset:(urn:li:dataPlatform:file,features,PROD)"
SOURCE = "urn:li:dataset:(urn:li:dataPlatform:postgres,db.source,PROD)"
DOMAIN = "urn:li:domain:allowed"
PII = Marker("urn:li:tag:pii", "pii")


def _lineage(*, source: Classified | None = None, table: Classified | None = None, edges=()) -> TrainingLineage:
    return TrainingLineage(
        table=TABLE,
        label="y",
        features=("a", "b"),
        datasets=(
            table or Classified(TABLE, True, fields=("a", "b", "y", "key")),
            source or Classified(SOURCE, True, fields=("a", "total", "name")),
        ),
        upstreams={TABLE: (SOURCE,), SOURCE: ()},
        edges={TABLE: tuple(edges)},
    )


def _marked(field: str, marker: Marker = PII, **more) -> Classified:
    return Classified(SOURCE, True, field_markers=(FieldMarker(field, marker),), fields=("a", "total", "name"), **more)


@pytest.mark.parametrize(
    ("name", "marks"),
    [
        ("pii", (Classification.PII,)),
        ("PII", (Classification.PII,)),
        ("Pii.Email", (Classification.PII,)),
        ("Classification.PII", (Classification.PII,)),
        ("Classification.Confidential", (Classification.RESTRICTED,)),
        ("restricted", (Classification.RESTRICTED,)),
        ("champion", ()),
        ("happiness", ()),  # a word, not letters inside a word
    ],
)
def test_a_name_marks_a_classification_by_its_words(name, marks):
    assert classify(name) == marks


def test_pii_on_the_upstream_column_a_feature_is_named_after_blocks():
    (finding,) = scan(_lineage(source=_marked("a")), GovernanceRules())
    assert (finding.kind, finding.severity, finding.column) == (GovernanceKind.PII, GovernanceSeverity.BLOCK, "a")
    assert (finding.dataset, finding.source_column, finding.marker) == (SOURCE, "a", PII.urn)
    assert "which it is made from (a of " in finding.message


def test_declared_column_lineage_replaces_the_namesake_and_reaches_any_column():
    edges = [ColumnEdge("b", ColumnRef(SOURCE, "name"))]
    (finding,) = scan(_lineage(source=_marked("name"), edges=edges), GovernanceRules())
    assert (finding.column, finding.source_column, finding.severity) == ("b", "name", GovernanceSeverity.BLOCK)
    moved = [ColumnEdge("a", ColumnRef(SOURCE, "total"))]  # `a` now made from `total`: its namesake is no source
    (noted,) = scan(_lineage(source=_marked("a"), edges=moved), GovernanceRules())
    assert noted.severity is GovernanceSeverity.NOTED and noted.column is None


def test_restricted_on_the_label_blocks_and_a_pii_rule_does_not_allow_it():
    table = Classified(
        TABLE,
        True,
        fields=("a", "b", "y"),
        field_markers=(FieldMarker("y", Marker("urn:li:tag:Restricted", "Restricted")),),
    )
    table = replace(table, domains=(DOMAIN,))
    (finding,) = scan(_lineage(table=table), GovernanceRules(pii_allowed_in_domain=DOMAIN))
    assert (finding.kind, finding.severity, finding.column) == (
        GovernanceKind.RESTRICTED,
        GovernanceSeverity.BLOCK,
        "y",
    )
    assert finding.message.startswith("RESTRICTED on the label y")


def test_the_pii_exception_holds_only_where_every_dataset_it_passes_is_in_the_domain():
    rules = GovernanceRules(pii_allowed_in_domain=DOMAIN)
    source_only = _lineage(source=_marked("a", domains=(DOMAIN,)))
    (refused,) = scan(source_only, rules)
    assert refused.severity is GovernanceSeverity.BLOCK
    assert f"the exception for {DOMAIN} does not hold: {TABLE} is in no domain" in refused.message
    both = replace(source_only, datasets=(replace(source_only.datasets[0], domains=(DOMAIN,)), source_only.datasets[1]))
    (allowed,) = scan(both, rules)
    assert allowed.severity is GovernanceSeverity.EXCEPTION and f"allowed: it lies in {DOMAIN}" in allowed.message


def test_a_deprecated_upstream_or_a_marked_dataset_asks_for_review_and_escalate_makes_it_block():
    source = Classified(
        SOURCE, True, markers=(Marker("urn:li:glossaryTerm:Classification.PII", "Classification.PII"),), deprecated=True
    )
    found = scan(_lineage(source=source), GovernanceRules())
    assert [(f.kind, f.severity) for f in found] == [
        (GovernanceKind.PII, GovernanceSeverity.REVIEW),
        (GovernanceKind.DEPRECATED_UPSTREAM, GovernanceSeverity.REVIEW),
    ]
    escalated = scan(_lineage(source=source), GovernanceRules(escalate=(GovernanceKind.DEPRECATED_UPSTREAM,)))
    assert [f.severity for f in escalated] == [GovernanceSeverity.REVIEW, GovernanceSeverity.BLOCK]


def test_a_feature_made_from_the_labels_source_column_is_lineage_leakage():
    edges = [ColumnEdge("b", ColumnRef(SOURCE, "total")), ColumnEdge("y", ColumnRef(SOURCE, "total"))]
    (finding,) = scan(_lineage(edges=edges), GovernanceRules())
    assert (finding.kind, finding.severity) == (GovernanceKind.LINEAGE_LEAKAGE, GovernanceSeverity.BLOCK)
    assert (finding.column, finding.dataset, finding.source_column) == ("b", SOURCE, "total")
    assert scan(_lineage(edges=edges[:1]), GovernanceRules()) == ()  # the label made from another column: none


def test_the_gate_blocks_on_a_blocking_finding_asks_on_a_review_and_names_an_exception():
    blocking = scan(_lineage(source=_marked("a")), GovernanceRules())
    decision = decide(replace(GOOD, governance=blocking))
    assert decision.verdict is Verdict.BLOCKED and decision.reasons[0].startswith("governance: PII on feature a")
    review = scan(_lineage(source=replace(_marked("x"), deprecated=True)), GovernanceRules())
    assert decide(replace(GOOD, governance=review)).verdict is Verdict.NEEDS_REVIEW
    allowed = replace(blocking[0], severity=GovernanceSeverity.EXCEPTION)
    decision = decide(replace(GOOD, governance=(allowed,)))
    assert decision.verdict is Verdict.APPROVED and f"governance exception: {allowed.message}" in decision.reasons


CLEAN = TrustEvidence(
    guard_verdict="CLEAN",
    guard_warnings=(),
    acceptances=(),
    heal_steps=(),
    label_freshness="label_ts within 24 h",
    has_champion=True,
    gain=0.05,
    min_gain=0.005,
    governance=(),
    unsigned=None,
)


def test_clean_evidence_that_beats_the_champion_scores_100_with_no_deduction():
    assert trust_score(CLEAN) == trust_score(CLEAN) and trust_score(CLEAN).score == 100
    assert trust_score(CLEAN).deductions == () and trust_score(CLEAN).band is TrustBand.HIGH


def test_each_deduction_is_a_row_with_its_reason_points_and_evidence_and_repeats_stop_at_a_cap():
    warnings = tuple(GuardWarning("drift", f"c{i}") for i in range(9))
    evidence = replace(CLEAN, guard_warnings=warnings, heal_steps=("unit_rescale on a",), label_freshness=None)
    trust = trust_score(evidence)
    rows = {d.reason: d for d in trust.deductions}
    assert rows["guard warnings stand on the bytes trained on"].points == POINTS["guard_warning"].cap
    assert rows["the bytes trained on were healed by this run"].evidence == "unit_rescale on a"
    assert "no label freshness SLA is checked" in rows
    assert trust.score == 100 - sum(d.points for d in trust.deductions) == 65 and trust.band is TrustBand.MEDIUM


def test_an_unsigned_passport_and_a_missing_scan_bring_the_score_low():
    trust = trust_score(replace(CLEAN, unsigned="no key", governance=None))
    assert trust.score == 40 and trust.band is TrustBand.LOW
    assert [d.reason for d in trust.deductions] == [
        "the governance scan is missing",
        "the passport or the model's files are not signed",
    ]


@pytest.mark.parametrize(
    ("score", "band"), [(80, TrustBand.HIGH), (79, TrustBand.MEDIUM), (60, TrustBand.MEDIUM), (59, TrustBand.LOW)]
)
def test_the_band_starts_at_80_and_60(score, band):
    assert band_of(score) is band


def _spec_with(tmp_path, governance):
    from pathlib import Path

    import yaml

    from controlplane.spec import parse_spec
    from controlplane.workspace import Workspace

    source = Path(__file__).resolve().parents[3] / "demo" / "pipelines" / "delivery-eta.yaml"
    raw = {**yaml.safe_load(source.read_text()), "governance": governance}
    return parse_spec(raw, tmp_path / "p.yaml", Workspace(tmp_path))


def test_the_specs_governance_rules_are_read_and_only_escalations_or_the_exception_are_accepted(tmp_path):
    from controlplane.errors import InputError, SpecError

    rules = _spec_with(tmp_path, {"pii_allowed_in_domain": DOMAIN, "escalate": ["deprecated_upstream"]}).governance
    assert rules == GovernanceRules(DOMAIN, (GovernanceKind.DEPRECATED_UPSTREAM,))
    assert _spec_with(tmp_path, None).governance == GovernanceRules()
    with pytest.raises(SpecError, match="has governance: "):
        _spec_with(tmp_path, {"pii_allowed": True})
    with pytest.raises(SpecError, match="governance escalate"):
        _spec_with(tmp_path, {"escalate": ["drift"]})
    with pytest.raises(InputError, match="not a DataHub domain URN"):
        _spec_with(tmp_path, {"pii_allowed_in_domain": "analytics"})
