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
from typing import AbstractSet, Callable, Iterator, Mapping

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding, moved_across, window_rows
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.policy import Policy
from guard.registry import register
from guard.statistics import SortedValues, ks_distance, ks_noise, numeric_values
from guard.units import is_ratio_scale, limits
from profiles.profile import ColumnProfile, DatasetProfile
from profiles.reference import Reference
from profiles.relations import pair_key

__all__ = ["check_columns_swapped"]

_NUMERIC = ("number", "integer")
SUMS_REL_TOL = 1e-9  # sums of the same values added in another order (exact profiles)


@register("columns_swapped", per_column=True)
def check_columns_swapped(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    batch = _SwapBatch.of(ctx)
    if batch is None:
        return
    candidates: list[tuple[float, Finding]] = [(math.inf, found) for found in _by_bounds(ctx)]
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
    profile: _CorrelationProfile
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
            if c.logical_type in _NUMERIC
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
            _CorrelationProfile(reference, sample, names),
            functools.cache(ctx.natural_distance),
            functools.cache(ctx.natural_measure),
            functools.cache(lambda of, against: _outside(values[of], reference, against)),
            functools.cache(lambda of, against: ks_distance(ordered[of], reference.columns[against])),
        )

    def evidence(self, a: str, b: str) -> Finding | None:
        """The first of the five lines of evidence that names a and b swapped (None: no line does, or the two
        are of different logical types)."""
        ctx, reference = self.ctx, self.reference
        return _exactly_exchanged(ctx, reference, a, b, self.names) or next(
            (found for line in self._lines(ctx) if (found := line(a, b)) is not None), None
        )

    def _lines(
        self, ctx: GuardContext, fields: AbstractSet[str] | None = None
    ) -> list[Callable[[str, str], Finding | None]]:
        """The lines of evidence with thresholds, in `evidence`'s order, judged under `ctx`'s policy (those reading one
        of `fields` only, when given)."""
        reference = self.reference
        lines: list[tuple[frozenset[str], Callable[[str, str], Finding | None]]] = [
            (_ORDER | _PROFILE, lambda a, b: _some_rows(ctx, reference, a, b, self.profile)),
            (
                _KS | _PROFILE,
                lambda a, b: _all_rows(ctx, reference, a, b, self.values, self.own, self.profile, self.cross),
            ),
            (_PROFILE, lambda a, b: _by_correlations(ctx, a, b, self.profile, self.own, self.natural)),
            (_RANGES, lambda a, b: _by_ranges(ctx, a, b, self.values, self.outside, self.natural)),
            (_PROFILE, lambda a, b: _by_steps(ctx, a, b, self.measured, self.profile)),
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
                        self, profile=_CorrelationProfile(self.reference, moved.snapshot.sample, self.names, pair_rows)
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
            held_as.setdefault(_exact_fields(reference.columns[name]), []).append(name)
        for a in (n for n in names if n in batch):
            for b in held_as.get(_exact_fields(batch[a]), ()):
                if b in batch and _exact_fields(batch[b]) == _exact_fields(reference.columns[a]):
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
    continuity = _continuity(ctx, x, y, low, high)
    if continuity is not None:
        found.append(("swap_continuity", None, continuity, True))
    return found


def _paired_columns(reference: DatasetProfile, at: Mapping[str, int]) -> list[str]:
    """The columns among `at` that the reference holds pair moments of (a key is two names joined by '|', and a
    name may hold one: each cut of the key is tried)."""
    pairs = reference.relations.pairs if reference.relations is not None else {}
    paired: set[str] = set()
    for key in pairs:
        for cut in (i for i, char in enumerate(key) if char == "|"):
            first, second = key[:cut], key[cut + 1 :]
            if first in at and second in at:
                paired |= {first, second}
    return sorted(paired, key=at.__getitem__)


def _holds_its_periods_value(ctx: GuardContext, name: str) -> bool:
    """Every kept batch held the column on one value and so does the batch (a period's year or flag, constant
    within a batch by construction): a new period's value, which no swap can be told from, and no column to
    exchange a spread with."""
    assert ctx.snapshot is not None
    reference = ctx.reference
    return isinstance(reference, Reference) and reference.holds_the_periods_value(
        name, ctx.snapshot.profile.columns.get(name)
    )


class _CorrelationProfile:
    """Each column's correlations with the other contracted numbers: the reference's (merged pair moments) and
    the batch's (its sample)."""

    def __init__(
        self,
        reference: DatasetProfile,
        sample: pd.DataFrame,
        names: list[str],
        pair_rows: float = POLICY.swap_min_pair_rows,
    ) -> None:
        self.names = names
        self.pair_rows = pair_rows  # batch rows holding both of a pair, for their correlation
        self.pairs = reference.relations.pairs if reference.relations is not None else {}
        self.frame = pd.DataFrame({n: pd.to_numeric(sample[n], errors="coerce") for n in names}, dtype=float)
        # only columns the reference holds correlations of can be compared: the matrices are theirs alone
        self.compared = _paired_columns(reference, {name: i for i, name in enumerate(names)})
        compared = self.frame[self.compared]
        held = compared.notna().to_numpy(dtype=float)
        self._held = held.T @ held  # rows holding both of a pair
        # pairwise complete; NaN where undefined
        self._batch_matrix = compared.corr(min_periods=math.ceil(pair_rows)).to_numpy()
        self._at = {name: i for i, name in enumerate(self.compared)}
        self._reference_matrix: np.ndarray | None = None

    def _references(self) -> np.ndarray:
        """The reference's correlation of every pair of columns (NaN where it holds none), built once."""
        if self._reference_matrix is None:
            names = self.compared
            found = np.full((len(names), len(names)), np.nan)
            for i, a in enumerate(names):
                for j in range(i + 1, len(names)):
                    moments = self.pairs.get(pair_key(a, names[j]))
                    if moments is not None and moments.correlation is not None:
                        found[i, j] = found[j, i] = moments.correlation
            self._reference_matrix = found
        return self._reference_matrix

    def mean_ratio_moved(self, a: str, b: str) -> float | None:
        """The batch's mean of a over mean of b, against the reference's (rows holding both): the factor one of
        them was rescaled by (a's, or 1 / b's)."""
        moments = self.pairs.get(pair_key(a, b))
        both = self.frame[[a, b]].dropna()
        if moments is None or len(both) < self.pair_rows:
            return None
        mean_a, mean_b = (moments.mean_a, moments.mean_b) if a == min(a, b) else (moments.mean_b, moments.mean_a)
        seen_a, seen_b = float(both[a].mean()), float(both[b].mean())
        if min(abs(mean_a), abs(mean_b), abs(seen_a), abs(seen_b)) <= 0:
            return None
        return round((seen_a / seen_b) / (mean_a / mean_b), 6)

    def compare(self, a: str, b: str, policy: Policy = POLICY) -> _Comparison:
        """Sums of squares over the other columns c: how far apart the reference holds r(a, c) and r(b, c), and
        how far the batch's sit from the reference's as they came and exchanged (nothing to compare where the
        reference holds no correlations of a or b); judged by `policy`."""
        if a not in self._at or b not in self._at:
            return _Comparison(0.0, 0.0, 0.0, 0, 0, policy)
        i, j = self._at[a], self._at[b]
        reference, batch, held = self._references(), self._batch_matrix, self._held
        ra, rb, xa, xb = reference[i], reference[j], batch[i], batch[j]
        others = np.ones(len(self.compared), dtype=bool)
        others[[i, j]] = False
        used = others & ~(np.isnan(ra) | np.isnan(rb) | np.isnan(xa) | np.isnan(xb))
        ra, rb, xa, xb = ra[used], rb[used], xa[used], xb[used]
        apart = float(np.sum((ra - rb) ** 2))
        as_came = float(np.sum((xa - ra) ** 2 + (xb - rb) ** 2))
        exchanged = float(np.sum((xa - rb) ** 2 + (xb - ra) ** 2))
        rows = int(np.minimum(held[i], held[j])[used].min()) if used.any() else 0
        return _Comparison(apart, as_came, exchanged, int(used.sum()), rows, policy)

    def fewest_rows(self, a: str, b: str) -> float | None:
        """The fewest batch rows holding a, or b, and another compared column: what `policy.swap_min_pair_rows` asks
        of each correlation the two are compared by (None: the reference holds no correlations of a or b)."""
        if a not in self._at or b not in self._at or len(self.compared) < 3:
            return None
        i, j = self._at[a], self._at[b]
        others = np.ones(len(self.compared), dtype=bool)
        others[[i, j]] = False
        return float(np.minimum(self._held[i], self._held[j])[others].min())

    def says_swapped(self, a: str, b: str, policy: Policy = POLICY) -> bool | None:
        """True: the batch's correlations of a and b with the others fit the reference's swapped better than as
        they came; False: as they came (a swap would have exchanged them); None: the reference cannot tell."""
        found = self.compare(a, b, policy)
        return None if found.apart < policy.swap_profile_apart else found.exchanged < found.as_came


@dataclass(frozen=True)
class _Comparison:
    apart: float
    as_came: float
    exchanged: float
    terms: int  # other columns compared
    rows: int  # the fewest batch rows behind one of the batch's correlations
    policy: Policy = POLICY

    @property
    def support(self) -> float:
        """How far the batch moved towards the exchanged profiles, in units of how far apart they are (-2: as
        the reference, +2: exchanged); 0 where the reference cannot tell."""
        return (self.as_came - self.exchanged) / self.apart if self.telling else 0.0

    @property
    def telling(self) -> bool:
        """The reference holds the two profiles further apart than the batch's correlations are noisy: each
        has a variance of about 1 / rows, and a sum of 2 * terms of their squared errors is compared."""
        return self.rows > 0 and self.apart >= max(self.policy.swap_profile_apart, self.noise)

    @property
    def noise(self) -> float:
        """The bound of a clean batch's misfit: twice the expected sum of the 2 * terms squared sampling errors of
        correlations on `rows` rows (each about 1 / rows)."""
        return self.policy.swap_profile_noise * self.terms / self.rows if self.rows > 0 else math.inf

    @property
    def left_its_noise(self) -> bool:
        """The batch's correlations as they came sit beyond their noise from the reference's."""
        return self.as_came > self.noise

    @property
    def swapped(self) -> bool:
        """The batch moved at least three quarters of the way from the profiles as they were to the profiles
        exchanged (a whole swap moves as_came - exchanged from -2 * apart to +2 * apart)."""
        return self.telling and self.as_came - self.exchanged >= self.apart


def _exactly_exchanged(
    ctx: GuardContext, reference: DatasetProfile, a: str, b: str, names: list[str]
) -> Finding | None:
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
    return _whole_swap(
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
    if _exact_fields(x) != _exact_fields(y):
        return False
    sums = [(x.mean, y.mean), (x.stdev, y.stdev)]
    if x.moments is not None and y.moments is not None:
        sums += [(x.moments.total, y.moments.total), (x.moments.m2, y.moments.m2)]
    return all(a == b or (a is not None and b is not None and _close(a, b)) for a, b in sums)


_EXACT = ("logical_type", "row_count", "null_count", "nan_count", "zero_count", "minimum", "maximum", "quantiles")


def _exact_fields(column: ColumnProfile) -> tuple[object, ...]:
    """The fields two profiles of the same values hold equal (a tuple: a dict is keyed by it)."""
    return tuple(getattr(column, name) for name in _EXACT)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=SUMS_REL_TOL, abs_tol=1e-12)


def _all_rows(
    ctx: GuardContext,
    reference: DatasetProfile,
    a: str,
    b: str,
    values: dict[str, np.ndarray],
    own: dict[str, float | None],
    profile: _CorrelationProfile,
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
    return _whole_swap(
        ctx,
        a,
        b,
        evidence,
        medians,
        f"{a!r} and {b!r} look like each other's reference (KS {cross_a:.2f} and {cross_b:.2f}; "
        f"against their own {self_a:.2f} and {self_b:.2f}): written into each other's place",
    )


def _by_correlations(
    ctx: GuardContext,
    a: str,
    b: str,
    profile: _CorrelationProfile,
    own: dict[str, float | None],
    natural: Callable[[str], float | None],
) -> Finding | None:
    """Two columns of one declared unit whose correlations with every other column were exchanged, while at least
    one of them sits outside its natural variation (against a bare profile, a batch that passed earlier judged
    against itself: beyond the KS noise of its rows from it), or, where both stay inside it (two columns of like
    values), the correlations as they came sit beyond their noise from the reference's and read as each other's
    the two columns are still inside their natural variation: swapped, even where their values overlap in this
    stretch. The correlations are the batch's statistics that left their history, and exchanging brings them back."""
    assert ctx.contract is not None and ctx.snapshot is not None
    if not _same_unit(ctx, a, b):
        return None
    found = profile.compare(a, b, ctx.policy)
    if not found.swapped:
        return None
    batches = isinstance(ctx.reference, Reference)
    far = {name: natural(name) for name in (a, b)} if batches else {}
    if batches and not _left_natural_variation(far):
        if not (found.left_its_noise and _natural_swapped_back(ctx, a, b)):
            return None
    if not batches:  # moved beyond the KS noise of its rows from what it was
        noise = ks_noise(found.rows)
        far = {name: None if own[name] is None else own[name] / noise for name in (a, b)}  # type: ignore[operator]
        if not _left_natural_variation(far):
            return None
    medians = {n: float(np.nanmedian(profile.frame[n])) for n in (a, b)}
    evidence = {
        "correlations_apart": round(found.apart, 4),
        "misfit_as_came": round(found.as_came, 4),
        "misfit_exchanged": round(found.exchanged, 4),
        "columns_compared": found.terms,
        "natural_distance": {n: None if d is None else round(d, 3) for n, d in far.items()},
    }
    return _whole_swap(
        ctx,
        a,
        b,
        evidence,
        medians,
        f"{a!r} and {b!r} correlate with the {found.terms} other columns as the other did in the reference (misfit "
        f"{found.exchanged:.2f} exchanged, {found.as_came:.2f} as they came, beyond its noise {found.noise:.2f})"
        + (", and they left their natural variation" if _left_natural_variation(far) else "")
        + ": written into each other's place",
    )


def _by_ranges(
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
    if max(back.values()) > ctx.policy.swap_range_back or not _natural_swapped_back(ctx, a, b):
        return None
    if _one_rescaled_fits_better(ctx, a, b, came, natural):
        return None
    medians = {a: float(np.median(values[a])), b: float(np.median(values[b]))}
    evidence = {"outside_range_as_came": came, "outside_range_swapped_back": back}
    worst = max(came, key=lambda n: came[n])
    return _whole_swap(
        ctx,
        a,
        b,
        evidence,
        medians,
        f"{came[worst]:.0%} of {worst!r} lies outside any value its reference showed, and read as each other's, "
        f"{a!r} and {b!r} lie inside their ranges and natural variation: written into each other's place",
    )


def _by_bounds(ctx: GuardContext) -> Iterator[Finding]:
    """Two columns each holding values outside its own bounds (the contract's, or what its unit allows) and, read as
    each other's, every value inside the other's bounds: written into each other's place. No clean batch holds a
    value its bounds forbid, so this reads a swap in any column, a period's value too (a year and a month exchanged
    in a month's batch, each held on one value), where nothing of the spread can."""
    assert ctx.contract is not None and ctx.snapshot is not None
    observed = ctx.snapshot.profile.columns
    bounded = {}
    for column in ctx.contract.columns:
        seen = observed.get(column.name)
        if column.logical_type in _NUMERIC and not column.primary_key and seen is not None:
            if seen.minimum is not None and seen.maximum is not None:
                bounded[column.name] = ((seen.minimum, seen.maximum), limits(column)[:2])
    out = [n for n, (seen, allowed) in bounded.items() if not _inside(seen, allowed)]
    for i, a in enumerate(out):
        for b in out[i + 1 :]:
            if _inside(bounded[b][0], bounded[a][1]) and _inside(bounded[a][0], bounded[b][1]):
                medians = {n: float(np.nanmedian(numeric_values(ctx.snapshot.sample[n]))) for n in (a, b)}
                evidence = {n: {"spans": list(bounded[n][0]), "bounds": list(bounded[n][1])} for n in (a, b)}
                yield _whole_swap(
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


def _by_steps(
    ctx: GuardContext,
    a: str,
    b: str,
    measured: Callable[[str], tuple[float | None, float] | None],
    profile: _CorrelationProfile,
) -> Finding | None:
    """Both columns left their natural variation, one by a step from the newest reference batch beyond `policy.far`
    of the steps the reference batches took (a discontinuity: a slow cycle moves by ordinary steps), and read as each
    other's both are back inside it with ordinary steps: written into each other's place. The bands carry each
    batch's own sampling error, so a short batch (twelve monthly rows) is judged as any other."""
    came = [measured(a), measured(b)]
    if any(m is None or m[0] is None or m[0] <= 1 for m in came):
        return None
    if max(m[1] for m in came if m is not None) <= ctx.policy.far:
        return None
    back = [ctx.natural_measure(a, values_of=b), ctx.natural_measure(b, values_of=a)]
    if any(m is None or m[0] is None or m[0] > 1 or m[1] > 1 for m in back):
        return None
    if profile.says_swapped(a, b, ctx.policy) is False:
        return None  # each still correlates with the others as it did: each moved on its own
    assert ctx.snapshot is not None
    sample = ctx.snapshot.sample
    medians = {n: float(np.nanmedian(numeric_values(sample[n]))) for n in (a, b)}
    evidence = {
        "as_came": {n: _distance_and_step(m) for n, m in zip((a, b), came) if m},
        "swapped_back": {n: _distance_and_step(m) for n, m in zip((a, b), back) if m},
    }
    return _whole_swap(
        ctx,
        a,
        b,
        evidence,
        medians,
        f"{a!r} and {b!r} both left their natural variation, one by a step beyond {ctx.policy.far:g}x the steps past "
        "batches took, and read as each other's both are back inside it with ordinary steps: written into each "
        "other's place",
    )


def _distance_and_step(measured: tuple[float | None, float]) -> dict[str, float | None]:
    distance, step = measured
    return {"distance": None if distance is None else round(distance, 3), "step": round(step, 3)}


def _left_natural_variation(far: Mapping[str, float | None]) -> bool:
    return any(d is not None and d > 1 for d in far.values())


def _same_unit(ctx: GuardContext, a: str, b: str) -> bool:
    assert ctx.contract is not None
    return ctx.contract.column(a).unit == ctx.contract.column(b).unit  # type: ignore[union-attr]


def _outside(values: np.ndarray, reference: DatasetProfile, name: str) -> float:
    """The share of values outside the reference's [minimum, maximum] of `name` (1.0 where it has none)."""
    column = reference.columns.get(name)
    if column is None or column.minimum is None or column.maximum is None or not len(values):
        return 1.0
    return float(np.mean((values < column.minimum) | (values > column.maximum)))


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


def _some_rows(
    ctx: GuardContext, reference: DatasetProfile, a: str, b: str, profile: _CorrelationProfile
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
            or not _natural_swapped_back(ctx, low, high)
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


def _not_exchanged(
    reference: DatasetProfile, rows: pd.DataFrame, names: list[str], low: str, high: str, policy: Policy
) -> bool:
    """On these rows alone, the two columns' correlations with the rest tell and fit them as they came."""
    found = _CorrelationProfile(reference, rows, names).compare(low, high, policy)
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


def _continuity(ctx: GuardContext, x: np.ndarray, y: np.ndarray, low: str, high: str) -> float | None:
    """As they came over swapped back (`_moves`): what `_continued_swapped` compares with `policy.swap_continuity`."""
    moves = _moves(ctx, x, y, low, high)
    if moves is None or not moves[0]:
        return None
    return moves[0] / moves[1] if moves[1] else math.inf


def _natural_swapped_back(ctx: GuardContext, low: str, high: str) -> bool:
    """Each column's values read as the other's sit within that one's natural variation: swapping back restores
    them (a rescaled column does not become its partner's natural values)."""
    back = (ctx.natural_distance(low, values_of=high), ctx.natural_distance(high, values_of=low))
    return all(d is not None and d <= 1 for d in back)


def _rescaled(
    ctx: GuardContext, profile: _CorrelationProfile, low: str, high: str, rows: int, sampled: int, share: float
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


def _whole_swap(
    ctx: GuardContext, a: str, b: str, evidence: Mapping[str, object], medians: dict[str, float], message: str
) -> Finding:
    """A swap of every row of the batch."""
    assert ctx.snapshot is not None
    return _finding(ctx, a, b, "all", None, int(ctx.snapshot.profile.row_count), evidence, medians, message)


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
