"""Swapped columns told by their values (`guard.checks.swaps`): the batch's a profiles exactly as the reference's
b (the very rows, swapped), reads as b on all rows (KS distance), or lies outside its own range and inside the
other's; and a pair whose declared bounds say which is which.
"""

from __future__ import annotations

import math
from typing import Callable, Iterator, Mapping

import numpy as np

from guard.checks.swaps.correlations import CorrelationProfile
from guard.checks.swaps.finding import NUMERIC_TYPES, natural_swapped_back, swapped_on_every_row
from guard.context import GuardContext
from guard.findings import Finding
from guard.statistics import ks_noise, numeric_values
from guard.units import limits
from profiles.profile import ColumnProfile, DatasetProfile
from profiles.relations import pair_key

SUMS_REL_TOL = 1e-9  # sums of the same values added in another order (exact profiles)


def exactly_exchanged(ctx: GuardContext, reference: DatasetProfile, a: str, b: str, names: list[str]) -> Finding | None:
    """The batch's a holds exactly the values the reference's b held and the reverse, and with every other column
    a and b exchanged their co-moments too: the very rows the reference profiled, with the two columns swapped.
    Only a reference of the same rows can say this (a batch that passed earlier, against its kept profile),
    and it says it in any stretch, where the columns' values overlap."""
    assert ctx.snapshot is not None
    batch = ctx.snapshot.profile
    ours, theirs = batch.columns, reference.columns
    if not all(n in ours and n in theirs for n in (a, b)) or _same_values(ours[a], theirs[a]):
        return None
    if not (_same_values(ours[a], theirs[b]) and _same_values(ours[b], theirs[a])):
        return None
    now = batch.relations.pairs if batch.relations is not None else {}
    was = reference.relations.pairs if reference.relations is not None else {}
    for other in (n for n in names if n not in (a, b)):
        for mine, its in ((a, b), (b, a)):
            seen, kept = now.get(pair_key(mine, other)), was.get(pair_key(its, other))
            if seen is None or kept is None or seen.n != kept.n or not _close(seen.co_m2, kept.co_m2):
                return None
    medians = {name: float(np.nanmedian(numeric_values(ctx.snapshot.sample[name]))) for name in (a, b)}
    return swapped_on_every_row(
        ctx,
        a,
        b,
        {"exact": True},
        medians,
        f"{a!r} holds exactly the values {b!r} held when these rows were profiled, and {b!r} those of {a!r}, "
        "with every other column as well: written into each other's place",
    )


def _same_values(x: ColumnProfile, y: ColumnProfile) -> bool:
    """Two column profiles of the same values: counts, extremes and quantiles equal, sums equal but for the order
    they were added in (row groups cut elsewhere)."""
    if exact_fields(x) != exact_fields(y):
        return False
    sums = [(x.mean, y.mean), (x.stdev, y.stdev)]
    if x.moments is not None and y.moments is not None:
        sums += [(x.moments.total, y.moments.total), (x.moments.m2, y.moments.m2)]
    return all(a == b or (a is not None and b is not None and _close(a, b)) for a, b in sums)


_EXACT = ("logical_type", "row_count", "null_count", "nan_count", "zero_count", "minimum", "maximum", "quantiles")


def exact_fields(column: ColumnProfile) -> tuple[object, ...]:
    """The fields two profiles of the same values hold equal (a tuple: a dict is keyed by it)."""
    return tuple(getattr(column, name) for name in _EXACT)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=SUMS_REL_TOL, abs_tol=1e-12)


def by_all_rows(
    ctx: GuardContext,
    reference: DatasetProfile,
    a: str,
    b: str,
    values: dict[str, np.ndarray],
    own: dict[str, float | None],
    profile: CorrelationProfile,
    cross: Callable[[str, str], float | None],
) -> Finding | None:
    assert ctx.snapshot is not None
    x, y = values[a], values[b]
    self_a, self_b = own[a], own[b]
    if (
        min(len(x), len(y)) < ctx.policy.swap_min_rows
        or self_a is None
        or self_b is None
        or min(self_a, self_b) < ctx.policy.swap_self_distance
    ):
        return None  # a column that still looks like its own reference was not swapped away
    cross_a, cross_b = cross(a, b), cross(b, a)
    if cross_a is None or cross_b is None:
        return None
    noise = ks_noise(min(len(x), len(y)))
    if not all(
        own >= max(ctx.policy.swap_self_distance, ctx.policy.swap_cross_ratio * cross)
        and cross <= max(noise, ctx.policy.swap_self_distance / ctx.policy.swap_cross_ratio)
        for own, cross in ((self_a, cross_a), (self_b, cross_b))
    ):
        return None
    if profile.says_swapped(a, b, ctx.policy) is False:
        return None  # each still correlates with the others as it did: moved on its own, not into the other's place
    evidence = {
        "ks_own": {a: round(self_a, 4), b: round(self_b, 4)},
        "ks_other": {a: round(cross_a, 4), b: round(cross_b, 4)},
        "ks_noise": round(noise, 4),
    }
    medians = {a: float(np.median(x)), b: float(np.median(y))}
    return swapped_on_every_row(
        ctx,
        a,
        b,
        evidence,
        medians,
        f"{a!r} and {b!r} look like each other's reference (KS {cross_a:.2f} and {cross_b:.2f}; "
        f"against their own {self_a:.2f} and {self_b:.2f}): written into each other's place",
    )


