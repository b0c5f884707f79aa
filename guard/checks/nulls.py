"""Nulls: more than the contract allows, or more than the reference's evidence allows by sampling alone.

The contract's word comes first: its `nullValues` limit, or, where it states none, `required: true` (a value on
every row: none may be null). Otherwise the reference's evidence decides (`guard.statistics.null_rate`): its rate
of nulls in the column (its newest level where the rate trends upward; never under the rule of three for a column
it never saw null) and the spread a clean batch's share has about it (the binomial sampling error at the batch's
rows, plus the spread between the reference's batches beyond theirs and the spread of their steps). A spike is a share more than `policy.null_spike_min_increase` above the rate
that a clean batch reaches with a chance under `policy.null_false_alarm`, whatever the rate: 4% to 33% is a
spike, so is 28% to 57%, and so are a few percent in a column never null; one null among a few dozen rows is not.
Rows that passed earlier, judged again against their own kept profile (`ctx.same_rows`), are the same rows, not a
sample: any rise beyond the floor is theirs.

Across columns: a few nulls in each of several columns the reference never saw null are each within what one
column's sampling allows in a small batch, but not together. The rows holding a null in any such column
(`guard.statistics.never_seen_chance`, counted on the batch's row sample: every row of all but the largest
batches) are tested against the rule of three over the reference's rows, exactly, at the same
`null_false_alarm`; a whole row of nulls counts once. Where they cross, every such column with a null is named.

Closest calls, per column: the share's rise over the rate (against `null_spike_min_increase`) and its chance
(against `null_false_alarm`, below it crosses), each deciding where the other holds and the contract's own limit
does not block first.
"""

from __future__ import annotations

from typing import Iterator

from guard.context import GuardContext
from guard.contract import ColumnContract
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register
from guard.statistics import NeverSeen, never_seen_chance, null_rate

__all__ = ["check_nulls"]


@register("nulls")
def check_nulls(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot and ctx.reference is not None
    named: set[str] = set()
    for column in ctx.contract.columns:
        if column.name in (ctx.contract.label_column, ctx.contract.label_timestamp_column):
            continue  # a label not yet arrived has no arrival time either: label freshness judges both
        observed = ctx.snapshot.profile.columns.get(column.name)
        if observed is None:
            continue
        fraction = observed.null_fraction
        limit = _limit_of(column)
        evidence = null_rate(ctx.reference, column.name, observed.row_count, same_rows=ctx.same_rows)
        baseline, tail = evidence.rate, evidence.tail(fraction)
        over_limit = limit is not None and fraction > limit
        yield from _closest_calls(ctx, column.name, fraction - baseline, tail, over_limit)
        if over_limit:
            assert limit is not None
            named.add(column.name)
            said = "the contract allows" if column.max_null_fraction is not None else "the contract requires a value:"
            yield make_finding(
                FindingKind.NULL_LIMIT,
                ctx.dataset_urn,
                column.name,
                observed=round(fraction, 6),
                expected=limit,
                message=f"{column.name!r} is {fraction:.1%} null ({observed.null_count} rows), {said} {limit:.1%}",
                playbook="null_impute",
                reference_null_fraction=baseline,
                null_rows=observed.null_count,
            )
        elif fraction - baseline > ctx.policy.null_spike_min_increase and tail < ctx.policy.null_false_alarm:
            named.add(column.name)
            yield make_finding(
                FindingKind.NULL_SPIKE,
                ctx.dataset_urn,
                column.name,
                observed=round(fraction, 6),
                expected=round(baseline, 6),
                message=(
                    f"{column.name!r} nulls rose from {baseline:.1%} to {fraction:.1%} "
                    f"({observed.null_count} of {observed.row_count} rows; by chance: {tail:.1e})"
                ),
                playbook="null_impute",
                reference_null_fraction=baseline,
                null_rows=observed.null_count,
                chance=tail,
            )
    yield from _never_null(ctx, named)


def _never_null(ctx: GuardContext, named: set[str]) -> Iterator[Finding | ClosestCall]:
    """The rows holding a null in some column the reference never saw null (see the module's docstring)."""
    assert ctx.contract and ctx.snapshot and ctx.reference is not None
    reference, observed = ctx.reference_profile, ctx.snapshot.profile.columns
    assert reference is not None
    skipped = (ctx.contract.label_column, ctx.contract.label_timestamp_column)
    never = {
        c.name: reference.columns[c.name].row_count
        for c in ctx.contract.columns
        if c.name not in skipped
        and c.name in observed
        and c.name in reference.columns
        and reference.columns[c.name].row_count > 0
        and reference.columns[c.name].null_count == 0
    }
    nulled = sorted(name for name in never if observed[name].null_count > 0)
    if ctx.same_rows or not nulled:
        return
    ctx.require_sample()
    sample = ctx.snapshot.sample[[name for name in never if name in ctx.snapshot.sample.columns]]
    evidence = never_seen_chance(int(sample.isna().any(axis=1).sum()), len(sample), min(never.values()))
    rise = evidence.share - evidence.rate
    increase, chance = ctx.policy.null_spike_min_increase, ctx.policy.null_false_alarm
    yield ClosestCall("null_spike_min_increase", None, rise, increase, decides=evidence.chance < chance)
    yield ClosestCall("null_false_alarm", None, evidence.chance, chance, above=False, decides=rise > increase)
    if rise > increase and evidence.chance < chance:
        for name in nulled:
            if name not in named:
                yield _never_null_finding(ctx, name, nulled, evidence)


def _never_null_finding(ctx: GuardContext, name: str, nulled: list[str], evidence: NeverSeen) -> Finding:
    assert ctx.snapshot is not None
    observed = ctx.snapshot.profile.columns[name]
    others = [other for other in nulled if other != name]
    together = f"; with {', '.join(repr(o) for o in others)}: " if others else ": "
    return make_finding(
        FindingKind.NULL_SPIKE,
        ctx.dataset_urn,
        name,
        observed=round(observed.null_fraction, 6),
        expected=0.0,
        message=(
            f"{name!r} is null on {observed.null_count} of {observed.row_count} rows, never in the reference's "
            f"{evidence.reference_rows}{together}{evidence.rows} of {evidence.seen} rows hold a null where none was before "
            f"(at most {evidence.rate:.1%} by the reference; by chance: {evidence.chance:.1e})"
        ),
        playbook="null_impute",
        reference_null_fraction=0.0,
        null_rows=observed.null_count,
        chance=evidence.chance,
        columns_with_new_nulls=nulled,
        rows_with_new_nulls=evidence.rows,
    )


def _limit_of(column: ColumnContract) -> float | None:
    """The contract's null limit: its `nullValues` rule, else none at all for a column it says is required."""
    if column.max_null_fraction is not None:
        return column.max_null_fraction
    return 0.0 if column.required else None


def _closest_calls(ctx: GuardContext, name: str, rise: float, tail: float, over_limit: bool) -> Iterator[ClosestCall]:
    increase, chance = ctx.policy.null_spike_min_increase, ctx.policy.null_false_alarm
    yield ClosestCall("null_spike_min_increase", name, rise, increase, decides=not over_limit and tail < chance)
    yield ClosestCall("null_false_alarm", name, tail, chance, above=False, decides=not over_limit and rise > increase)
