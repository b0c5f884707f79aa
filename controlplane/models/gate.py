"""The promotion gate: a pure, escalate-only decision over evidence. Missing evidence is never APPROVED.

A guard warning asks for a person only where it can change what the model does: on the label, on a feature the
model leans on (`training.model.leaned_on`), or on the table as a whole (no column). A warning on a feature the
model barely uses, or on columns the contract does not name (training never reads them, even when a wide table's
are grouped into one finding), is recorded in the decision's reasons, and a clean, better candidate promotes
without a person.

"Better" is read against what the holdout can tell apart. The tolerance is `level_within` times the gain's sampling
error on this holdout (`training.model.gain_error_of`). A candidate beats the champion by `min_gain`. Where `min_gain` is
itself within the tolerance, the holdout cannot measure such a gain, so a candidate within the tolerance of the
champion (and above `-max_regression`) is level with it: nothing shows the champion is better, the candidate was
trained on newer rows, and it promotes, with the tolerance in its reasons. Where the holdout can measure `min_gain`
(a team's stricter bar, or a large holdout), `min_gain` stands. Otherwise a person is asked; a shortfall beyond
`max_regression` blocks, whatever the error (the team's bound; its reason names the error, so a reader can tell a
regression the holdout measures from one within its noise). An unmeasured error makes no candidate level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from controlplane.models.governance import GovernanceFinding, GovernanceSeverity
from controlplane.spec import DEFAULT_LEVEL_WITHIN, DEFAULT_MAX_REGRESSION, DEFAULT_MIN_GAIN, check_rules
from controlplane.vocab import Verdict
from profiles.records import Record
from training.model import relative_gain

__all__ = [
    "GuardWarning",
    "PromotionEvidence",
    "PromotionDecision",
    "decide",
    "check_rules",
    "DEFAULT_MIN_GAIN",
    "DEFAULT_MAX_REGRESSION",
    "DEFAULT_LEVEL_WITHIN",
]

_UNREAD = frozenset({"column_unexpected"})  # guard warnings on columns training never reads


@dataclass(frozen=True)
class GuardWarning(Record):
    kind: str
    column: str | None  # None: the table as a whole

    def __str__(self) -> str:
        return f"{self.kind}:{self.column or '-'}"


@dataclass(frozen=True)
class PromotionEvidence(Record):
    metric: str
    guard_verdict: str | None  # the guard on the data trained on, after any heal
    guard_warnings: tuple[GuardWarning, ...]
    unhealed_upstream_incidents: tuple[str, ...]
    candidate_score: float | None
    has_champion: bool
    champion_score: float | None
    snapshot_hash: str | None
    label: str | None = None
    leaned_on: tuple[str, ...] = ()  # the features the candidate leans on, most important first
    gain_error: float | None = None  # the gain's sampling error on the holdout (`training.model.gain_error_of`)
    governance: tuple[GovernanceFinding, ...] | None = None  # the scan of the training lineage; None: not scanned

    def governed(self, severity: GovernanceSeverity) -> list[GovernanceFinding]:
        return [f for f in self.governance or () if f.severity is severity]


@dataclass(frozen=True)
class PromotionDecision(Record):
    verdict: Verdict
    reasons: tuple[str, ...]
    gain: float | None
    champion_kept: bool = False  # BLOCKED only because the candidate lost to the champion: a decision, not a block


def decide(
    evidence: PromotionEvidence,
    min_gain: float = DEFAULT_MIN_GAIN,
    max_regression: float = DEFAULT_MAX_REGRESSION,
    level_within: float = DEFAULT_LEVEL_WITHIN,
) -> PromotionDecision:
    blocked = _blocking_reasons(evidence)
    if blocked:
        return PromotionDecision(Verdict.BLOCKED, tuple(blocked), None)
    assert evidence.candidate_score is not None
    if not evidence.has_champion:
        return _soft(evidence, None, ["no champion yet: the candidate is the first"], min_gain)
    assert evidence.champion_score is not None
    gain = relative_gain(evidence.metric, evidence.candidate_score, evidence.champion_score)
    where = f"{evidence.metric} {evidence.candidate_score:.4g} vs champion {evidence.champion_score:.4g} ({gain:+.2%})"
    error = evidence.gain_error
    measured = f" (sampling error ±{error:.2%})" if error is not None and math.isfinite(error) else ""
    if gain < -max_regression:
        regresses = f"candidate regresses beyond {max_regression:.1%}{measured}: {where}"
        return PromotionDecision(Verdict.BLOCKED, (regresses,), gain, champion_kept=True)
    if gain >= min_gain:
        return _soft(evidence, gain, [f"beats the champion: {where}"], min_gain)
    tolerance = level_within * error if level_within > 0 and error is not None and math.isfinite(error) else None
    if tolerance is not None and min_gain <= tolerance and gain >= -tolerance:
        level = f"level with the champion within the holdout's sampling error (±{tolerance:.2%}): {where}"
        return _soft(evidence, gain, [level], min_gain)
    below = f"gain below {min_gain:.1%}{measured}: {where}"
    return PromotionDecision(Verdict.NEEDS_REVIEW, (below, *_governance_reasons(evidence)), gain)


def _governance_reasons(evidence: PromotionEvidence) -> list[str]:
    """The exceptions the scan recorded, then what it asks a person to review."""
    return [f"governance exception: {f.message}" for f in evidence.governed(GovernanceSeverity.EXCEPTION)] + [
        f"governance asks for review: {f.message}" for f in evidence.governed(GovernanceSeverity.REVIEW)
    ]


def _soft(evidence: PromotionEvidence, gain: float | None, reasons: list[str], min_gain: float) -> PromotionDecision:
    reasons += _governance_reasons(evidence)
    review = bool(evidence.governed(GovernanceSeverity.REVIEW))
    touching, aside = _warnings_by_reach(evidence)
    if touching:
        shown = ", ".join(str(w) for w in touching)
        reasons.append(
            f"{len(touching)} guard warning(s) on the label, a feature the model leans on or the table stand: {shown}"
        )
    if review or touching:
        return PromotionDecision(Verdict.NEEDS_REVIEW, tuple(reasons), gain)
    if aside:
        reasons.append(
            f"{len(aside)} guard warning(s) only on columns the model does not read or lean on: "
            + ", ".join(str(w) for w in aside)
        )
    return PromotionDecision(Verdict.APPROVED, tuple(reasons), gain)


def _warnings_by_reach(evidence: PromotionEvidence) -> tuple[list[GuardWarning], list[GuardWarning]]:
    """(warnings that can change what the model does, the others)."""
    touching: list[GuardWarning] = []
    aside: list[GuardWarning] = []
    for warning in evidence.guard_warnings:
        reaches = warning.kind not in _UNREAD and (
            warning.column is None or warning.column == evidence.label or warning.column in evidence.leaned_on
        )
        (touching if reaches else aside).append(warning)
    return touching, aside


def _blocking_reasons(evidence: PromotionEvidence) -> list[str]:
    reasons = []
    if evidence.guard_verdict is None:
        reasons.append("guard report at training time is missing")
    elif evidence.guard_verdict != "CLEAN":
        reasons.append(f"guard at training time was {evidence.guard_verdict}, not CLEAN")
    if evidence.unhealed_upstream_incidents:
        reasons.append(
            "upstream incident(s) ACTIVE at training time and not healed by this run: "
            + ", ".join(evidence.unhealed_upstream_incidents)
        )
    if not _finite(evidence.candidate_score):
        reasons.append("candidate score is missing or not a number")
    if evidence.has_champion and not _finite(evidence.champion_score):
        reasons.append("champion score on the holdout is missing or unreadable")
    if not evidence.snapshot_hash:
        reasons.append("content hash of the training snapshot is missing")
    if evidence.governance is None:
        reasons.append("the governance scan of the training lineage is missing")
    reasons += [f"governance: {f.message}" for f in evidence.governed(GovernanceSeverity.BLOCK)]
    return reasons


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