def by_ranges(
    ctx: GuardContext,
    a: str,
    b: str,
    values: dict[str, np.ndarray],
    outside: Callable[[str, str], float],
    natural: Callable[[str], float | None],
) -> Finding | None:
    """Two numeric columns, one of them mostly outside the range its reference ever showed, and swapped back both
    entirely inside theirs and inside natural variation: written into each other's place (each column holding
    values only the other's range ever held), unless one column rescaled alone fits better (its runner-up). Of any
    units and types: a whole-number column and a decimal one swapped leave one of them holding decimals (its type
    changed) and both back home once exchanged."""
    assert ctx.snapshot is not None
    if min(len(values[a]), len(values[b])) < ctx.policy.swap_min_rows:
        return None
    came = {a: outside(a, a), b: outside(b, b)}
    if max(came.values()) < ctx.policy.swap_range_out:
        return None
    back = {a: outside(b, a), b: outside(a, b)}
    if max(back.values()) > ctx.policy.swap_range_back or not natural_swapped_back(ctx, a, b):
        return None
    if _one_rescaled_fits_better(ctx, a, b, came, natural):
        return None
    medians = {a: float(np.median(values[a])), b: float(np.median(values[b]))}
    evidence = {"outside_range_as_came": came, "outside_range_swapped_back": back}
    worst = max(came, key=lambda n: came[n])
    return swapped_on_every_row(
        ctx,
        a,
        b,
        evidence,
        medians,
        f"{came[worst]:.0%} of {worst!r} lies outside any value its reference showed, and read as each other's, "
        f"{a!r} and {b!r} lie inside their ranges and natural variation: written into each other's place",
    )


def by_bounds(ctx: GuardContext) -> Iterator[Finding]:
    """Two columns each holding values outside its own bounds (the contract's, or what its unit allows) and, read as
    each other's, every value inside the other's bounds: written into each other's place. No clean batch holds a
    value its bounds forbid, so this reads a swap in any column, a period's value too (a year and a month exchanged
    in a month's batch, each held on one value), where nothing of the spread can."""
    assert ctx.contract is not None and ctx.snapshot is not None
    observed = ctx.snapshot.profile.columns
    bounded = {}
    for column in ctx.contract.columns:
        seen = observed.get(column.name)
        if column.logical_type in NUMERIC_TYPES and not column.primary_key and seen is not None:
            if seen.minimum is not None and seen.maximum is not None:
                bounded[column.name] = ((seen.minimum, seen.maximum), limits(column)[:2])
    out = [n for n, (seen, allowed) in bounded.items() if not _inside(seen, allowed)]
    for i, a in enumerate(out):
        for b in out[i + 1 :]:
            if _inside(bounded[b][0], bounded[a][1]) and _inside(bounded[a][0], bounded[b][1]):
                medians = {n: float(np.nanmedian(numeric_values(ctx.snapshot.sample[n]))) for n in (a, b)}
                evidence = {n: {"spans": list(bounded[n][0]), "bounds": list(bounded[n][1])} for n in (a, b)}
                yield swapped_on_every_row(
                    ctx,
                    a,
                    b,
                    evidence,
                    medians,
                    f"{a!r} and {b!r} each hold values outside their own bounds, and every value of each lies inside "
                    "the other's: written into each other's place",
                )


def _inside(span: tuple[float, float], bounds: tuple[float | None, float | None]) -> bool:
    low, high = bounds
    return (low is None or span[0] >= low) and (high is None or span[1] <= high)


def _one_rescaled_fits_better(
    ctx: GuardContext, a: str, b: str, came: Mapping[str, float], natural: Callable[[str], float | None]
) -> bool:
    """The runner-up of a swap where only one column left its history (its range or its natural variation): that
    column rescaled by one factor and the other as it came. The plan that touches one column wins where it leaves
    both nearer natural variation than the swap does (the worse of the two columns, each way): a rescale whose
    values happen to fit a wide column's range is no swap with it."""
    moved = [n for n in (a, b) if came[n] >= ctx.policy.swap_range_out or (natural(n) or 0.0) > 1]
    if len(moved) != 1:
        return False
    alone, other = moved[0], b if moved[0] == a else a
    rescaled, stayed = ctx.natural_rescale(alone), natural(other)
    swapped = (ctx.natural_distance(a, values_of=b), ctx.natural_distance(b, values_of=a))
    if rescaled is None or stayed is None or None in swapped:
        return False
    return max(rescaled[1], stayed) <= max(d for d in swapped if d is not None)


def share_outside(values: np.ndarray, reference: DatasetProfile, name: str) -> float:
    """The share of values outside the reference's [minimum, maximum] of `name` (1.0 where it has none)."""
    column = reference.columns.get(name)
    if column is None or column.minimum is None or column.maximum is None or not len(values):
        return 1.0
    return float(np.mean((values < column.minimum) | (values > column.maximum)))
