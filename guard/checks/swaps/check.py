"""Two contracted columns written into each other's place: `columns_swapped`.

Five lines of evidence, over each pair of contracted numeric columns (a, b):

- all rows: the batch's a looks like the reference's b and its b like the reference's a (KS distance within
  noise), while each is far from its own reference (at least `policy.swap_self_distance`, and `policy.swap_cross_ratio` times further
  than from the other's). A slow cycle moves a column away from its own reference, but not onto another
  column's, and not both columns at once;
- some rows: an order the reference always held between two columns of one declared unit (temp_min <=
  temp_max: on at least `policy.swap_order_held` of at least `policy.swap_min_order_rows` rows) is broken on some batch rows by about
  the reference's typical gap (the mean of low - high over the broken rows within `policy.swap_gap_ratio` of the mean of
  high - low in the reference): swapped rows break it by a whole gap, while two series that merely cross
  as their levels drift (two series whose order reverses part of the time: 0.4 of the reference's gap when the
  reference never saw them cross) break it by less, and a unit change in one column by far more.
  A whole swap in a stretch whose gaps are under 0.6 of the reference's is left to the first rule (a slow cycle
  can reverse a strict order on every row of a short batch), unless
  the reference spans a whole cycle or the order is a bound it reached (`PairMoments.bound`: a lower series
  that runs close under its upper one, swapped, is over it by a small gap on every row). An order
  the reference held on at least `policy.swap_order_mostly` of its rows only (a lower series under its upper one, but
  for rounding in stitched data) tells a whole swap: flipped on at least `policy.swap_order_mostly` of the batch.
- correlations: two columns of one declared unit whose correlations with the other contracted numbers are
  exchanged (the batch's sit at least three quarters of the way from the reference's profiles to those
  profiles swapped, where the reference holds them apart beyond the batch correlations' noise), while at
  least one of them left its natural variation: a swap in a stretch where their values overlap;
- ranges: two numeric columns (of any units and types), one of them with at least `policy.swap_range_out` of its
  values outside any value its reference showed, and read as each other's both inside their ranges (all but
  `policy.swap_range_back`) and their natural variation: a swap where the columns have no other column to correlate
  with, or hold different kinds of value (a flag and a measurement);
- exact: the batch's a profiles exactly as the reference's b and the reverse, and with every other column a
  and b exchanged their co-moments: the very rows the reference profiled, swapped. Only a reference of the
  same rows (a batch that passed earlier, against its kept profile) can say this, and it says it in any
  stretch, where none of the rules above can.

A swap exchanges the two columns' correlations with every other column; a rescaling or a unit change keeps
every correlation. So where the reference tells the two apart (their correlations with the other contracted
numbers differ by at least `policy.swap_profile_apart`, summed in squares), a whole swap is named only when the batch's
correlations fit the swapped reading better than the one as it came. Where they fit as it came, a strict order
broken on many rows is one column rescaled, not swapped: `scale_shift` on the column that, rescaled back by the
move of the two columns' mean ratio, comes nearer its natural variation (`GuardContext.natural_distance`),
a block with nothing to heal.

No column that every kept batch held on one value, and the batch too (`Reference.holds_the_periods_value`: a
period's year or flag, constant within a batch by construction), is a candidate: a new period's flag switching
on while the last one's switches off reads as exchanged, and a one-valued column has no spread to exchange.

The finding names both columns (`params["columns"]`) and what to swap back: `scope` "all" (every row; the
medians observed at detection let the playbook tell a swapped table from a healed one) or "order" (the rows
where `order[0] > order[1]`).

Closest calls, per pair tested (on its first column): each threshold the lines of evidence compare, in its own terms
(`_pair_statistics`). The lines branch on several of them at once, so a call's `decides` is read by judging the pair
again with that one threshold moved just across the statistic (`_SwapBatch.closest_calls`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import AbstractSet, Callable, Iterator

import numpy as np
import pandas as pd

from guard.checks.swaps.correlations import CorrelationProfile, by_correlations, by_steps
from guard.checks.swaps.finding import NUMERIC_TYPES
from guard.checks.swaps.order import by_some_rows, continuity_of
from guard.checks.swaps.values import by_all_rows, by_bounds, by_ranges, exact_fields, exactly_exchanged, share_outside
from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, moved_across
from guard.registry import register
from guard.statistics import SortedValues, ks_distance, numeric_values
from profiles.profile import DatasetProfile
from profiles.reference import Reference
from profiles.relations import pair_key

__all__ = ["check_columns_swapped"]


@register("columns_swapped", per_column=True)
def check_columns_swapped(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    batch = _SwapBatch.of(ctx)
    if batch is None:
        return
    candidates: list[tuple[float, Finding]] = [(math.inf, found) for found in by_bounds(ctx)]
    for a, b in batch.pairs_to_test():
        finding = batch.evidence(a, b)
        yield from batch.closest_calls(a, b, finding is not None)
        if finding is not None:
            candidates.append((batch.profile.compare(a, b, ctx.policy).support, finding))
    # one finding per column: the pair whose correlations moved furthest towards exchanged first (a swap of dni
    # and dhi also breaks dhi <= ghi; it is dni's correlations that dhi took), then the order of the pairs
    taken: set[str] = set()
    for _, finding in sorted(candidates, key=lambda c: -c[0]):
        columns = set(finding.params.get("columns") or [finding.column])
        if not columns & taken:
            taken |= columns
            yield finding


@dataclass
class _SwapBatch:
    """What every pair's evidence reads, each built once: the candidate columns (contracted numbers, not the key,
    not a period's value), their batch values, their KS distance from their own reference, the correlation
    profile, and cached natural distances and shares outside a range."""

    ctx: GuardContext
    reference: DatasetProfile
    names: list[str]
    values: dict[str, np.ndarray]
    own: dict[str, float | None]
    profile: CorrelationProfile
    natural: Callable[[str], float | None]
    measured: Callable[[str], tuple[float | None, float] | None]  # a column's (natural distance, step) as it came
    outside: Callable[[str, str], float]  # outside(x, y): the share of x's batch values outside y's reference range
    cross: Callable[[str, str], float | None]  # cross(x, y): the KS distance of x's batch values from y's reference

    @classmethod
    def of(cls, ctx: GuardContext) -> _SwapBatch | None:
        assert ctx.contract and ctx.snapshot
        reference = ctx.reference_profile
        if reference is None:
            return None
        sample = ctx.snapshot.sample
        names = [
            c.name
            for c in ctx.contract.columns
            if c.logical_type in NUMERIC_TYPES
            and not c.primary_key
            and c.name in sample
            and c.name in reference.columns
            and not _holds_its_periods_value(ctx, c.name)
        ]
        values = {name: numeric_values(sample[name]) for name in names}
        # each column is read against several references: sorted, and its percentiles taken, once
        ordered = {name: SortedValues(column) for name, column in values.items()}
        return cls(
            ctx,
            reference,
            names,
            values,
            {name: ks_distance(ordered[name], reference.columns[name]) for name in names},
            CorrelationProfile(reference, sample, names),
            functools.cache(ctx.natural_distance),
            functools.cache(ctx.natural_measure),
            functools.cache(lambda of, against: share_outside(values[of], reference, against)),
            functools.cache(lambda of, against: ks_distance(ordered[of], reference.columns[against])),
        )

    def evidence(self, a: str, b: str) -> Finding | None:
        """The first of the five lines of evidence that names a and b swapped (None: no line does, or the two
        are of different logical types)."""
        ctx, reference = self.ctx, self.reference
        return exactly_exchanged(ctx, reference, a, b, self.names) or next(
            (found for line in self._lines(ctx) if (found := line(a, b)) is not None), None
        )

    def _lines(
        self, ctx: GuardContext, fields: AbstractSet[str] | None = None
    ) -> list[Callable[[str, str], Finding | None]]:
        """The lines of evidence with thresholds, in `evidence`'s order, judged under `ctx`'s policy (those reading one
        of `fields` only, when given)."""
        reference = self.reference
        lines: list[tuple[frozenset[str], Callable[[str, str], Finding | None]]] = [
            (_ORDER | _PROFILE, lambda a, b: by_some_rows(ctx, reference, a, b, self.profile)),
            (
                _KS | _PROFILE,
                lambda a, b: by_all_rows(ctx, reference, a, b, self.values, self.own, self.profile, self.cross),
            ),
            (_PROFILE, lambda a, b: by_correlations(ctx, a, b, self.profile, self.own, self.natural)),
            (_RANGES, lambda a, b: by_ranges(ctx, a, b, self.values, self.outside, self.natural)),
            (_PROFILE, lambda a, b: by_steps(ctx, a, b, self.measured, self.profile)),
        ]
        return [line for reads, line in lines if fields is None or reads & fields]

    def closest_calls(self, a: str, b: str, named: bool) -> list[ClosestCall]:
        """The closest calls of a tested pair (`_pair_statistics`: each threshold's statistic on it, in the field's
        terms), on column a (the column a finding of the pair names). A call across its limit decides where the pair
        was named; one short of it, where the pair was not named and the lines that read its field name it with the
        field moved just across the statistic (crossing it alone would block, every other threshold as shipped)."""
        calls = []
        for field, index, statistic, above in _pair_statistics(self, a, b):
            shipped = getattr(self.ctx.policy, field)
            limit = float(shipped[index] if index is not None else shipped)
            crossed = statistic > limit if above else statistic < limit
            if crossed or named or not math.isfinite(statistic):
                decides = crossed and named
            else:
                moved = replace(self.ctx, policy=moved_across(self.ctx.policy, field, statistic, above, index))
                batch = self
                if field == "swap_min_pair_rows":  # the batch's correlations read again on fewer rows
                    assert moved.snapshot is not None
                    pair_rows = moved.policy.swap_min_pair_rows
                    batch = replace(
                        self, profile=CorrelationProfile(self.reference, moved.snapshot.sample, self.names, pair_rows)
                    )
                decides = any(line(a, b) is not None for line in batch._lines(moved, {field}))
            name = field if index is None else f"{field}[{index}]"
            calls.append(ClosestCall(name, a, statistic, limit, above, decides))
        return calls

    def pairs_to_test(self) -> list[tuple[str, str]]:
        """The pairs `evidence` could name, in the order of `combinations(names, 2)`: each line needs something of
        one column or of a pair that is cheap to find for all of them at once, so a wide table's pairs are not
        tried one by one (5,000 columns: 12.5 million pairs, nearly all of them of columns that look like
        themselves).

        - exact: the batch's a profiles as the reference's b and the reverse (the exact fields, by a dict);
        - some rows and correlations: both columns in the reference's pair moments (an order learned,
          correlations with the others to compare: `profiles.relations` keeps pairs of a bounded number of columns);
        - all rows: both columns at least `policy.swap_self_distance` from their own reference;
        - ranges: one column with `policy.swap_range_out` of its values outside its reference's range, with each
          column whose reference range holds the column's batch median."""
        ctx, reference, names = self.ctx, self.reference, self.names
        assert ctx.contract is not None and ctx.snapshot is not None
        at = {name: i for i, name in enumerate(names)}
        found: set[tuple[int, int]] = set()

        def add(x: str, y: str) -> None:
            if x != y:
                found.add((min(at[x], at[y]), max(at[x], at[y])))

        def add_all(group: list[str]) -> None:
            for i, x in enumerate(group):
                for y in group[i + 1 :]:
                    add(x, y)

        batch = ctx.snapshot.profile.columns
        held_as: dict[tuple[object, ...], list[str]] = {}  # the reference's columns by their exact fields
        for name in names:
            held_as.setdefault(exact_fields(reference.columns[name]), []).append(name)
        for a in (n for n in names if n in batch):
            for b in held_as.get(exact_fields(batch[a]), ()):
                if b in batch and exact_fields(batch[b]) == exact_fields(reference.columns[a]):
                    add(a, b)
        add_all(self.profile.compared)
        add_all([n for n in names if (d := self.own[n]) is not None and d >= ctx.policy.swap_self_distance])
        for a in names:
            if len(self.values[a]) and self.outside(a, a) >= ctx.policy.swap_range_out:
                median = float(np.median(self.values[a]))
                for b in names:
                    low, high = reference.columns[b].minimum, reference.columns[b].maximum
                    if low is not None and high is not None and low <= median <= high:
                        add(a, b)  # a partner's range holds what the column now holds
        return [(names[i], names[j]) for i, j in sorted(found)]


