"""Two contracted columns written into each other's place: `columns_swapped`.

Two lines of evidence, over each pair of contracted numeric columns (a, b) of one logical type:

- all rows: the batch's a looks like the reference's b and its b like the reference's a (KS distance within
  noise), while each is far from its own reference (at least SELF_DISTANCE, and CROSS_RATIO times further
  than from the other's). Seasonal drift moves a column away from its own reference, but not onto another
  column's, and not both columns at once;
- some rows: an order the reference always held between two columns of one declared unit (temp_min <=
  temp_max: on at least ORDER_HELD of at least MIN_ORDER_ROWS rows) is broken on some batch rows by about
  the reference's typical gap (the mean of low - high over the broken rows within GAP_RATIO of the mean of
  high - low in the reference): swapped rows break it by a whole gap, while two series that merely cross
  with the season (Seattle warmer than San Francisco on summer afternoons: 0.4 of the winter gap against a
  reference that never rolled past winter) break it by less, and a unit change in one column by far more.
  A whole swap in a season whose gaps are under 0.6 of the reference's is left to the first rule. An order
  the reference held on at least ORDER_MOSTLY of its rows only (dew point under air temperature, but for
  rounding in stitched data) tells a whole swap: flipped on at least ORDER_MOSTLY of the batch.

The finding names both columns (`params["columns"]`) and what to swap back: `scope` "all" (every row; the
medians observed at detection let the playbook tell a swapped table from a healed one) or "order" (the rows
where `order[0] > order[1]`).
"""

from __future__ import annotations

from itertools import combinations
from typing import Iterator, Mapping

import numpy as np
import pandas as pd

from guard.checks.distributions import ks_distance, ks_noise, numeric_values
from guard.context import GuardContext
from guard.findings import Finding, make_finding, window_rows
from guard.kinds import FindingKind
from guard.profile import DatasetProfile
from guard.registry import register
from guard.relations import pair_key

__all__ = ["check_columns_swapped", "SELF_DISTANCE", "CROSS_RATIO", "MIN_ORDER_ROWS", "MIN_ROWS"]

MIN_ROWS = 20
SELF_DISTANCE = 0.3
CROSS_RATIO = 3.0
MIN_ORDER_ROWS = 50
ORDER_HELD = 0.999  # the reference's share of rows in order, for an order to be learned...
ORDER_MOSTLY = 0.9  # ...or for a mostly-held order, whose flip on at least ORDER_MOSTLY of the batch is a whole swap
WHOLE_SWAP = 0.5  # a strict order broken on at least this share of rows: the whole columns are swapped (the rows
# that still look in order crossed naturally in a season the reference did not cover)
MIN_BROKEN_ROWS = 3
GAP_RATIO = (0.6, 2.5)  # mean break over the reference's mean gap
_NUMERIC = ("number", "integer")


