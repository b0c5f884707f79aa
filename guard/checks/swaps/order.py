"""Swapped columns told by an order they held (`guard.checks.swaps`): an order the reference always held between
two columns of one declared unit, broken on some batch rows by about the reference's typical gap; a strict order
broken on many rows whose correlations fit as they came is one column rescaled, not swapped.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from guard.checks.swaps.correlations import CorrelationProfile
from guard.checks.swaps.finding import natural_swapped_back, swapped_finding
from guard.context import GuardContext
from guard.findings import Finding, make_finding, window_rows
from guard.kinds import FindingKind
from guard.policy import Policy
from guard.units import is_ratio_scale
from profiles.profile import DatasetProfile
from profiles.reference import Reference
from profiles.relations import pair_key


def _learned_order(ctx: GuardContext, reference: DatasetProfile, a: str, b: str) -> tuple[str, str, float, bool] | None:
    """(low, high, mean gap high - low, strict) when both columns declare one unit and the reference had low <=
    high on at least `policy.swap_order_mostly` of enough rows (strict: on `policy.swap_order_held` of them)."""
    assert ctx.contract is not None
    units = {ctx.contract.column(a).unit, ctx.contract.column(b).unit}  # type: ignore[union-attr]
    relations = reference.relations
    moments = relations.pairs.get(pair_key(a, b)) if relations is not None else None
    if len(units) != 1 or None in units or moments is None or moments.n < ctx.policy.swap_min_order_rows:
        return None
    first, second = sorted((a, b))
    share, reversed_share = moments.a_le_b / moments.n, moments.b_le_a / moments.n
    gap = moments.mean_b - moments.mean_a
    if share >= ctx.policy.swap_order_mostly:
        return first, second, gap, share >= ctx.policy.swap_order_held
    return (
        (second, first, -gap, reversed_share >= ctx.policy.swap_order_held)
        if reversed_share >= ctx.policy.swap_order_mostly
        else None
    )


def by_some_rows(
    ctx: GuardContext, reference: DatasetProfile, a: str, b: str, profile: CorrelationProfile
) -> Finding | None:
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
    if rows < ctx.policy.swap_min_broken_rows or gap <= 0:
        return None
    ratio = float(np.mean(x[broken] - y[broken])) / gap
    share = rows / max(int((x != y).sum() - (np.isnan(x) | np.isnan(y)).sum()), 1)  # ties tell nothing
    if not ctx.policy.swap_gap_ratio[0] <= ratio <= ctx.policy.swap_gap_ratio[1]:
        if not (
            strict
            and share >= ctx.policy.whole_swap
            and (_a_whole_cycle(ctx) or _a_bound(reference, low, high) or _continued_swapped(ctx, x, y, low, high))
        ):
            return None  # broken by a little (two series crossing) or by far more (a unit change): not a swap
        if (
            ratio > ctx.policy.swap_gap_ratio[1]
            or share < ctx.policy.swap_order_mostly
            or not natural_swapped_back(ctx, low, high)
        ):
            return _rescaled(ctx, profile, low, high, rows, len(x), share)
    if not strict and share < ctx.policy.swap_order_mostly:
        return None  # a mostly-held order tells a whole flip only
    whole = not strict or share >= ctx.policy.whole_swap  # most rows broken: the columns, not some rows, are swapped
    if whole and profile.says_swapped(low, high, ctx.policy) is False:
        return _rescaled(ctx, profile, low, high, rows, len(x), share) if strict else None
    if not whole and _not_exchanged(reference, sample[broken], profile.names, low, high, ctx.policy):
        return None  # the broken rows kept each column's own correlations: changed values, not swapped ones
    estimated = int(ctx.snapshot.profile.row_count) if whole else round(share * ctx.snapshot.profile.row_count)
    medians = {low: float(np.nanmedian(x)), high: float(np.nanmedian(y))}
    evidence = {
        "order_broken_share": round(share, 6),
        "break_over_gap": round(ratio, 4),
        "reference_gap": round(gap, 6),
    }
    held = "most rows: the columns are swapped" if whole else "every row: those rows are swapped"
    return swapped_finding(
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


def _not_exchanged(
    reference: DatasetProfile, rows: pd.DataFrame, names: list[str], low: str, high: str, policy: Policy
) -> bool:
    """On these rows alone, the two columns' correlations with the rest tell and fit them as they came."""
    found = CorrelationProfile(reference, rows, names).compare(low, high, policy)
    return found.telling and found.as_came <= found.exchanged


