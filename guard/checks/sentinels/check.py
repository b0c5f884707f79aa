"""Placeholders written where a measurement belongs: `sentinel`.

A numeric contracted column's batch values are counted (on the snapshot's row sample); a value held by at
least `policy.sentinel_min_rows` sampled rows and `policy.sentinel_min_share` of them is a point mass, and so is a placeholder-looking value
outside the contract's [minimum, maximum] held by any number of rows. It is a sentinel when it is

- impossible: outside the contract's [minimum, maximum] (a load of -1), and one code (at least `policy.sentinel_one_code` of
  the values outside the bounds: a spread of impossible values is the domain check's `out_of_range`);
- new: the reference never held it (exactly: outside the reference's [min, max], or 0 with a zero count of
  0; else at most `policy.sentinel_new_share` by the reference's sketch), and either
  - placeholder-looking (0, -1, -9, -99..., 99..., 77777...), `policy.sentinel_near_factor` times more frequent than the
    batch's `policy.sentinel_neighbours` nearest values on either side (within `policy.sentinel_neighbour_reach` of the reference's range width):
    a code stands out of the measurements around it, where a common 2.5 m/s written in km/h is a 9 among
    8.64s and 9.36s; and, when it sits at the reference's edge, `policy.sentinel_near_factor` times more frequent than the
    reference's values within reach of that edge plus `policy.sentinel_near_margin`: a calm hour at 0 m/s beside many at
    0.5 m/s continues the data, 10% of deliveries at 0 km beside almost none under 0.6 km does not;
  - or far outside the reference's range (by more than its width) with the other values still like the
    reference (`policy.sentinel_rest_distance`; a unit change moves a clipped minimum far outside too) and one code;
- frozen: any value the reference held rarely now holds `policy.frozen_share` of a batch's rows, or `policy.frozen_run_share` of
  them in one unbroken run in event-time order (the feed stuck from some hour on) that a value at its reference share
  (`share_bound`) makes by chance under `policy.frozen_run_chance` (`guard.statistics.run_chance`), in a column where no
  reference batch's most frequent value held more than `policy.frozen_batch_high` (a feed stuck on its last reading;
  a column with a mass of its own, a capped reading whose cap moved, is left alone; the longest run of one value
  on a clean batch of the real-data bench is a third of that batch: a reading saturated at its bound);
- grown: a placeholder-looking value the reference held rarely (under `policy.sentinel_growth_base`: a legitimate mass such
  as an 'unlimited' code held on half the rows, or the zeros of a zero-inflated column, is
  left alone) now holds `policy.sentinel_growth_factor` times its reference share plus `policy.sentinel_growth_margin`, and `policy.sentinel_growth_margin` more
  than any one reference batch showed of it, or of its own most frequent value: where each batch has a mode of its
  own (the most common age moves from week to week), a value that common is the batch's mode, not a code.

Neither is a column that every kept batch held on one value (`Reference.held_per_batch`: a period's month, year
or flag, constant within a batch by construction) while the batch holds one value too: that is the period's
value, new or not. A value new to a column the reference held constant gives no scale to be far outside of: it
is a new state (a flag switching on), not a code.

The heal cannot know the value that was replaced: the rows holding the sentinel are quarantined
(`params["value"]`), never filled in.

Closest calls, per value judged (every mass, and every placeholder-looking value or one code outside the bounds or
far outside the range, on fewer rows too): each rule's limits in their own terms (`_Judged`), each deciding where
the rest of its rule held. `sentinel_adjacent_window` sets how wide the reference's share near an edge is read,
which the call of `sentinel_near_factor` measures: it has no statistic of its own.
"""

from __future__ import annotations

import math
from typing import Iterator, Mapping

import numpy as np

from guard.checks.sentinels.runs import NO_RUN, Run, longest_run, runs_of, share_bound, stuck, time_order
from guard.checks.sentinels.zeros import check_new_zeros
from guard.context import GuardContext
from guard.findings import ClosestCall, Condition, Finding, make_finding, rule_calls, window_rows
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.registry import register
from guard.statistics import ks_distance, ks_noise, numeric_values, reference_share
from profiles.profile import ColumnProfile
from profiles.reference import Reference
from profiles.relations import resolution

