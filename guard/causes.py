"""Root causes explain their symptoms: a finding another finding explains is kept, as a warning.

One failure trips several checks. Two columns swapped look rescaled to the units check and out of range
to the domain check (and break the orders they are in; a whole-number column that took its partner's decimals
changed its type); a column converted to another unit leaves the
bounds and the distribution of the unit it declares; a sentinel 0 distorts the quantiles the units check
fits; a timestamp written in local time puts the label in the future for the freshness check; a copy of the
label is also a column the contract does not list. The guard names the cause (`columns_swapped`, `sentinel`,
`timestamp_shift`, `target_leakage`) and keeps what else it saw as evidence: each explained finding becomes a
WARN with `params["explained_by"]` = "kind:column" of its cause, so the verdict, the incidents and the heal
follow the cause (rescaling a swapped column would corrupt it). One failure seen by two checks is one
failure: a finding without a heal plan that shares its key (dataset, kind, column) with a blocking finding that
has one is kept as that finding's evidence, a warning too.

Checks never ask each other what they found; this module alone says which finding explains which.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from guard.findings import Finding
from guard.kinds import FindingKind, Severity

__all__ = ["explain", "SYMPTOMS"]

_VALUE_SYMPTOMS = frozenset(
    {
        FindingKind.SCALE_SHIFT,
        FindingKind.UNIT_MISMATCH,
        FindingKind.OUT_OF_RANGE,
        FindingKind.DRIFT,
        FindingKind.RELATION_BROKEN,
    }
)
_UNIT_SYMPTOMS = frozenset({FindingKind.OUT_OF_RANGE, FindingKind.DRIFT, FindingKind.RELATION_BROKEN})
SYMPTOMS: dict[FindingKind, frozenset[FindingKind]] = {
    # ... and a whole-number column that holds its partner's decimals changed its type
    FindingKind.COLUMNS_SWAPPED: _VALUE_SYMPTOMS | {FindingKind.TARGET_LEAKAGE, FindingKind.TYPE_CHANGED},
    FindingKind.SENTINEL: _VALUE_SYMPTOMS,
    FindingKind.TIMESTAMP_SHIFT: _VALUE_SYMPTOMS | {FindingKind.TIMESTAMP_UNPARSEABLE},
    FindingKind.TARGET_LEAKAGE: frozenset({FindingKind.COLUMN_UNEXPECTED}),
    # a column converted to another unit, or rescaled, leaves the bounds and the distribution its declared unit
    # sets, and breaks the sums and orders it is in (a heal's verify re-judges them)
    # ... and a conversion is a rescale with its offset known: the rescale another check reads off a broken
    # order is that conversion
    FindingKind.UNIT_MISMATCH: _UNIT_SYMPTOMS | {FindingKind.SCALE_SHIFT},
    FindingKind.SCALE_SHIFT: _UNIT_SYMPTOMS,
    # a batch that renamed a column leaves the contracted name empty in its rows
    FindingKind.COLUMN_RENAMED: frozenset({FindingKind.NULL_LIMIT, FindingKind.NULL_SPIKE}),
}


def _columns(cause: Finding) -> set[str]:
    """The columns a cause concerns."""
    columns = {cause.column} if cause.column else set()
    columns |= set(cause.params.get("columns") or ())
    columns |= set(cause.params.get("shifts_hours") or {}) | set(cause.params.get("hour_columns") or {})
    if cause.kind is FindingKind.TARGET_LEAKAGE:
        columns -= {cause.params.get("label")}  # leakage explains the copy, not findings on the label itself
    return {c for c in columns if c}


def _concerns(finding: Finding) -> set[str]:
    """The columns a finding is about: its own, and for a broken relation every column in it."""
    columns = {finding.column} if finding.column else set()
    if finding.kind is FindingKind.RELATION_BROKEN:
        columns |= set(finding.params.get("columns") or ())
    return columns


def explain(findings: Iterable[Finding]) -> list[Finding]:
    """The findings, each symptom of a blocking cause on its columns a WARN that names the cause (a warning
    already is one, and is named too: what a person reads next to the cause is said to come from it)."""
    found = list(findings)
    causes = [f for f in found if f.kind in SYMPTOMS and f.severity is Severity.BLOCK]
    planned = [f for f in found if f.playbook is not None and f.severity is Severity.BLOCK]
    explained = []
    for finding in found:
        cause = next(
            (
                c
                for c in causes
                if c is not finding and finding.kind in SYMPTOMS[c.kind] and _concerns(finding) & _columns(c)
            ),
            None,
        ) or _same_failure_with_a_plan(finding, planned)
        if cause is None or "explained_by" in finding.params:
            explained.append(finding)
            continue
        label = f"{cause.kind.value}:{cause.column or '-'}"
        explained.append(
            replace(
                finding,
                severity=Severity.WARN,
                params={**finding.params, "explained_by": label},
                message=f"{finding.message} (explained by {label})",
            )
        )
    return explained


def _same_failure_with_a_plan(finding: Finding, planned: list[Finding]) -> Finding | None:
    """One failure seen by two checks: a finding without a heal plan whose key (dataset, kind, column) a
    blocking finding with a plan shares is that finding's evidence, not a second failure."""
    if finding.playbook is not None:
        return None
    return next((p for p in planned if p is not finding and p.key == finding.key), None)