def _a_whole_cycle(ctx: GuardContext) -> bool:
    """The reference spans a year or more: an order it held strictly, it held through a whole yearly cycle."""
    span = ctx.reference.span_ms if isinstance(ctx.reference, Reference) else None
    return span is not None and span >= ctx.policy.swap_full_cycle_ms


def _a_bound(reference: DatasetProfile, low: str, high: str) -> bool:
    """The reference reached low <= high as well as held it (`PairMoments.bound`): a bound no slow cycle crosses."""
    moments = reference.relations.pairs.get(pair_key(low, high)) if reference.relations is not None else None
    return moments is not None and moments.bound(*sorted((low, high))) == (low, high)


def _continued_swapped(ctx: GuardContext, x: np.ndarray, y: np.ndarray, low: str, high: str) -> bool:
    """Read as swapped, the two columns' batch medians sit `policy.swap_continuity` times nearer where they were in the newest
    reference batch than as they came (the sum of both moves): they jumped into each other's place, where two
    series that cross with a slow cycle move on from where each was."""
    moves = _moves(ctx, x, y, low, high)
    if moves is None:
        return False
    as_came, swapped = moves
    return as_came > 0 and as_came >= ctx.policy.swap_continuity * swapped


def _moves(ctx: GuardContext, x: np.ndarray, y: np.ndarray, low: str, high: str) -> tuple[float, float] | None:
    """The two columns' batch medians' moves from the newest reference batch's, summed, as they came and swapped."""
    if not isinstance(ctx.reference, Reference):
        return None
    last = [ctx.reference.variation(name)[-1:] for name in (low, high)]
    if not all(last) or last[0][0].median is None or last[1][0].median is None:
        return None
    was_low, was_high = last[0][0].median, last[1][0].median
    now_low, now_high = float(np.nanmedian(x)), float(np.nanmedian(y))
    return abs(now_low - was_low) + abs(now_high - was_high), abs(now_high - was_low) + abs(now_low - was_high)


def continuity_of(ctx: GuardContext, x: np.ndarray, y: np.ndarray, low: str, high: str) -> float | None:
    """As they came over swapped back (`_moves`): what `_continued_swapped` compares with `policy.swap_continuity`."""
    moves = _moves(ctx, x, y, low, high)
    if moves is None or not moves[0]:
        return None
    return moves[0] / moves[1] if moves[1] else math.inf


def _rescaled(
    ctx: GuardContext, profile: CorrelationProfile, low: str, high: str, rows: int, sampled: int, share: float
) -> Finding:
    """A strict order broken on most rows while each column keeps its correlations: one of them was rescaled.
    The factor is what moved the ratio of their means; the column named is the one that, rescaled back by it,
    comes nearer its natural variation (the other, rescaled the other way, moves away from it)."""
    assert ctx.contract is not None
    ratio_scale = all(
        (c := ctx.contract.column(n)) is not None and c.unit is not None and is_ratio_scale(c.unit) for n in (low, high)
    )
    factor = profile.mean_ratio_moved(low, high) if ratio_scale else None
    moved: dict[str, float | None] = {low: None, high: None}
    if factor is not None and factor > 0:
        for name, scale in ((low, factor), (high, 1 / factor)):
            before, after = ctx.natural_distance(name), ctx.natural_distance(name, scale)
            moved[name] = None if before is None or after is None else round(before - after, 4)
    else:  # no ratio to read a factor from (temperatures cross zero): the column farther from natural variation
        moved = {n: ctx.natural_distance(n) for n in (low, high)}
    column = max((low, high), key=lambda n: (moved[n] if moved[n] is not None else -math.inf, n == low))
    return make_finding(
        FindingKind.SCALE_SHIFT,
        ctx.dataset_urn,
        column,
        observed={"order_broken_share": round(share, 6), "factor": factor, "nearer_natural_rescaled_back": moved},
        expected={"order": f"{low} <= {high}"},
        rows=window_rows(ctx),
        message=f"{low!r} > {high!r} on {rows} of {sampled} sampled rows ({share:.1%}), an order the reference "
        f"always held, and no swap explains it: {column!r} was rescaled ("
        + (
            "rescaled back by the move of their means' ratio, it comes nearer its natural variation)"
            if factor
            else "the farther of the two from its natural variation)"
        ),
    )