_KS = frozenset({"swap_min_rows", "swap_self_distance", "swap_cross_ratio"})


_RANGES = frozenset({"swap_min_rows", "swap_range_out", "swap_range_back"})


_PROFILE = frozenset({"swap_profile_apart", "swap_profile_noise", "swap_min_pair_rows"})


_ORDER = frozenset(
    {
        "swap_min_order_rows",
        "swap_order_held",
        "swap_order_mostly",
        "swap_min_broken_rows",
        "swap_gap_ratio",
        "whole_swap",
        "swap_continuity",
        "swap_full_cycle_ms",
    }
)


def _pair_statistics(batch: _SwapBatch, a: str, b: str) -> list[tuple[str, int | None, float, bool]]:
    """(field, its index in a pair of limits, statistic, above) for each threshold the lines of evidence compare on
    the pair, in the field's terms: the fewer batch values of the two (`swap_min_rows`), the nearer of the two to its
    own reference (`swap_self_distance`), the smaller of each's distance from its own over its distance from the
    other's (`swap_cross_ratio`), the larger share outside its own range (`swap_range_out`) and outside the other's
    read swapped back (`swap_range_back`, from above), how far apart the reference holds their correlations with the
    others (`swap_profile_apart`) and that over its noise per unit (`swap_profile_noise`); and where the two share a
    unit and the reference an order between them, the order's rows and the share holding it (`swap_min_order_rows`,
    `swap_order_held`, `swap_order_mostly`) and the batch's rows breaking it, their share, their break over the
    reference's gap, how much nearer the newest reference batch they sit swapped back, and the reference's span."""
    ctx, policy = batch.ctx, batch.ctx.policy
    found: list[tuple[str, int | None, float, bool]] = []
    x, y = batch.values[a], batch.values[b]
    found.append(("swap_min_rows", None, float(min(len(x), len(y))), True))
    own_a, own_b = batch.own[a], batch.own[b]
    if own_a is not None and own_b is not None:
        found.append(("swap_self_distance", None, min(own_a, own_b), True))
        cross_a, cross_b = batch.cross(a, b), batch.cross(b, a)
        if cross_a is not None and cross_b is not None:
            ratios = [own / cross if cross else math.inf for own, cross in ((own_a, cross_a), (own_b, cross_b))]
            found.append(("swap_cross_ratio", None, min(ratios), True))
    if len(x) and len(y):
        found.append(("swap_range_out", None, max(batch.outside(a, a), batch.outside(b, b)), True))
        found.append(("swap_range_back", None, max(batch.outside(b, a), batch.outside(a, b)), False))
    fewest = batch.profile.fewest_rows(a, b)
    if fewest is not None:
        found.append(("swap_min_pair_rows", None, fewest, True))
    compared = batch.profile.compare(a, b, policy)
    if compared.terms:
        found.append(("swap_profile_apart", None, compared.apart, True))
        if compared.rows:
            found.append(("swap_profile_noise", None, compared.apart * compared.rows / compared.terms, True))
    found += _order_statistics(ctx, batch.reference, a, b)
    return found


