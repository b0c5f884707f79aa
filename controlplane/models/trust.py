"""The trust score of a concluded version: 100 minus named deductions, each a row with its reason, points and evidence.

Computed from evidence the run already has, never from a model: the guard on the bytes trained on and its warnings,
findings people accepted as the new normal, a heal, whether the contract sets a label freshness SLA the guard
checks, the gain over the champion, the governance scan, and whether the passport and the model's files are signed.
What each costs is `POINTS`, here and nowhere else; a row that repeats (a warning, a finding) costs per item up to
its cap. The band: high from 80, medium from 60, low below. The score informs; the gate decides (`gate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from controlplane.datahub.trust_properties import Deduction, TrustBand, TrustScore, band_of
from controlplane.models.gate import GuardWarning
from controlplane.models.governance import GovernanceFinding, GovernanceSeverity

__all__ = ["Deduction", "TrustBand", "TrustScore", "TrustEvidence", "Cost", "POINTS", "trust_score", "band_of"]


@dataclass(frozen=True)
class Cost:
    """What a deduction costs: `each` per item, at most `cap` in all."""

    each: int
    cap: int


POINTS: dict[str, Cost] = {
    "guard_not_clean": Cost(40, 40),  # the gate blocks on it; the score says so too
    "guard_warning": Cost(3, 15),
    "acceptance": Cost(5, 15),  # a block a person accepted as the new normal since the champion
    "healed": Cost(10, 10),  # the bytes trained on were repaired by this run
    "label_freshness_unchecked": Cost(10, 10),
    "no_champion": Cost(5, 5),
    "gain_unmeasured": Cost(10, 10),
    "gain_short": Cost(10, 10),  # below the spec's min_gain: level with the champion, reviewed, or worse
    "governance_block": Cost(30, 60),
    "governance_review": Cost(10, 30),
    "governance_exception": Cost(5, 15),
    "governance_noted": Cost(2, 6),
    "unsigned": Cost(30, 30),
}


@dataclass(frozen=True)
class TrustEvidence:
    guard_verdict: str | None
    guard_warnings: tuple[GuardWarning, ...]
    acceptances: tuple[str, ...]  # KIND:COLUMN of each acceptance in force since the champion
    heal_steps: tuple[str, ...]  # PLAYBOOK on COLUMN of each heal step this run applied
    label_freshness: str | None  # the SLA the guard checked; None: the contract sets none
    has_champion: bool
    gain: float | None
    min_gain: float
    governance: tuple[GovernanceFinding, ...] | None
    unsigned: str | None  # why the passport or the model's files are not signed; None: both are


def trust_score(evidence: TrustEvidence) -> TrustScore:
    deductions = tuple(d for d in _deductions(evidence) if d.points > 0)
    score = max(0, 100 - sum(d.points for d in deductions))
    return TrustScore(score, band_of(score), deductions)


def _cost(name: str, reason: str, items: list[str]) -> Deduction:
    cost = POINTS[name]
    return Deduction(reason, min(cost.cap, cost.each * len(items)), "; ".join(items))


def _deductions(evidence: TrustEvidence) -> Iterator[Deduction]:
    if evidence.guard_verdict != "CLEAN":
        yield _cost("guard_not_clean", "the guard did not pass the bytes trained on", [str(evidence.guard_verdict)])
    yield _cost(
        "guard_warning", "guard warnings stand on the bytes trained on", [str(w) for w in evidence.guard_warnings]
    )
    yield _cost("acceptance", "blocks accepted as the new normal since the champion", list(evidence.acceptances))
    yield _cost(
        "healed",
        "the bytes trained on were healed by this run",
        [", ".join(evidence.heal_steps)] if evidence.heal_steps else [],
    )
    if evidence.label_freshness is None:
        yield _cost("label_freshness_unchecked", "no label freshness SLA is checked", ["the contract sets none"])
    yield from _gain(evidence)
    yield from _governance(evidence.governance)
    if evidence.unsigned is not None:
        yield _cost("unsigned", "the passport or the model's files are not signed", [evidence.unsigned])


def _gain(evidence: TrustEvidence) -> Iterator[Deduction]:
    if not evidence.has_champion:
        yield _cost("no_champion", "no champion to measure a gain against", ["the first version"])
    elif evidence.gain is None:
        yield _cost("gain_unmeasured", "the gain over the champion is not measured", ["no gain"])
    elif evidence.gain < evidence.min_gain:
        shown = f"gain {evidence.gain:+.2%} < min_gain {evidence.min_gain:.1%}"
        yield _cost("gain_short", "the gain over the champion is below min_gain", [shown])


_GOVERNANCE = {
    GovernanceSeverity.BLOCK: ("governance_block", "governance findings block"),
    GovernanceSeverity.REVIEW: ("governance_review", "governance findings ask for review"),
    GovernanceSeverity.EXCEPTION: ("governance_exception", "governance exceptions are in force"),
    GovernanceSeverity.NOTED: ("governance_noted", "classified data in the lineage, not trained on"),
}


def _governance(findings: tuple[GovernanceFinding, ...] | None) -> Iterator[Deduction]:
    if findings is None:
        yield _cost("governance_block", "the governance scan is missing", ["not scanned"])
        return
    for severity, (name, reason) in _GOVERNANCE.items():
        yield _cost(name, reason, [f.message for f in findings if f.severity is severity])
