"""Schema: missing, unexpected and retyped columns, and renames told apart from drops.

A missing column and an unexpected one are the same column renamed when the new one has the old one's
distribution; or, in a whole table that still holds the reference's own period, when its rows from that
period carry under the new name what the reference saw under the old one (a year-long table is not
distributed as a reference of a few weeks, but those weeks are in it); or when they are the only two, and
the new one's values sit inside the old one's range (a slow cycle apart).

Closest calls: for a column gone and one new, `rename_tolerance`, `rename_sampling` and `rename_min_period_rows`,
which name a rename but decide no block (the column gone blocks either way); for a column a batch left empty where a
new one has values, `rename_null_slack` (`guard.renames`), which decides one where the rest of the rename held.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.registry import register
from guard.renames import split_renames
from profiles.profile import ColumnProfile
from profiles.reference import Reference
from profiles.relations import epoch_ms_of

__all__ = ["check_schema", "types_compatible"]

# a batch's quantiles wander from the reference's by sampling alone, about spread/sqrt(rows): a day of a few
# hundred rows is judged with that allowance (inner quantiles only; the extremes of a small batch are noise)


def types_compatible(declared: str, observed: str) -> bool:
    return declared == observed or (declared == "number" and observed == "integer")


@register("schema")
def check_schema(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot and ctx.reference is not None and ctx.reference_profile is not None
    urn, observed = ctx.dataset_urn, ctx.snapshot.profile.columns
    missing = [c for c in ctx.contract.columns if c.name not in observed]
    unexpected = [name for name in observed if ctx.contract.column(name) is None]
    matched = _match_renames(ctx, [c.name for c in missing], unexpected)
    yield from _rename_calls(ctx, [c.name for c in missing], unexpected)
    renames = {old: new for old, (new, _) in matched.items()}
    for old, (new, evidence) in matched.items():
        yield _renamed(urn, old, new, f"column {old!r} arrives as {new!r} (same type; {evidence})", evidence=evidence)
    rest = [name for name in unexpected if name not in renames.values()]
    calls: list[ClosestCall] = []
    partial = split_renames(ctx.contract, ctx.snapshot, ctx.reference, rest, calls)
    yield from calls
    for old, new in partial.items():
        rows = observed[new].row_count - observed[new].null_count
        yield _renamed(
            urn,
            old,
            new,
            f"column {old!r} arrives as {new!r} in {rows} rows (a batch renamed it: {new!r} holds values exactly "
            f"where {old!r} has none)",
            merge=True,
            rows_renamed=rows,
        )
    renames.update(partial)
    for column in missing:
        if column.name not in renames:
            yield make_finding(
                FindingKind.COLUMN_MISSING,
                urn,
                column.name,
                observed=None,
                expected=column.logical_type,
                message=f"contracted column {column.name!r} is missing",
            )
    for name in unexpected:
        if name not in renames.values():
            yield make_finding(
                FindingKind.COLUMN_UNEXPECTED,
                urn,
                name,
                observed=observed[name].logical_type,
                expected=None,
                message=f"column {name!r} is not in the contract",
            )
    for column in ctx.contract.columns:
        seen = observed.get(column.name)
        if seen is not None and not types_compatible(column.logical_type, seen.logical_type):
            yield make_finding(
                FindingKind.TYPE_CHANGED,
                urn,
                column.name,
                observed=seen.logical_type,
                expected=column.logical_type,
                message=f"column {column.name!r} is {seen.logical_type}, the contract says {column.logical_type}",
                playbook="cast_types",
                target_type=column.logical_type,
            )


def _renamed(urn: str, old: str, new: str, message: str, **evidence: Any) -> Finding:
    """COLUMN_RENAMED: `old` arrives as `new`, healed by renaming it back."""
    return make_finding(
        FindingKind.COLUMN_RENAMED,
        urn,
        old,
        observed=new,
        expected=old,
        playbook="rename_columns",
        mapping={new: old},
        message=message,
        **evidence,
    )


def _rename_calls(ctx: GuardContext, missing: list[str], unexpected: list[str]) -> Iterator[ClosestCall]:
    """A column gone and one new: how far the new one's inner quantiles sit from the old one's, over the old one's
    spread, against `policy.rename_tolerance`, and times the square root of its values against
    `policy.rename_sampling` (within either: the same distribution); and the new one's sampled rows inside the
    reference's period against `policy.rename_min_period_rows`. They decide whether the rename is named, not whether
    the batch blocks (a contracted column gone blocks either way): none decides."""
    assert ctx.snapshot is not None and ctx.reference_profile is not None
    for old in missing:
        reference = ctx.reference_profile.columns.get(old)
        if reference is None or not reference.quantiles:
            continue
        spread = abs((reference.quantile(0.9) or 0.0) - (reference.quantile(0.1) or 0.0)) or 1.0
        for new in unexpected:
            observed = ctx.snapshot.profile.columns[new]
            inner = [(r, observed.quantile(q)) for q, r in reference.quantiles if 0.05 <= q <= 0.95]
            if not observed.quantiles or not inner or any(o is None for _, o in inner):
                continue
            off = max(abs(r - o) for r, o in inner if o is not None) / spread
            yield ClosestCall("rename_tolerance", old, off, POLICY.rename_tolerance, False, False)
            yield ClosestCall(
                "rename_sampling", old, off * max(observed.values, 1) ** 0.5, POLICY.rename_sampling, False, False
            )
            rows = _period_rows(ctx, new)
            if rows is not None:
                yield ClosestCall("rename_min_period_rows", old, rows, ctx.policy.rename_min_period_rows, True, False)


def _period_rows(ctx: GuardContext, new: str) -> float | None:
    """The new column's sampled values inside the reference batches' windows of time (None: no batch reference)."""
    values = _in_reference_periods(ctx, new)
    return None if values is None else float(values.notna().sum())


def _in_reference_periods(ctx: GuardContext, new: str) -> pd.Series | None:
    """The new column's sampled rows from the reference batches' own windows of time (None: no batch reference, or
    the sample holds no such column or times)."""
    assert ctx.snapshot is not None
    sample, known = ctx.snapshot.sample, ctx.reference
    if not isinstance(known, Reference) or known.time_column not in sample or new not in sample:
        return None
    stamps, present = epoch_ms_of(sample[known.time_column])
    inside = np.zeros(len(sample), dtype=bool)
    for batch in known.batches:
        if batch.start_ms is not None and batch.end_ms is not None:
            inside |= present & (stamps >= batch.start_ms) & (stamps <= batch.end_ms)
    return sample[new][inside]


def _match_renames(ctx: GuardContext, missing: list[str], unexpected: list[str]) -> dict[str, tuple[str, str]]:
    """old name -> (new name, the evidence), for each missing column that one unexpected column matches."""
    assert ctx.snapshot and ctx.reference_profile is not None
    renames: dict[str, tuple[str, str]] = {}
    for old in missing:
        reference = ctx.reference_profile.columns.get(old)
        if reference is None:
            continue
        taken = {new for new, _ in renames.values()}
        matches = [
            (new, evidence) for new in unexpected if new not in taken and (evidence := _match(ctx, reference, new))
        ]
        if len(matches) == 1:
            renames[old] = matches[0]
    if len(missing) == 1 and len(unexpected) == 1 and not renames:  # one name gone, one new: a slow cycle apart?
        old, new = missing[0], unexpected[0]
        reference = ctx.reference_profile.columns.get(old)
        if reference is not None and _within_reference(reference, ctx.snapshot.profile.columns[new]):
            renames[old] = (new, f"the only column gone and the only one new, its values inside {old!r}'s range")
    return renames


def _match(ctx: GuardContext, reference: ColumnProfile, new: str) -> str | None:
    """Why `new` holds the column `reference` describes, or None."""
    assert ctx.snapshot is not None
    if _same_distribution(reference, ctx.snapshot.profile.columns[new]):
        return "the same distribution"
    if _holds_reference_period(ctx, reference, new):
        return "the same distribution over the reference's own period, which the table holds"
    return None


def _within_reference(reference: ColumnProfile, observed: ColumnProfile) -> bool:
    """The sole new column holds what the sole missing one held: a compatible type, the same categories or its
    middle 90% inside the range the reference saw. A slow cycle can move a batch's quantiles away from the whole
    reference's; the heal's verify then judges the renamed column on every check, so a wrong pairing blocks."""
    if not types_compatible(reference.logical_type, observed.logical_type) and not types_compatible(
        observed.logical_type, reference.logical_type
    ):
        return False
    if reference.value_counts is not None and observed.value_counts is not None:
        return {v for v, _ in observed.value_counts} <= {v for v, _ in reference.value_counts}
    low, high = observed.quantile(0.05), observed.quantile(0.95)
    if None in (low, high, reference.minimum, reference.maximum):
        return False
    return reference.minimum <= low and high <= reference.maximum  # type: ignore[operator]


def _same_distribution(reference: ColumnProfile, observed: ColumnProfile) -> bool:
    if reference.logical_type != observed.logical_type and not types_compatible(
        reference.logical_type, observed.logical_type
    ):
        return False
    if reference.value_counts is not None and observed.value_counts is not None:
        return {v for v, _ in reference.value_counts} == {v for v, _ in observed.value_counts}
    if not observed.quantiles:
        return False
    return _same_quantiles(reference, observed.quantile, observed.values)


def _same_quantiles(reference: ColumnProfile, quantile: Callable[[float], float | None], values: int) -> bool:
    """The inner quantiles (5% to 95%) of `values` values agree with the reference's, within sampling."""
    if not reference.quantiles:
        return False
    spread = abs((reference.quantile(0.9) or 0.0) - (reference.quantile(0.1) or 0.0)) or 1.0
    tolerance = max(POLICY.rename_tolerance, POLICY.rename_sampling / max(values, 1) ** 0.5) * spread
    inner = [(r, quantile(q)) for q, r in reference.quantiles if 0.05 <= q <= 0.95]
    return bool(inner) and all(o is not None and abs(r - o) <= tolerance for r, o in inner)


def _holds_reference_period(ctx: GuardContext, reference: ColumnProfile, new: str) -> bool:
    """The sampled rows from the reference batches' own windows of time carry, under `new`, the values the
    reference saw: a whole table renamed, history included."""
    period = _in_reference_periods(ctx, new)
    if period is None:
        return False
    values = period.dropna()
    if len(values) < ctx.policy.rename_min_period_rows:
        return False
    if reference.value_counts is not None:
        return {v for v, _ in reference.value_counts} == {str(v) for v in values.unique()}
    numbers = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)
    if len(numbers) < ctx.policy.rename_min_period_rows:
        return False
    return _same_quantiles(reference, lambda q: float(np.quantile(numbers, q)), len(numbers))
