"""Run every registered check, collect every finding, and never fail open.

Bounded output: when one kind of finding names more than MAX_FINDINGS_PER_KIND columns (5,000 unexpected
columns, say), they become ONE grouped finding of that kind (column None, the first GROUP_LISTED columns
and the count, blocking if any of them blocked, no playbook: a heal per column is not planned from a
summary), so a wide table raises one incident per kind, not thousands.

The closest calls a check yields beside its findings (`ClosestCall`) go on the report nearest first, bounded by the
columns, not by the values and pairs a check read (`kept_calls`); a check that breaks leaves none (its CHECK_ERROR
blocks).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

import guard.checks  # noqa: F401  (registers the checks)
from guard.causes import explain
from guard.context import GuardContext
from guard.findings import CheckOutcome, ClosestCall, Finding, GuardReport, make_finding
from guard.kinds import FindingKind, Severity
from guard.registry import CHECKS, RegisteredCheck

__all__ = ["run_guard", "group_findings", "kept_calls", "MAX_FINDINGS_PER_KIND", "GROUP_LISTED"]

MAX_FINDINGS_PER_KIND = 20  # more columns than this with one kind of finding are reported as one group
GROUP_LISTED = 20  # columns listed by name in a grouped finding


def run_guard(ctx: GuardContext) -> GuardReport:
    """The guard's one decision: a report whose verdict is CLEAN only if nothing blocks."""
    blockers = _preconditions(ctx)
    if blockers:
        return GuardReport(ctx.dataset_urn, tuple(blockers))
    findings: list[Finding] = []
    outcomes: list[CheckOutcome] = []
    calls: list[ClosestCall] = []
    for check in CHECKS.values():
        found, compared = _run_one(check, ctx)
        findings.extend(found)
        outcomes.extend(_outcomes(check, ctx, found))
        calls.extend(compared)
    nearest_first = sorted(kept_calls(calls), key=lambda c: -c.closeness)
    return GuardReport(ctx.dataset_urn, tuple(group_findings(explain(findings))), tuple(outcomes), tuple(nearest_first))


def kept_calls(calls: Iterable[ClosestCall]) -> list[ClosestCall]:
    """Of the calls a check compared, what the report keeps: per check, threshold and column, the deciding call whose
    statistic went furthest toward its limit or across it (every other deciding call on the column crosses any limit
    only after it: what `benchmarks/policy_lodo.py` reads of a batch, a field's edge and a blocking call per column),
    and per check and threshold the nearest call that decides nothing. A 1,000-column batch compares tens of
    thousands of values and pairs; its report keeps a few calls a column."""
    kept: dict[tuple[object, ...], ClosestCall] = {}
    for call in calls:
        key = (call.check, call.threshold, call.above, call.decides, call.column if call.decides else None)
        held = kept.get(key)
        if held is None or _further(call, held):
            kept[key] = call
    return list(kept.values())


def _further(call: ClosestCall, held: ClosestCall) -> bool:
    if not call.decides:
        return call.closeness > held.closeness
    return call.statistic > held.statistic if call.above else call.statistic < held.statistic


def group_findings(findings: list[Finding]) -> list[Finding]:
    """Findings as they came, each kind naming more than MAX_FINDINGS_PER_KIND columns folded into one."""
    by_kind: dict[FindingKind, list[Finding]] = {}
    for finding in findings:
        by_kind.setdefault(finding.kind, []).append(finding)
    crowded = {
        kind
        for kind, found in by_kind.items()
        if len({f.column for f in found if f.column is not None}) > MAX_FINDINGS_PER_KIND
    }
    grouped: list[Finding] = []
    for finding in findings:
        if finding.kind not in crowded:
            grouped.append(finding)
        elif finding is by_kind[finding.kind][0]:
            grouped.append(_group(by_kind[finding.kind]))
    return grouped


def _group(found: list[Finding]) -> Finding:
    first = found[0]
    columns = list(dict.fromkeys(f.column for f in found if f.column is not None))
    listed = columns[:GROUP_LISTED]
    severity = Severity.BLOCK if any(f.severity is Severity.BLOCK for f in found) else Severity.WARN
    more = f" and {len(columns) - len(listed)} more" if len(columns) > len(listed) else ""
    return replace(
        make_finding(
            first.kind,
            first.dataset,
            None,
            severity=severity,
            observed={"columns": listed, "count": len(columns)},
            expected=first.expected,
            grouped=True,
            findings=len(found),
            message=f"{first.kind.value} on {len(columns)} columns: {', '.join(listed)}{more} (first: {first.message})",
        ),
        check=first.check,
    )


def _preconditions(ctx: GuardContext) -> list[Finding]:
    """Evidence the checks cannot do without: each missing piece is a block that says so."""
    urn = ctx.dataset_urn
    blockers = []
    if ctx.contract is None:
        why = ctx.contract_error or "no data contract is registered in DataHub for this dataset"
        kind = FindingKind.CONTRACT_INVALID if ctx.contract_error else FindingKind.CONTRACT_MISSING
        blockers.append(
            make_finding(
                kind,
                urn,
                None,
                observed=why,
                expected="a data contract",
                message=f"{why}; apply one with `kintsugi contract apply FILE`",
            )
        )
    if ctx.snapshot is None:
        why = ctx.snapshot_error or "no snapshot was read"
        blockers.append(
            make_finding(
                FindingKind.SNAPSHOT_UNREADABLE,
                urn,
                None,
                observed=why,
                expected="a readable parquet snapshot",
                message=why,
            )
        )
    if ctx.reference is None:
        blockers.append(
            make_finding(
                FindingKind.REFERENCE_MISSING,
                urn,
                None,
                observed=None,
                expected="a reference profile",
                message="no reference profile in DataHub to compare the data with; record one with "
                "`kintsugi contract apply FILE --reference DATA.parquet`",
            )
        )
    return blockers


def _run_one(check: RegisteredCheck, ctx: GuardContext) -> tuple[list[Finding], list[ClosestCall]]:
    """The check's findings and closest calls, each stamped with its name."""
    try:
        found: list[Finding] = []
        calls: list[ClosestCall] = []
        for item in check.run(ctx):
            if isinstance(item, ClosestCall):
                calls.append(replace(item, check=check.name))
            else:
                found.append(replace(item, check=check.name))
        return found, calls
    except Exception as exc:  # a check that breaks must block, never pass
        broken = make_finding(
            FindingKind.CHECK_ERROR,
            ctx.dataset_urn,
            None,
            observed=f"{type(exc).__name__}: {exc}",
            expected="the check to complete",
            message=f"check {check.name!r} raised {type(exc).__name__}: {exc}",
        )
        return [replace(broken, check=check.name)], []


def _outcomes(check: RegisteredCheck, ctx: GuardContext, found: Iterable[Finding]) -> list[CheckOutcome]:
    failed = {f.column for f in found}
    if None in failed or not check.per_column:
        return [CheckOutcome(check.name, None, not failed, _observed(found, None))]
    assert ctx.contract is not None
    return [CheckOutcome(check.name, name, name not in failed, _observed(found, name)) for name in ctx.contract.names]


def _observed(found: Iterable[Finding], column: str | None) -> object:
    return next((f.observed for f in found if column is None or f.column == column), None)