__all__ = [
    "check_sentinels",
    "looks_like_placeholder",
]

_NUMERIC = ("number", "integer")


def looks_like_placeholder(value: float) -> bool:
    """0, -1, and the values people type for 'unknown': repeated nines or sevens (99, -999, 77777...)."""
    if value in (0.0, -1.0):
        return True
    if value != int(value) or abs(value) < 9:
        return False
    digits = str(abs(int(value)))
    return len(set(digits)) == 1 and digits[0] in "97"


@register("sentinels")
def check_sentinels(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot
    reference = ctx.reference_profile
    if reference is None:
        return
    order = time_order(ctx) if isinstance(ctx.reference, Reference) else None  # once, for every column
    judged: dict[str, np.ndarray] = {}  # each column's sampled values, as the rules below read them
    named: set[str] = set()
    for column in ctx.contract.columns:
        if column.logical_type not in _NUMERIC or column.primary_key or column.name not in ctx.snapshot.sample:
            continue
        known = reference.columns.get(column.name)
        if known is None or _the_periods_value(ctx, column.name):
            continue
        values = judged[column.name] = numeric_values(ctx.snapshot.sample[column.name])
        masses = _masses(values, column.minimum, column.maximum, known)
        yield from _closest_calls(ctx, column.name, known, values, masses, order)
        for value, count in masses:
            finding = _judge(ctx, column.name, known, value, count, values)
            if finding is not None:
                named.add(column.name)
                yield finding
    yield from check_new_zeros(ctx, judged, named)


def _the_periods_value(ctx: GuardContext, name: str) -> bool:
    """The batch holds one value of a column every kept batch held on one value: the period's, not a code."""
    assert ctx.snapshot is not None
    observed = ctx.snapshot.profile.columns.get(name)
    return isinstance(ctx.reference, Reference) and ctx.reference.holds_the_periods_value(name, observed)


def _masses(
    values: np.ndarray, low: float | None, high: float | None, reference: ColumnProfile
) -> list[tuple[float, int]]:
    """Values held by `policy.sentinel_min_rows` and `policy.sentinel_min_share` of the rows; and a placeholder-looking value
    outside the contract's bounds, or far outside the reference's range (by more than its width), however few rows
    hold it (a -9999 of a non-negative amount is no measurement: one among thirty days is a code; a converted 60.08 past a degC bound
    is a measurement in another unit, left to the units check). A signed quantity has no contract bound to be
    outside of: its history's range is the scale a code stands far outside of."""
    if not len(values):
        return []
    found, counts = np.unique(values, return_counts=True)
    keep = (counts >= POLICY.sentinel_min_rows) & (counts / len(values) >= POLICY.sentinel_min_share)
    for i in np.flatnonzero(_outside(found, low, high)):  # few or none: a clean batch holds no impossible value
        keep[i] |= looks_like_placeholder(float(found[i]))
    for i in np.flatnonzero(~keep):
        keep[i] = looks_like_placeholder(float(found[i])) and _far_outside(reference, float(found[i]))
    return [(float(v), int(n)) for v, n in zip(found[keep], counts[keep])]


def _judge(
    ctx: GuardContext, name: str, reference: ColumnProfile, value: float, count: int, values: np.ndarray
) -> Finding | None:
    known = reference_share(reference, value)
    if known is None:
        return None
    was, exact = known
    share = count / len(values)
    if _impossible(ctx, name, value):
        how = "impossible" if _one_code(values, value, *_contract_bounds(ctx, name)) else None
    elif was == 0.0 if exact else was <= ctx.policy.sentinel_new_share:
        how = "new" if _coded(reference, values, value, share) else None
    elif (
        looks_like_placeholder(value)
        and was < ctx.policy.sentinel_growth_base
        and share
        >= max(
            ctx.policy.sentinel_growth_factor * was + ctx.policy.sentinel_growth_margin,
            _batch_high(ctx, name, value) + ctx.policy.sentinel_growth_margin,
        )
    ):
        how = "grown"
    else:
        how = None
    if how is None and _frozen(ctx, name, value, share, (was, share_bound(reference, was, exact)), len(values)):
        how = "frozen"
    return None if how is None else _finding(ctx, name, value, share, was, count, len(values), how)


def _frozen(
    ctx: GuardContext, name: str, value: float, share: float, reference: tuple[float, float], rows: int
) -> bool:
    """Nearly every row, or half of them in one run that chance does not make, hold one value the reference held
    rarely (`reference`: its share there, and the most it may be by that evidence, `share_bound`), in a column where
    no batch that passed held any one value on more than `policy.frozen_batch_high` of its rows: a feed stuck on its
    last reading (a plausible value, so no other rule of this check sees it)."""
    was, bound = reference
    if (
        not isinstance(ctx.reference, Reference)
        or rows < ctx.policy.frozen_rows
        or was >= ctx.policy.sentinel_growth_base
    ):
        return False
    if share < ctx.policy.frozen_share and (
        share < ctx.policy.frozen_run_share  # no run can hold more than the value's share: none read
        or not all(c.holds for c in stuck(ctx.policy, share, longest_run(ctx, name, value), bound))
    ):
        return False
    highs = [s.point_share for s in ctx.reference.variation(name)]
    return bool(highs) and None not in highs and max(h for h in highs if h is not None) <= ctx.policy.frozen_batch_high


def _contract_bounds(ctx: GuardContext, name: str) -> tuple[float | None, float | None]:
    assert ctx.contract is not None
    column = ctx.contract.column(name)
    return (column.minimum, column.maximum) if column is not None else (None, None)


def _impossible(ctx: GuardContext, name: str, value: float) -> bool:
    low, high = _contract_bounds(ctx, name)
    return (low is not None and value < low) or (high is not None and value > high)


def _one_code(values: np.ndarray, value: float, low: float | None, high: float | None) -> bool:
    """The mass holds at least `policy.sentinel_one_code` of the values outside [low, high]: one code, not a spread of values."""
    return int((values == value).sum()) >= POLICY.sentinel_one_code * int(_outside(values, low, high).sum())


def _outside(values: np.ndarray, low: float | None, high: float | None) -> np.ndarray:
    """Per value: below `low` or above `high` (a bound that is None does not bind)."""
    outside = np.zeros(len(values), dtype=bool)
    if low is not None:
        outside |= values < low
    if high is not None:
        outside |= values > high
    return outside


def _coded(reference: ColumnProfile, values: np.ndarray, value: float, share: float) -> bool:
    """A new mass that is a code: a placeholder-looking value not merely continuing the reference's edge (calm
    hours at 0 m/s beside many at 0.5), or one far outside the range with the other values in place."""
    if looks_like_placeholder(value):
        near = _near_share(reference, values, value)
        return (
            near is not None
            and share >= POLICY.sentinel_near_factor * near + POLICY.sentinel_near_margin
            and _stands_out(reference, values, value)
        )
    return _far_outside(reference, value) and _rest_in_place(reference, values, value)


def _stands_out(reference: ColumnProfile, values: np.ndarray, value: float) -> bool:
    """The mass holds `policy.sentinel_near_factor` times the rows of each of the batch's `policy.sentinel_neighbours` nearest other values on either
    side within `policy.sentinel_neighbour_reach` of the reference's range width (a code far from every measurement stands out)."""
    width = (reference.maximum or 0.0) - (reference.minimum or 0.0)
    found, counts = np.unique(
        values[np.abs(values - value) <= POLICY.sentinel_neighbour_reach * width], return_counts=True
    )
    at = int(np.searchsorted(found, value))
    others = np.concatenate(
        [counts[max(at - POLICY.sentinel_neighbours, 0) : at], counts[at + 1 : at + 1 + POLICY.sentinel_neighbours]]
    )
    return not len(others) or int(counts[at]) >= POLICY.sentinel_near_factor * int(others.max())


def _near_share(reference: ColumnProfile, values: np.ndarray, value: float) -> float | None:
    """The reference's share within reach of a value at (or just past) its edge; 0 for a value far from it."""
    low, high = reference.minimum, reference.maximum
    if low is None or high is None:
        return None
    width = max(high - low, 0.0)
    step = 2 * resolution(values) if reference.logical_type == "number" else 1.0
    nearest = min(max(value, low), high)
    distance = abs(value - nearest)
    if distance > max(POLICY.sentinel_adjacent * width, step):
        return 0.0
    reach = max(distance, POLICY.sentinel_adjacent_window * width, step)
    if reference.sketch is not None and reference.sketch.n:
        ranks = reference.sketch.ranks([nearest - reach, nearest + reach])
        return float(ranks[1] - ranks[0])
    points = [(q, v) for q, v in reference.quantiles]
    if not points:
        return None
    levels, cuts = zip(*points)
    return float(np.interp(nearest + reach, cuts, levels) - np.interp(nearest - reach, cuts, levels))


def _far_outside(reference: ColumnProfile, value: float) -> bool:
    """Beyond the reference's range by more than the range's own width: no natural record, a code (a reference
    that held one value has no width to be beyond)."""
    low, high = reference.minimum, reference.maximum
    if low is None or high is None:
        return False
    width = high - low
    return width > 0 and (value < low - width or value > high + width)


def _rest_in_place(reference: ColumnProfile, values: np.ndarray, value: float) -> bool:
    """The values other than the mass still look like the reference: a code was written into some rows, the
    column as a whole did not move (a unit change carries a clipped minimum far outside too)."""
    rest = values[values != value]
    distance = ks_distance(rest, reference)
    if distance is None or distance > max(POLICY.sentinel_rest_distance, ks_noise(len(rest))):
        return False
    assert reference.minimum is not None and reference.maximum is not None
    outside = int(((values < reference.minimum) | (values > reference.maximum)).sum())
    return (
        int((values == value).sum()) >= POLICY.sentinel_one_code * outside
    )  # one code, not a spread of impossible values


# --- closest calls ---------------------------------------------------------------------------------------------


def _closest_calls(
    ctx: GuardContext,
    name: str,
    reference: ColumnProfile,
    values: np.ndarray,
    masses: list[tuple[float, int]],
    order: np.ndarray | None,
) -> Iterator[ClosestCall]:
    """The limits each rule of this check compared, per value it judged (a mass) and per value it would judge were
    the point-mass limits lower: a placeholder-looking value, or one code of the values outside the contract's
    bounds or the reference's range (`sentinel_one_code` of them: a spread of such values holds none), on fewer
    rows. Each call decides where the rest of its rule held (`_Judged`)."""
    assert ctx.contract is not None
    low, high = _contract_bounds(ctx, name)
    if not len(values):
        return
    found, counts = np.unique(values, return_counts=True)
    judged = dict(masses)
    impossible = int(_outside(values, low, high).sum())
    beyond = (
        int(((values < reference.minimum) | (values > reference.maximum)).sum())
        if reference.minimum is not None and reference.maximum is not None
        else 0
    )
    one_code = ctx.policy.sentinel_one_code
    whole = (found == np.round(found)) & ((np.abs(found) >= 9) | (found == 0) | (found == -1))  # may look like one
    coded = _outside(found, low, high) & (counts >= one_code * impossible)
    if reference.minimum is not None and reference.maximum is not None:
        width = reference.maximum - reference.minimum
        far = (found < reference.minimum - width) | (found > reference.maximum + width)
        coded |= far & (width > 0) & (counts >= one_code * beyond)
    for i in np.flatnonzero(coded | whole):
        value, count = float(found[i]), int(counts[i])
        if value not in judged and (coded[i] or looks_like_placeholder(value)):
            judged[value] = count
    runs = runs_of(ctx, name, list(judged), order) if isinstance(ctx.reference, Reference) and len(values) else {}
    for value, count in judged.items():
        yield from _Judged(ctx, name, reference, values, value, count, low, high, runs, (found, counts)).calls()


def _call(name: str, condition: Condition, decides: bool) -> ClosestCall:
    return ClosestCall(condition.threshold, name, condition.statistic, condition.limit, condition.above, decides)


class _Judged:
    """One value of a column as `_judge` judges it, in the terms of each policy field it compares: a rule (impossible,
    new, grown, frozen) blocks where all its conditions hold, so each call decides where the rest of its rule held."""

    def __init__(
        self,
        ctx: GuardContext,
        name: str,
        reference: ColumnProfile,
        values: np.ndarray,
        value: float,
        count: int,
        low: float | None,
        high: float | None,
        runs: Mapping[float, Run],
        found: tuple[np.ndarray, np.ndarray],
    ) -> None:
        self.ctx, self.name, self.reference, self.values = ctx, name, reference, values
        self.value, self.count, self.low, self.high, self.runs = value, count, low, high, runs
        self.share = count / len(values)
        self.placeholder = looks_like_placeholder(value)
        self.found = found
        self._near: tuple[float, float, float] | None = None

    def calls(self) -> list[ClosestCall]:
        known = reference_share(self.reference, self.value)
        if known is None:
            return []
        was, exact = known
        policy, gate = self.ctx.policy, self._gate()
        calls: list[ClosestCall] = []
        fired = False  # a rule before the frozen one names the value
        if _impossible(self.ctx, self.name, self.value):
            outside = int(_outside(self.values, self.low, self.high).sum())
            one = Condition(
                "sentinel_one_code", self.count / outside, policy.sentinel_one_code, self._one_code(outside)
            )
            calls += rule_calls(self.name, *gate, one)
            fired = all(c.holds for c in [*gate, one])
        else:
            new = was == 0.0 if exact else was <= policy.sentinel_new_share
            if new or not exact:  # the reference held it exactly: not new at any limit
                news = [] if exact else [Condition("sentinel_new_share", was, policy.sentinel_new_share, new, False)]
                coded, stands, when = self._coded()
                rule = [*gate, *news, *coded]
                calls += rule_calls(self.name, *rule, when=when and all(c.holds for c in stands))
                calls += [_call(self.name, c, when and all(o.holds for o in rule)) for c in stands]
                calls += self._adjacent([*gate, *news], when)
                fired = new and when and all(c.holds for c in [*rule, *stands])
            if not new and self.placeholder:
                rule = [*gate, *self._grown(was)]
                calls += rule_calls(self.name, *rule)
                fired = all(c.holds for c in rule)
        return calls + self._frozen(gate, (was, share_bound(self.reference, was, exact)), fired)

    def _gate(self) -> list[Condition]:
        """A value counts as a point mass on `policy.sentinel_min_rows` rows and `policy.sentinel_min_share` of them,
        unless it is placeholder-looking and outside the contract's bounds or far outside the reference's range."""
        kept = self.placeholder and (
            bool(_outside(np.array([self.value]), self.low, self.high)[0]) or _far_outside(self.reference, self.value)
        )
        if kept:
            return []
        policy = self.ctx.policy
        return [
            Condition(
                "sentinel_min_rows", self.count, policy.sentinel_min_rows, self.count >= policy.sentinel_min_rows
            ),
            Condition(
                "sentinel_min_share", self.share, policy.sentinel_min_share, self.share >= policy.sentinel_min_share
            ),
        ]

    def _one_code(self, outside: int) -> bool:
        return self.count >= self.ctx.policy.sentinel_one_code * outside

    def _coded(self) -> tuple[list[Condition], list[Condition], bool]:
        """The new rule's conditions, those of a code's stand-out from its neighbours, and its gates that are no
        policy field's (`_coded`). For a placeholder-looking value: its share over the reference's near its edge
        (`sentinel_near_factor` times it plus `sentinel_near_margin`), and, standing out, its rows over the most of
        its `sentinel_neighbours` nearest values each side within `sentinel_neighbour_reach` of the reference's
        width (`sentinel_near_factor` times them), read three ways, each the one its field moves (the three hold
        together: each decides where the rest of the rule held). Else: far outside the reference's range (a gate)
        with the rest of the values in place (`sentinel_rest_distance`) and one code (`sentinel_one_code`)."""
        policy = self.ctx.policy
        if not self.placeholder:
            if not _far_outside(self.reference, self.value):
                return [], [], False  # the gate no field sets: the rule is not in play
            rest = self.values[self.values != self.value]
            distance = ks_distance(rest, self.reference)
            low, high = self.reference.minimum, self.reference.maximum
            if distance is None or low is None or high is None:
                return [], [], False
            placed = distance <= max(policy.sentinel_rest_distance, ks_noise(len(rest)))
            outside = int(((self.values < low) | (self.values > high)).sum())
            held = self.count / outside if outside else math.inf
            conditions = [
                Condition("sentinel_rest_distance", distance, policy.sentinel_rest_distance, placed, False),
                Condition("sentinel_one_code", held, policy.sentinel_one_code, self._one_code(outside)),
            ]
            return conditions, [], True
        near = _near_share(self.reference, self.values, self.value)
        if near is None:
            return [], [], False
        factor, margin = policy.sentinel_near_factor, policy.sentinel_near_margin
        over = self.share >= factor * near + margin
        outweighs, neighbours, reach = self._neighbourhood()
        count, reach_limit = policy.sentinel_neighbours, policy.sentinel_neighbour_reach
        return (
            [
                Condition("sentinel_near_factor", (self.share - margin) / near if near else math.inf, factor, over),
                Condition("sentinel_near_margin", self.share - factor * near, margin, over),
            ],
            [
                Condition("sentinel_near_factor", outweighs, factor, outweighs >= factor),
                Condition("sentinel_neighbours", neighbours, count, neighbours >= count),
                Condition("sentinel_neighbour_reach", reach, reach_limit, reach > reach_limit),
            ],
            True,
        )

    def _neighbourhood(self) -> tuple[float, float, float]:
        """(the mass's rows over the most of its `sentinel_neighbours` nearest values each side within
        `sentinel_neighbour_reach` of the reference's width, inf for none: `_stands_out`'s reading; how many nearest
        values within that reach each side it outweighs `sentinel_near_factor` times before one it does not, inf for
        all; the nearest of the `sentinel_neighbours` nearest each side it does not outweigh, in reference widths,
        inf for none)."""
        if self._near is not None:
            return self._near
        policy = self.ctx.policy
        width = (self.reference.maximum or 0.0) - (self.reference.minimum or 0.0)
        found, counts = self.found
        at = int(np.searchsorted(found, self.value))
        others: list[int] = []
        runs: list[float] = []
        nearest: list[float] = []
        for side, held in ((found[:at][::-1], counts[:at][::-1]), (found[at + 1 :], counts[at + 1 :])):
            distance = np.abs(side - self.value)
            within = held[distance <= policy.sentinel_neighbour_reach * width]
            others += within[: policy.sentinel_neighbours].tolist()
            heavy = self.count < policy.sentinel_near_factor * within
            runs.append(float(np.argmax(heavy)) if heavy.any() else math.inf)
            first = self.count < policy.sentinel_near_factor * held[: policy.sentinel_neighbours]
            if width > 0:
                nearest += (distance[: policy.sentinel_neighbours][first] / width).tolist()
            elif first.any():
                nearest.append(math.inf)
        outweighs = self.count / max(others) if others else math.inf
        self._near = (outweighs, min(runs), min(nearest, default=math.inf))
        return self._near

    def _adjacent(self, gate: list[Condition], when: bool) -> list[ClosestCall]:
        """A placeholder-looking new value's distance from the reference's range, in its widths, against
        `policy.sentinel_adjacent`: beyond it (and one step) the reference's share near the edge counts as none, so
        the value is a code on `sentinel_near_margin` of the rows; deciding where it then is one."""
        low, high = self.reference.minimum, self.reference.maximum
        if not self.placeholder or low is None or high is None:
            return []
        policy = self.ctx.policy
        width = max(high - low, 0.0)
        step = 2 * resolution(self.values) if self.reference.logical_type == "number" else 1.0
        distance = abs(self.value - min(max(self.value, low), high))
        apart = distance / width if width > 0 else (math.inf if distance > 0 else 0.0)
        outweighs, neighbours, reach = self._neighbourhood()
        stands = (
            outweighs >= policy.sentinel_near_factor
            and neighbours >= policy.sentinel_neighbours
            and reach > policy.sentinel_neighbour_reach
        )
        decides = (
            when
            and all(c.holds for c in gate)
            and distance > step
            and self.share >= policy.sentinel_near_margin
            and stands
        )
        return [ClosestCall("sentinel_adjacent", self.name, apart, policy.sentinel_adjacent, decides=decides)]

    def _grown(self, was: float) -> list[Condition]:
        """A placeholder-looking value the reference held rarely (under `policy.sentinel_growth_base`) now holding
        `sentinel_growth_factor` times its share plus `sentinel_growth_margin`, and the margin over any one batch."""
        policy = self.ctx.policy
        factor, margin = policy.sentinel_growth_factor, policy.sentinel_growth_margin
        batch = _batch_high(self.ctx, self.name, self.value)
        grew = self.share >= factor * was + margin
        return [
            Condition(
                "sentinel_growth_base", was, policy.sentinel_growth_base, was < policy.sentinel_growth_base, False
            ),
            Condition("sentinel_growth_factor", (self.share - margin) / was if was else math.inf, factor, grew),
            Condition(
                "sentinel_growth_margin",
                self.share - max(factor * was, batch),
                margin,
                grew and self.share >= batch + margin,
            ),
        ]

    def _frozen(self, gate: list[Condition], reference: tuple[float, float], fired: bool) -> list[ClosestCall]:
        """Where no other rule named the value, against a batch reference: the sampled values against
        `policy.frozen_rows`, the reference's share under `sentinel_growth_base`, the share against
        `policy.frozen_share` or the longest run against `policy.frozen_run_share` and its chance against
        `policy.frozen_run_chance` (`stuck`), and the highest share any kept batch's most frequent value held against
        `policy.frozen_batch_high`. The share and the run are alternatives: each decides where the other does not
        hold. `reference`: the value's share there and the most it may be by that evidence (`share_bound`)."""
        if fired or not isinstance(self.ctx.reference, Reference):
            return []
        highs = [s.point_share for s in self.ctx.reference.variation(self.name)]
        if not highs or None in highs:
            return []
        policy = self.ctx.policy
        was, bound = reference
        batch_high = max(h for h in highs if h is not None)
        rows = len(self.values)
        common = [
            *gate,
            Condition("frozen_rows", rows, policy.frozen_rows, rows >= policy.frozen_rows),
            Condition(
                "sentinel_growth_base", was, policy.sentinel_growth_base, was < policy.sentinel_growth_base, False
            ),
            Condition(
                "frozen_batch_high", batch_high, policy.frozen_batch_high, batch_high <= policy.frozen_batch_high, False
            ),
        ]
        whole = Condition("frozen_share", self.share, policy.frozen_share, self.share >= policy.frozen_share)
        run = stuck(policy, self.share, self.runs.get(self.value, NO_RUN), bound)
        held = all(c.holds for c in run)
        calls = rule_calls(self.name, *common, whole, when=not held)[-1:]
        calls += rule_calls(self.name, *common, *run, when=not whole.holds)[-len(run) :]
        either = rule_calls(self.name, *common, when=whole.holds or held)
        return calls + either


def _batch_high(ctx: GuardContext, name: str, value: float) -> float:
    """The highest share of `value` any one reference batch showed, where the reference keeps it; and never less
    than the highest share any reference batch's most frequent value held, whichever value it was: a column whose
    batches each have a mode of their own (the most common age moving from week to week) holds a value that common
    as its mode, not as a code (0 against a bare reference)."""
    if not isinstance(ctx.reference, Reference):
        return 0.0
    shares = []
    for summary in ctx.reference.variation(name):  # the batch's mode share covers `value` where it is the mode
        if value == 0 and summary.zero_share is not None:
            shares.append(summary.zero_share)
        if summary.point_share is not None:
            shares.append(summary.point_share)
    return max(shares, default=0.0)


def _finding(
    ctx: GuardContext, name: str, value: float, share: float, was: float, count: int, rows: int, how: str
) -> Finding:
    assert ctx.snapshot is not None
    shown = int(value) if value == int(value) else value
    estimated = round(share * ctx.snapshot.profile.row_count)
    what = "a value the reference never held" if how == "new" else f"{was:.1%} in the reference"
    cause = (
        "a feed stuck on one reading (no batch that passed held any one value on more than "
        f"{ctx.policy.frozen_batch_high:.0%} of its rows)"
        if how == "frozen"
        else "a placeholder for 'unknown'"
    )
    return make_finding(
        FindingKind.SENTINEL,
        ctx.dataset_urn,
        name,
        observed={"value": shown, "share": round(share, 6)},
        expected={"value": shown, "share": round(was, 6)},
        playbook="quarantine_rows",
        value=shown,
        share=round(share, 6),
        reference_share=round(was, 6),
        how=how,
        sampled_rows=count,
        estimated_rows=estimated,
        rows=window_rows(ctx),
        message=f"{name!r} holds {shown} on {share:.1%} of rows ({count} of {rows} sampled; {what}): {cause}, not "
        "a measurement; its rows are quarantined, not filled in",
    )
