"""Schema: missing, unexpected and retyped columns, and renames told apart from drops."""

from __future__ import annotations

from typing import Iterator

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.profile import ColumnProfile
from guard.registry import register
from guard.renames import split_renames

__all__ = ["check_schema", "types_compatible"]

_RENAME_TOLERANCE = 0.05
# a batch's quantiles wander from the reference's by sampling alone, about spread/sqrt(rows): a day of a few
# hundred rows is judged with that allowance (inner quantiles only; the extremes of a small batch are noise)
_RENAME_SAMPLING = 2.5


def types_compatible(declared: str, observed: str) -> bool:
    return declared == observed or (declared == "number" and observed == "integer")


@register("schema")
def check_schema(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot and ctx.reference_profile is not None
    urn, observed = ctx.dataset_urn, ctx.snapshot.profile.columns
    missing = [c for c in ctx.contract.columns if c.name not in observed]
    unexpected = [name for name in observed if ctx.contract.column(name) is None]
    renames = _match_renames(ctx, [c.name for c in missing], unexpected)
    for old, new in renames.items():
        yield make_finding(
            FindingKind.COLUMN_RENAMED,
            urn,
            old,
            observed=new,
            expected=old,
            message=f"column {old!r} arrives as {new!r} (same type, same distribution)",
            playbook="rename_columns",
            mapping={new: old},
        )
    rest = [name for name in unexpected if name not in renames.values()]
    partial = split_renames(ctx.contract, ctx.snapshot, ctx.reference_profile, rest)
    for old, new in partial.items():
        rows = observed[new].row_count - observed[new].null_count
        yield make_finding(
            FindingKind.COLUMN_RENAMED,
            urn,
            old,
            observed=new,
            expected=old,
            playbook="rename_columns",
            mapping={new: old},
            merge=True,
            rows_renamed=rows,
            message=f"column {old!r} arrives as {new!r} in {rows} rows (a batch renamed it: "
            f"{new!r} holds values exactly where {old!r} has none)",
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


def _match_renames(ctx: GuardContext, missing: list[str], unexpected: list[str]) -> dict[str, str]:
    """old name -> new name, for each missing column that one unexpected column matches."""
    assert ctx.snapshot and ctx.reference_profile is not None
    renames: dict[str, str] = {}
    for old in missing:
        reference = ctx.reference_profile.columns.get(old)
        if reference is None:
            continue
        matches = [
            new
            for new in unexpected
            if new not in renames.values() and _same_distribution(reference, ctx.snapshot.profile.columns[new])
        ]
        if len(matches) == 1:
            renames[old] = matches[0]
    if len(missing) == 1 and len(unexpected) == 1 and not renames:  # one name gone, one new: a season apart?
        old, new = missing[0], unexpected[0]
        reference = ctx.reference_profile.columns.get(old)
        if reference is not None and _within_reference(reference, ctx.snapshot.profile.columns[new]):
            renames[old] = new
    return renames


def _within_reference(reference: ColumnProfile, observed: ColumnProfile) -> bool:
    """The sole new column holds what the sole missing one held: a compatible type, the same categories or its
    middle 90% inside the range the reference saw. A season can move a batch's quantiles away from the whole
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
    if not reference.quantiles or not observed.quantiles:
        return False
    spread = abs((reference.quantile(0.9) or 0.0) - (reference.quantile(0.1) or 0.0)) or 1.0
    tolerance = max(_RENAME_TOLERANCE, _RENAME_SAMPLING / max(observed.values, 1) ** 0.5) * spread
    inner = [(r, o) for (q, r), (_, o) in zip(reference.quantiles, observed.quantiles) if 0.05 <= q <= 0.95]
    return bool(inner) and all(abs(r - o) <= tolerance for r, o in inner)
