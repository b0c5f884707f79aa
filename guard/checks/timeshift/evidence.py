"""What anchors a timestamp column to the world (`guard.checks.timeshift`): its rows per UTC hour against the
reference's (counts), its readings' daily cycle against the hours it should peak at (diurnal), and its lag behind
another timestamp column of the same rows (lag).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import AbstractSet, Mapping

import numpy as np

from guard.policy import DEFAULT as POLICY
from guard.policy import Policy
from guard.statistics import HOURS, on_one_hour, signed
from profiles.relations import Diurnal
from profiles.sketches import QuantileSketch

_HOUR_MS = 3_600_000


MAX_WEIGHT = 100.0  # a column's weight in the diurnal score, capped


_LAG_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


@dataclass(frozen=True)
class Evidence:
    """What one source says of a column: moved by `offset` hours (0: not moved), with its scores."""

    source: str
    offset: int
    at_zero: float
    at_offset: float
    exact: bool = True  # the offset is pinned to the hour (not merely within one)

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.source,
            "offset_hours": self.offset,
            "score_unshifted": round(self.at_zero, 4),
            "score_shifted": round(self.at_offset, 4),
        }


@functools.lru_cache(maxsize=1024)
def hour_distances(reference: tuple[int, ...], batch: tuple[int, ...]) -> np.ndarray:
    """The total variation between the batch's share of rows per hour and the reference's rolled by k, for
    k = 0..23. It depends on no threshold, so a rule judged again with one threshold moved reads it once."""
    p, q = np.asarray(reference, float) / sum(reference), np.asarray(batch, float) / sum(batch)
    distances = np.array([float(np.abs(q - np.roll(p, k)).sum() / 2) for k in range(HOURS)])
    distances.flags.writeable = False
    return distances


def count_shift(
    reference: tuple[int, ...] | None, batch: tuple[int, ...] | None, *, policy: Policy = POLICY
) -> Evidence | None:
    """The offset k with batch[h] ~ reference[h - k], from rows per hour; None when it cannot say.

    A reading is taken where it beats the readings it could be confused with: moved by k where the batch matches
    the reference rolled by k, beats the unshifted one by `policy.shift_count_gain` and matches no roll two hours or
    more from k (a day repeated at 00:00 and 12:00 moved five hours reads +5 or -7 alike: nothing is said); not
    moved where the unshifted one beats every shift that would be named (`policy.min_shift_hours` and more) by the
    gain. Either is pinned to the hour where it beats the rolls an hour either side by the gain too. So the
    reference need not be unlike each of its own shifts: a business's broad day looks like itself an hour later,
    never five hours later, and a move of five hours is plain where the hour it starts on is not (within an hour
    only). A flat day beats nothing and says nothing."""
    if reference is None or batch is None or not sum(reference):
        return None
    if sum(batch) < (
        policy.shift_min_relation_rows if on_one_hour(reference, policy=policy) else policy.shift_min_count_rows
    ):
        return None
    distances = hour_distances(reference, batch)
    best = int(np.argmin(distances))
    beside = min(distances[(best - 1) % HOURS], distances[(best + 1) % HOURS])
    pinned = bool(beside - distances[best] >= policy.shift_count_gain)  # an hour off matches far worse
    far = [k for k in range(HOURS) if abs(signed(k - best)) >= policy.min_shift_hours]  # two hours or more away
    if (
        best
        and distances[best] <= policy.shift_count_match
        and distances[0] - distances[best] >= policy.shift_count_gain
        and distances[far].min() > policy.shift_count_match
    ):
        return Evidence("hour_counts", signed(best), float(distances[0]), float(distances[best]), pinned)
    named = [k for k in range(1, HOURS) if abs(signed(k)) >= policy.min_shift_hours]
    if (
        distances[0] <= policy.shift_count_match + policy.shift_count_gain
        and distances[named].min() - distances[0] >= policy.shift_count_gain
    ):
        return Evidence("hour_counts", 0, float(distances[0]), float(distances[0]), not best and pinned)
    return None


@functools.lru_cache(maxsize=1024)
def _correlations(reference: Diurnal, batch: Diurnal) -> tuple[np.ndarray, np.ndarray]:
    """The rolled correlations (NaN where a side is constant) and the hours each k's correlation is over. They
    depend on no threshold, so a rule judged again with one threshold moved (the rule's closest calls) reads them once."""
    rolled = np.vstack([np.roll(reference.means(), k) for k in range(HOURS)])  # row k: reference[h - k]
    seen = np.broadcast_to(batch.means(), rolled.shape)
    both = ~np.isnan(rolled) & ~np.isnan(seen)
    count = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        x, y = np.where(both, rolled, 0.0), np.where(both, seen, 0.0)
        dx = np.where(both, x - (x.sum(axis=1) / count)[:, None], 0.0)
        dy = np.where(both, y - (y.sum(axis=1) / count)[:, None], 0.0)
        scores = (dx * dy).sum(axis=1) / np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
    scores[~np.isfinite(scores)] = np.nan
    scores.flags.writeable = count.flags.writeable = False
    return scores, count


@functools.lru_cache(maxsize=1024)
def _noise(profile: Diurnal) -> float:
    """The variance of one hour's mean: within-hour variance over the rows an hour holds."""
    counts = np.asarray(profile.counts, float)
    covered = counts > 0
    return profile.within_variance() / float(np.mean(counts[covered])) if covered.any() else np.nan


@functools.lru_cache(maxsize=1024)
def _signal_to_noise(reference: Diurnal, batch: Diurnal) -> float:
    """How far the reference's hour-of-day pattern stands out of noise: the variance of its hourly means over
    the noise of an hourly mean, in the reference and in the batch (the smaller of the two). Before its gate
    (`DiurnalReadings.signal_to_noise`): it depends on no threshold, so a rule judged again reads it once."""
    between = float(np.nanvar(reference.means()))
    ratios = [
        between / noise if noise > 0 else (np.inf if between > 0 else 0.0)
        for noise in (_noise(reference), _noise(batch))
        if not np.isnan(noise)
    ]
    return min(ratios) if ratios else 0.0


def diurnal_evidence(scored: tuple[np.ndarray, str] | None, policy: Policy) -> Evidence | None:
    """The offset k whose rolled reference hour-of-day means the batch's match (`scored`: correlations averaged over
    the columns whose pattern stands out of noise, weighted by how far it does: a sharp pattern, one that turns on and
    off at dawn and dusk, places the offset better than a broad one); None when no column has one."""
    if scored is None:
        return None
    score, source = scored
    best = int(np.argmax(score))
    if best and score[best] >= policy.shift_diurnal_match and score[best] - score[0] >= policy.shift_diurnal_gain:
        return Evidence(source, signed(best), float(score[0]), float(score[best]), exact=False)
    if score[0] >= policy.shift_diurnal_match and best in (0, 1, HOURS - 1):
        return Evidence(source, 0, float(score[0]), float(score[0]))
    return None


def diurnal_scores(
    reference: Mapping[str, Diurnal],
    batch: Mapping[str, Diurnal],
    skip: AbstractSet[str] = frozenset(),
    *,
    policy: Policy = POLICY,
) -> tuple[np.ndarray, str] | None:
    """The weighted mean correlation of the batch's hour-of-day means with the reference's rolled by k, for
    k = 0..23, and the source's name; None when no column's pattern stands out of noise."""
    return DiurnalReadings.of(reference, batch, skip).scored(policy)


@dataclass(frozen=True)
class DiurnalReadings:
    """What a batch's hour-of-day means say against the reference's before any threshold, per column (by name): the
    hours the batch holds rows in, the hours the reference's means cover, the pattern's signal over noise, and the
    correlations rolled by k = 0..23 (NaN where a side is constant) with the hours each is over. `scored` applies a
    policy to them in a few array operations, so the rule judged again with one threshold moved (the rule's closest calls,
    once per threshold and column) costs as much at 5,000 columns as the rest of the check."""

    covered: np.ndarray  # (columns,), sorted by name
    held: np.ndarray  # (columns,)
    weights: np.ndarray  # (columns,): `_signal_to_noise`, 0 where the reference's means cover no hour
    correlations: np.ndarray  # (columns, HOURS)
    overlaps: np.ndarray  # (columns, HOURS)

    @classmethod
    def of(
        cls, reference: Mapping[str, Diurnal], batch: Mapping[str, Diurnal], skip: AbstractSet[str] = frozenset()
    ) -> DiurnalReadings:
        names = sorted(set(reference) & set(batch) - skip)
        held = [int(np.sum(~np.isnan(reference[name].means()))) for name in names]
        pairs = [_correlations(reference[name], batch[name]) for name in names]
        return cls(
            np.array([sum(1 for n in batch[name].counts if n > 0) for name in names], dtype=np.int64),
            np.array(held, dtype=np.int64),
            np.array([_signal_to_noise(reference[x], batch[x]) if h else 0.0 for x, h in zip(names, held)], float),
            np.vstack([c for c, _ in pairs]) if pairs else np.empty((0, HOURS)),
            np.vstack([o for _, o in pairs]) if pairs else np.empty((0, HOURS), dtype=np.int64),
        )

    def signal_to_noise(self, policy: Policy = POLICY) -> np.ndarray:
        """Each column's pattern over noise (`_signal_to_noise`), 0 where the reference's means cover fewer than
        `policy.shift_min_diurnal_hours` hours."""
        return np.where(self.held >= policy.shift_min_diurnal_hours, self.weights, 0.0)

    def scored(self, policy: Policy = POLICY) -> tuple[np.ndarray, str] | None:
        """`diurnal_scores` at `policy`: the columns with rows in `policy.shift_min_diurnal_hours` hours, a pattern
        over `policy.shift_min_signal_to_noise` and every roll over that many hours, weighted (capped); None if none."""
        least = policy.shift_min_diurnal_hours
        weights = self.signal_to_noise(policy)
        complete = ~(np.isnan(self.correlations) | (self.overlaps < least)).any(axis=1)
        used = (self.covered >= least) & (weights >= policy.shift_min_signal_to_noise) & complete
        if not used.any():
            return None
        capped = np.minimum(weights[used], MAX_WEIGHT)
        return np.average(self.correlations[used], axis=0, weights=capped), f"diurnal({int(used.sum())} columns)"


def lag_shift(reference: QuantileSketch, batch: QuantileSketch, *, policy: Policy = POLICY) -> int | None:
    """Whole hours every quantile of the lag b - a moved by (0: not moved); None when not a uniform move."""
    if reference.n < policy.shift_min_relation_rows or batch.n < policy.shift_min_relation_rows:
        return None
    ref = np.asarray(reference.quantiles(_LAG_QUANTILES), float) / _HOUR_MS
    seen = np.asarray(batch.quantiles(_LAG_QUANTILES), float) / _HOUR_MS
    moves = seen - ref
    d = int(round(float(np.median(moves))))
    spread = float(ref[-2] - ref[1])  # the reference's interquartile lag, hours
    tolerance = 0.1 + 0.1 * spread
    if np.all(np.abs(moves - d) <= tolerance) and abs(d) >= 1:
        return d
    return 0 if np.all(np.abs(moves) <= max(tolerance, 0.5)) else None
