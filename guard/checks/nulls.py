"""Nulls: above the contract's limit, or a spike against the reference.

A spike is a null share more than `policy.null_spike_min_increase` above the reference's and more than
`policy.null_spike_factor` times it. Against a batch `Reference` the baseline is the highest share a reference batch had, plus the
largest step between consecutive batches (a column whose nulls come and go by the week is not spiking
when it does it again), plus three binomial standard errors of the new batch's share
(`guard.statistics.natural_null_share`, which a partial rename's empty rows are judged by too).

Closest calls, per column: the share's rise over the baseline (against `null_spike_min_increase`) and its multiple
of it (against `null_spike_factor`; infinite over a baseline of none), each deciding where the other holds and the
contract's own limit does not block first.
"""

from __future__ import annotations

import math
from typing import Iterator

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register
from guard.statistics import natural_null_share

__all__ = ["check_nulls"]


@register("nulls")
def check_nulls(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot and ctx.reference is not None
    for column in ctx.contract.columns:
        if column.name in (ctx.contract.label_column, ctx.contract.label_timestamp_column):
            continue  # a label not yet arrived has no arrival time either: label freshness judges both
        observed = ctx.snapshot.profile.columns.get(column.name)
        if observed is None:
            continue
        fraction = observed.null_fraction
        limit = column.max_null_fraction
        baseline = natural_null_share(ctx.reference, column.name, observed.row_count)
        over_limit = limit is not None and fraction > limit
        yield from _closest_calls(ctx, column.name, fraction, baseline, over_limit)
        if limit is not None and fraction > limit:
            yield make_finding(
                FindingKind.NULL_LIMIT,
                ctx.dataset_urn,
                column.name,
                observed=round(fraction, 6),
                expected=limit,
                message=f"{column.name!r} is {fraction:.1%} null, the contract allows {limit:.1%}",
                playbook="null_impute",
                reference_null_fraction=baseline,
                null_rows=observed.null_count,
            )
        elif (
            fraction > baseline + ctx.policy.null_spike_min_increase
            and fraction > ctx.policy.null_spike_factor * baseline
        ):
            yield make_finding(
                FindingKind.NULL_SPIKE,
                ctx.dataset_urn,
                column.name,
                observed=round(fraction, 6),
                expected=round(baseline, 6),
                message=f"{column.name!r} nulls jumped from {baseline:.1%} to {fraction:.1%}",
                playbook="null_impute",
                reference_null_fraction=baseline,
                null_rows=observed.null_count,
            )


def _closest_calls(
    ctx: GuardContext, name: str, fraction: float, baseline: float, over_limit: bool
) -> Iterator[ClosestCall]:
    increase, factor = ctx.policy.null_spike_min_increase, ctx.policy.null_spike_factor
    rise = fraction - baseline
    multiple = fraction / baseline if baseline > 0 else (math.inf if fraction > 0 else 0.0)
    yield ClosestCall("null_spike_min_increase", name, rise, increase, decides=not over_limit and multiple > factor)
    yield ClosestCall("null_spike_factor", name, multiple, factor, decides=not over_limit and rise > increase)
