"""Evidence for the promotion gate that passes every rule: a test replaces the one part it is about."""

from __future__ import annotations

from controlplane.models.gate import PromotionEvidence

GOOD = PromotionEvidence(
    metric="mae",
    guard_verdict="CLEAN",
    guard_warnings=(),
    unhealed_upstream_incidents=(),
    candidate_score=2.0,
    has_champion=True,
    champion_score=2.5,
    snapshot_hash="sha256:x",
    label="eta",
    leaned_on=("distance",),
    governance=(),
)
