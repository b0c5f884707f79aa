"""Zeros in columns that never held one, weighed across columns: a few in each, together not by chance.

A column's zeros are weighed here when the reference never held a 0 in it (its exact zero count is 0) and 0 is no
neighbour of its values: the reference's range, and the batch's values but its zeros, lie on one side of 0, at least
`policy.sentinel_zero_apart_steps` of the column's resolution steps from it (0 among prices, counts in the
thousands, populations; not a count whose least value was 1 or 30, nor values falling to within a few steps of 0, though a
level that trends past the last batches' lowest and stays far from 0 still counts), and 0 is not one end of a bounded
scale the contract or the unit declares (a share in [0, 100] holds 0 as a level of it). On such columns a zero is
as new as a null in a column never null, and is weighed the same way (`guard.statistics.never_seen_chance`): the
rows holding a zero in any of them, on the batch's row sample, against the rule of three over the reference's
values, exactly, at `policy.zero_false_alarm`, and at least `policy.sentinel_min_share` of the rows. Where they
cross, each such column holding a zero is named a sentinel 0 (its rows quarantined), unless the check's rule for
one value in one column named it already. A linear distance cannot say this: 0 is within 5% of the width of a
column of populations from its least value, yet no country has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding, window_rows
from guard.kinds import FindingKind
from guard.statistics import NeverSeen, never_seen_chance
from guard.units import limits
from profiles.profile import ColumnProfile
from profiles.relations import resolution

__all__ = ["check_new_zeros"]


@dataclass(frozen=True)
class _Weighed:
    """A column whose zeros are weighed: its reference values, and its batch zeros of the sampled values."""

    name: str
    reference_values: int
    zeros: int
    sampled: int


def check_new_zeros(
    ctx: GuardContext, columns: Mapping[str, np.ndarray], named: set[str]
) -> Iterator[Finding | ClosestCall]:
    """Zeros across `columns` (numeric, contracted, sampled: each one's finite sampled values, as the check read them)
    where the reference never held one (see the module's docstring); a column in `named` already has its finding."""
    assert ctx.snapshot is not None
    reference = ctx.reference_profile
    if reference is None or ctx.same_rows:
        return
    found = (_weighed(ctx, name, reference.columns.get(name), values) for name, values in columns.items())
    weighed = [w for w in found if w is not None]
    if not any(w.zeros for w in weighed):
        return
    sample = ctx.snapshot.sample[[w.name for w in weighed]].apply(pd.to_numeric, errors="coerce")
    rows = int(sample.eq(0).any(axis=1).sum())
    evidence = never_seen_chance(rows, len(sample), min(w.reference_values for w in weighed))
    limit, floor = ctx.policy.zero_false_alarm, ctx.policy.sentinel_min_share
    yield ClosestCall("zero_false_alarm", None, evidence.chance, limit, above=False, decides=evidence.share >= floor)
    if evidence.chance >= limit or evidence.share < floor:
        return
    for w in weighed:
        if w.zeros and w.name not in named:
            yield _finding(ctx, w, [o.name for o in weighed if o.zeros and o.name != w.name], evidence)


def _weighed(ctx: GuardContext, name: str, known: ColumnProfile | None, values: np.ndarray) -> _Weighed | None:
    if known is None or known.zero_count != 0 or not known.values or known.minimum is None or known.maximum is None:
        return None
    if known.minimum <= 0 <= known.maximum or _a_level_of_its_scale(ctx, name):
        return None
    side = 1.0 if known.minimum > 0 else -1.0
    others = side * values[values != 0]
    if (others < 0).any():
        return None  # the batch crosses 0: a zero lies among its values
    nearest = min([side * (known.minimum if side > 0 else known.maximum), *others.tolist()])
    step = 1.0 if known.logical_type == "integer" else 2.0 * resolution(values[values != 0])
    if step and nearest / step < ctx.policy.sentinel_zero_apart_steps:
        return None
    return _Weighed(name, known.values, int((values == 0).sum()), len(values))


def _a_level_of_its_scale(ctx: GuardContext, name: str) -> bool:
    """0 is one end of a bounded scale the contract or the unit declares (a percentage in [0, 100]): a level of it."""
    assert ctx.contract is not None
    column = ctx.contract.column(name)
    if column is None:
        return False
    low, high, _ = limits(column)
    return low == 0 and high is not None


def _finding(ctx: GuardContext, weighed: _Weighed, others: list[str], evidence: NeverSeen) -> Finding:
    assert ctx.snapshot is not None
    share = weighed.zeros / weighed.sampled if weighed.sampled else 0.0
    together = f"; with {', '.join(repr(o) for o in others)}, " if others else "; "
    return make_finding(
        FindingKind.SENTINEL,
        ctx.dataset_urn,
        weighed.name,
        observed={"value": 0, "share": round(share, 6)},
        expected={"value": 0, "share": 0.0},
        playbook="quarantine_rows",
        value=0,
        share=round(share, 6),
        reference_share=0.0,
        how="new",
        sampled_rows=weighed.zeros,
        estimated_rows=round(share * ctx.snapshot.profile.row_count),
        rows=window_rows(ctx),
        chance=evidence.chance,
        columns_with_new_zeros=[weighed.name, *others],
        rows_with_new_zeros=evidence.rows,
        message=(
            f"{weighed.name!r} holds 0 on {weighed.zeros} of {weighed.sampled} sampled rows, never in the "
            f"reference's {weighed.reference_values} values, whose range is far from 0{together}{evidence.rows} of "
            f"{evidence.seen} rows hold a 0 where none was before (at most {evidence.rate:.1%} by the reference; "
            f"by chance: {evidence.chance:.1e}): a placeholder for 'unknown', not a measurement; its rows are "
            "quarantined, not filled in"
        ),
    )