@register("columns_swapped", per_column=True)
def check_columns_swapped(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot
    reference = ctx.reference_profile
    if reference is None:
        return
    sample = ctx.snapshot.sample
    names = [
        c.name
        for c in ctx.contract.columns
        if c.logical_type in _NUMERIC and not c.primary_key and c.name in sample and c.name in reference.columns
    ]
    values = {name: numeric_values(sample[name]) for name in names}
    own = {name: ks_distance(values[name], reference.columns[name]) for name in names}  # each column once
    swapped: set[str] = set()
    for a, b in combinations(names, 2):
        if {a, b} & swapped or ctx.contract.column(a).logical_type != ctx.contract.column(b).logical_type:  # type: ignore[union-attr]
            continue
        finding = _some_rows(ctx, reference, a, b) or _all_rows(ctx, reference, a, b, values, own)
        if finding is not None:
            swapped |= {a, b}
            yield finding


def _all_rows(
    ctx: GuardContext,
    reference: DatasetProfile,
    a: str,
    b: str,
    values: dict[str, np.ndarray],
    own: dict[str, float | None],
) -> Finding | None:
    assert ctx.snapshot is not None
    x, y = values[a], values[b]
    self_a, self_b = own[a], own[b]
    if min(len(x), len(y)) < MIN_ROWS or self_a is None or self_b is None or min(self_a, self_b) < SELF_DISTANCE:
        return None  # a column that still looks like its own reference was not swapped away
    cross_a, cross_b = ks_distance(x, reference.columns[b]), ks_distance(y, reference.columns[a])
    if cross_a is None or cross_b is None:
        return None
    noise = ks_noise(min(len(x), len(y)))
    if not all(
        own >= max(SELF_DISTANCE, CROSS_RATIO * cross) and cross <= max(noise, SELF_DISTANCE / CROSS_RATIO)
        for own, cross in ((self_a, cross_a), (self_b, cross_b))
    ):
        return None
    evidence = {
        "ks_own": {a: round(self_a, 4), b: round(self_b, 4)},
        "ks_other": {a: round(cross_a, 4), b: round(cross_b, 4)},
        "ks_noise": round(noise, 4),
    }
    medians = {a: float(np.median(x)), b: float(np.median(y))}
    return _finding(
        ctx,
        a,
        b,
        "all",
        None,
        int(ctx.snapshot.profile.row_count),
        evidence,
        medians,
        f"{a!r} and {b!r} look like each other's reference (KS {cross_a:.2f} and {cross_b:.2f}; "
        f"against their own {self_a:.2f} and {self_b:.2f}): written into each other's place",
    )


def _learned_order(ctx: GuardContext, reference: DatasetProfile, a: str, b: str) -> tuple[str, str, float, bool] | None:
    """(low, high, mean gap high - low, strict) when both columns declare one unit and the reference had low <=
    high on at least ORDER_MOSTLY of enough rows (strict: on ORDER_HELD of them)."""
    assert ctx.contract is not None
    units = {ctx.contract.column(a).unit, ctx.contract.column(b).unit}  # type: ignore[union-attr]
    relations = reference.relations
    moments = relations.pairs.get(pair_key(a, b)) if relations is not None else None
    if len(units) != 1 or None in units or moments is None or moments.n < MIN_ORDER_ROWS:
        return None
    first, second = sorted((a, b))
    share = moments.a_le_b / moments.n
    gap = moments.mean_b - moments.mean_a
    if share >= ORDER_MOSTLY:
        return first, second, gap, share >= ORDER_HELD
    return (second, first, -gap, share <= 1 - ORDER_HELD) if share <= 1 - ORDER_MOSTLY else None


def _some_rows(ctx: GuardContext, reference: DatasetProfile, a: str, b: str) -> Finding | None:
    assert ctx.snapshot is not None
    order = _learned_order(ctx, reference, a, b)
    if order is None:
        return None
    low, high, gap, strict = order
    sample = ctx.snapshot.sample
    x = pd.to_numeric(sample[low], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    y = pd.to_numeric(sample[high], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    broken = x > y  # NaN compares False
    rows = int(broken.sum())
    if rows < MIN_BROKEN_ROWS or gap <= 0:
        return None
    ratio = float(np.mean(x[broken] - y[broken])) / gap
    share = rows / max(int((x != y).sum() - (np.isnan(x) | np.isnan(y)).sum()), 1)  # ties tell nothing
    if not GAP_RATIO[0] <= ratio <= GAP_RATIO[1]:
        return None  # broken by a little (two series crossing) or by far more (a unit change): not a swap
    if not strict and share < ORDER_MOSTLY:
        return None  # a mostly-held order tells a whole flip only
    whole = not strict or share >= WHOLE_SWAP  # most rows broken: the columns, not some rows, are swapped
    estimated = int(ctx.snapshot.profile.row_count) if whole else round(share * ctx.snapshot.profile.row_count)
    medians = {low: float(np.nanmedian(x)), high: float(np.nanmedian(y))}
    evidence = {
        "order_broken_share": round(share, 6),
        "break_over_gap": round(ratio, 4),
        "reference_gap": round(gap, 6),
    }
    held = "most rows: the columns are swapped" if whole else "every row: those rows are swapped"
    return _finding(
        ctx,
        a,
        b,
        "all" if whole else "order",
        [low, high],
        estimated,
        evidence,
        medians,
        f"{low!r} > {high!r} on {rows} of {len(x)} sampled rows ({share:.1%}) by {ratio:.2f} times the "
        f"reference's typical gap, an order the reference held on {held}",
    )


def _finding(
    ctx: GuardContext,
    a: str,
    b: str,
    scope: str,
    order: list[str] | None,
    rows: int,
    evidence: Mapping[str, object],
    medians: dict[str, float],
    message: str,
) -> Finding:
    return make_finding(
        FindingKind.COLUMNS_SWAPPED,
        ctx.dataset_urn,
        a,
        observed={"swapped_with": b, "scope": scope, "rows": rows},
        expected={"swapped_with": None},
        playbook="swap_columns",
        columns=[a, b],
        scope=scope,
        order=order,
        rows_swapped=rows,
        observed_medians=medians,
        evidence=evidence,
        rows=window_rows(ctx),
        message=message,
    )
