"""Run every registered check, collect every finding, and never fail open."""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable

import guard.checks  # noqa: F401  (registers the checks)
from guard.causes import explain
from guard.context import GuardContext
from guard.findings import CheckOutcome, Finding, GuardReport, make_finding
from guard.kinds import FindingKind
from guard.registry import CHECKS, RegisteredCheck

__all__ = ["run_guard"]


def run_guard(ctx: GuardContext) -> GuardReport:
    """The guard's one decision: a report whose verdict is CLEAN only if nothing blocks."""
    blockers = _preconditions(ctx)
    if blockers:
        return GuardReport(ctx.dataset_urn, tuple(blockers))
    findings: list[Finding] = []
    outcomes: list[CheckOutcome] = []
    for check in CHECKS.values():
        found = _run_one(check, ctx)
        findings.extend(found)
        outcomes.extend(_outcomes(check, ctx, found))
    return GuardReport(ctx.dataset_urn, tuple(explain(findings)), tuple(outcomes))


def _preconditions(ctx: GuardContext) -> list[Finding]:
    """Evidence the checks cannot do without: each missing piece is a block that says so."""
    urn = ctx.dataset_urn
    blockers = []
    if ctx.contract is None:
        why = ctx.contract_error or "no data contract is registered in DataHub for this dataset"
        kind = FindingKind.CONTRACT_INVALID if ctx.contract_error else FindingKind.CONTRACT_MISSING
        blockers.append(make_finding(kind, urn, None, observed=why, expected="a data contract",
                                     message=f"{why}; apply one with `kintsugi contract apply FILE`"))
    if ctx.snapshot is None:
        why = ctx.snapshot_error or "no snapshot was read"
        blockers.append(make_finding(FindingKind.SNAPSHOT_UNREADABLE, urn, None, observed=why,
                                     expected="a readable parquet snapshot", message=why))
    if ctx.reference is None:
        blockers.append(make_finding(
            FindingKind.REFERENCE_MISSING, urn, None, observed=None, expected="a reference profile",
            message="no reference profile in DataHub to compare the data with; record one with "
                    "`kintsugi contract apply FILE --reference DATA.parquet`"))
    return blockers


def _run_one(check: RegisteredCheck, ctx: GuardContext) -> list[Finding]:
    try:
        return [replace(finding, check=check.name) for finding in check.run(ctx)]
    except Exception as exc:  # a check that breaks must block, never pass
        broken = make_finding(
            FindingKind.CHECK_ERROR, ctx.dataset_urn, None, observed=f"{type(exc).__name__}: {exc}",
            expected="the check to complete", message=f"check {check.name!r} raised {type(exc).__name__}: {exc}")
        return [replace(broken, check=check.name)]


def _outcomes(check: RegisteredCheck, ctx: GuardContext, found: Iterable[Finding]) -> list[CheckOutcome]:
    failed = {f.column for f in found}
    if None in failed or not check.per_column:
        return [CheckOutcome(check.name, None, not failed, _observed(found, None))]
    assert ctx.contract is not None
    return [CheckOutcome(check.name, name, name not in failed, _observed(found, name)) for name in ctx.contract.names]


def _observed(found: Iterable[Finding], column: str | None) -> object:
    return next((f.observed for f in found if column is None or f.column == column), None)