def _order_statistics(
    ctx: GuardContext, reference: DatasetProfile, a: str, b: str
) -> list[tuple[str, int | None, float, bool]]:
    """The order fields' statistics of a pair of one declared unit whose pair moments the reference keeps."""
    assert ctx.contract is not None and ctx.snapshot is not None
    units = {ctx.contract.column(a).unit, ctx.contract.column(b).unit}  # type: ignore[union-attr]
    moments = reference.relations.pairs.get(pair_key(a, b)) if reference.relations is not None else None
    if len(units) != 1 or None in units or moments is None or not moments.n:
        return []
    first, second = sorted((a, b))
    share, reversed_share = moments.a_le_b / moments.n, moments.b_le_a / moments.n
    held = max(share, reversed_share)
    low, high, gap = (
        (first, second, moments.mean_b - moments.mean_a)
        if share >= reversed_share
        else (
            second,
            first,
            moments.mean_a - moments.mean_b,
        )
    )
    found: list[tuple[str, int | None, float, bool]] = [
        ("swap_min_order_rows", None, float(moments.n), True),
        ("swap_order_held", None, held, True),
        ("swap_order_mostly", None, held, True),
    ]
    if isinstance(ctx.reference, Reference) and ctx.reference.span_ms is not None:
        found.append(("swap_full_cycle_ms", None, float(ctx.reference.span_ms), True))
    sample = ctx.snapshot.sample
    x = pd.to_numeric(sample[low], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    y = pd.to_numeric(sample[high], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    broken = x > y
    rows = int(broken.sum())
    if not rows or gap <= 0:  # no row breaks it: no break to read at any number of rows
        return found
    found.append(("swap_min_broken_rows", None, float(rows), True))
    ratio = float(np.mean(x[broken] - y[broken])) / gap
    broken_share = rows / max(int((x != y).sum() - (np.isnan(x) | np.isnan(y)).sum()), 1)
    found += [
        ("swap_order_mostly", None, broken_share, True),
        ("whole_swap", None, broken_share, True),
        ("swap_gap_ratio", 0, ratio, True),
        ("swap_gap_ratio", 1, ratio, False),
    ]
    continuity = continuity_of(ctx, x, y, low, high)
    if continuity is not None:
        found.append(("swap_continuity", None, continuity, True))
    return found


def _holds_its_periods_value(ctx: GuardContext, name: str) -> bool:
    """Every kept batch held the column on one value and so does the batch (a period's year or flag, constant
    within a batch by construction): a new period's value, which no swap can be told from, and no column to
    exchange a spread with."""
    assert ctx.snapshot is not None
    reference = ctx.reference
    return isinstance(reference, Reference) and reference.holds_the_periods_value(
        name, ctx.snapshot.profile.columns.get(name)
    )
