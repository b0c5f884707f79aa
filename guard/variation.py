"""How much a column naturally varies from one batch to the next, and how far a new batch sits from that.

A column is summarised per batch by three robust statistics, each read from the batch's KLL sketch:

- *location*: the median of its **core** (its values other than the reference's point mass, if it has
  one), in units of the reference batches' typical core spread;
- *spread*: the log of the core's interquartile range (or of its 10-90% range where quartiles tie);
- *atom*: the share of values sitting on the reference's point mass (zeros of a zero-inflated column,
  16,100 m of a visibility column): only when the merged reference has a value holding ATOM_SHARE or
  more of its rows.

The **band** of one statistic is centred on its mean over the reference batches and reaches three
standard deviations of natural variation: the between-batch variance (what the batches' spread shows
beyond their own sampling noise, estimated from each batch's size: a random-effects reading) plus the
new batch's sampling variance; never narrower than the farthest reference batch sat, plus the sketches'
rank error. A slow cycle moving on stays inside (its months' spread is between-batch variance); a monthly
statistic of ten non-zero values is mostly sampling noise, and is not mistaken for natural variation. `Band.distance(x)` is |x - centre| / half-width: up to 1 inside the band.
A batch's distance is the largest over its statistics.

Under a hypothesis "this batch is in unit u", the batch is first converted back (x -> (x - offset) /
scale) and then summarised the same way: a unit explains a batch when converting it back brings it
inside the natural variation it had left. Pure functions; nothing here reads a file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from guard.policy import DEFAULT as POLICY
from guard.units import is_ratio_scale
from profiles.cores import ATOM_SHARE, CORE_LEVELS, MIN_CORE, Core, atom_of, core, sketched, weighted_items
from profiles.profile import ColumnProfile
from profiles.reference import Reference
from profiles.sketches import KLL_RANK_ERROR, QuantileSketch

__all__ = [
    "Natural",
    "Core",
    "Band",
    "Bands",
    "ATOM_SHARE",
    "MIN_CORE",
    "CORE_LEVELS",
    "atom_of",
    "core",
    "weighted_items",
    "bands",
    "distance",
    "jump",
    "sketched",
    "shape",
    "shape_distance",
]

_MEDIAN_SE = 0.93  # SE of a median in IQR units: 1.2533 sigma / sqrt(n), sigma = IQR / 1.349
_LOG_IQR_SE = 1.17  # SE of log(IQR): sqrt(2.474) sigma / 1.349 sigma / sqrt(n) for a normal sample
_SKETCH_LOCATION = 2 * KLL_RANK_ERROR / 0.538  # both medians' rank error, in IQR units: density 0.538/IQR (normal)
_SKETCH_LOG_SPREAD = 0.06  # both quartiles off by the rank error: relative error of an IQR, normal case
_SKETCH_SHARE = 2 * 0.0165  # the PMF error of both sketches (DataSketches: 1.65% at k=200)


@dataclass(frozen=True)
class Band:
    """The natural range of one statistic: its centre and half-width (the noise floor included)."""

    name: str
    centre: float
    half: float

    def distance(self, value: float) -> float:
        return abs(value - self.centre) / self.half if self.half > 0 else (0.0 if value == self.centre else math.inf)


def _band(
    name: str, history: Sequence[tuple[float, float]], se_new: float, extra: float, shorter: float = 1.0
) -> Band | None:
    """A band from (statistic, its standard error) per reference batch, for a new batch whose statistic has
    standard error `se_new`: a random-effects reading (DerSimonian-Laird) of the batches. Their spread
    is part sampling noise (known from each batch's size) and part true between-batch variation, so
    var_between = max(0, var(x_i) - mean(se_i^2)), and the new batch may sit NOISE_SIGMAS standard
    deviations of (var_between + se_new^2) from their mean; never less than the farthest reference
    batch did (a batch like a past one is natural). `extra` adds the sketches' rank error.

    `shorter`: how many times longer (in time and rows) the reference batches are than the new one. Rows
    in time are not independent (an hour is like the hour before it; a wet week is wet all week), so a
    week varies more than 1/sqrt(rows) says; how much more the monthly batches cannot tell apart from a
    slow cycle. The bound taken: all of var_between is such noise, which averages down with the span, so a
    batch `shorter` times shorter may vary `shorter` times as much (var_between * shorter); the farthest
    reference batch's distance widens by sqrt(shorter) alike."""
    if not history:
        return None
    values = np.array([x for x, _ in history])
    centre = float(values.mean())
    between = 0.0
    if len(values) > 1:
        between = max(0.0, float(values.var(ddof=1)) - float(np.mean([se * se for _, se in history])))
    farthest = float(np.abs(values - centre).max()) * math.sqrt(shorter)
    half = max(POLICY.band_sigmas * math.sqrt(between * shorter + se_new * se_new), farthest) + extra
    return Band(name, centre, half)


def _jump(
    history: Sequence[tuple[float, float]], se_new: float, extra: float, shorter: float = 1.0
) -> tuple[Band, float] | None:
    """The band of the step from the newest reference batch to the next (consecutive differences of the
    statistic, their standard errors combined), and the newest batch's value. Slow cycles move by steps;
    a unit change is a jump no step came near."""
    if len(history) < 3:
        return None  # fewer than two steps: no variation of steps to judge a jump by
    steps = [(b - a, math.hypot(sa, sb)) for (a, sa), (b, sb) in zip(history, history[1:])]
    band = _band("jump", steps, math.hypot(se_new, history[-1][1]), extra, shorter)
    return (band, history[-1][0]) if band is not None else None


@dataclass(frozen=True)
class Bands:
    """The bands of one column, and how its statistics are measured (the unit of location, which spread)."""

    location: Band | None
    spread: Band | None
    atom: Band | None
    atom_value: float | None
    typical_spread: float | None
    wide: bool  # spread measured as the 10-90% range (the quartiles of some batch tie)
    log_location: bool = False  # location as log(median): a ratio-scale quantity whose core stays positive
    jumps: Mapping[str, tuple[Band, float]] = field(default_factory=dict)  # statistic -> (step band, newest value)

    def statistics(self, batch: Core) -> dict[str, float]:
        """The batch's statistics that have a band to be judged against."""
        found: dict[str, float] = {}
        if self.location is not None and self.typical_spread and batch.median is not None:
            if not self.log_location:
                found["location"] = batch.median / self.typical_spread
            else:  # a positive quantity whose median is not positive is as far as it gets
                found["location"] = math.log(batch.median) if batch.median > 0 else -math.inf
        spread = batch.spread(self.wide)
        if self.spread is not None and spread:
            found["spread"] = math.log(spread)
        if self.atom is not None and batch.atom_share is not None:
            found["atom"] = batch.atom_share
        return found

    def distances(self, batch: Core) -> dict[str, float]:
        named = {"location": self.location, "spread": self.spread, "atom": self.atom}
        return {
            name: named[name].distance(value)  # type: ignore[union-attr]
            for name, value in self.statistics(batch).items()
        }


def jump(bands: Bands, batch: Core) -> float | None:
    """How far the step from the newest reference batch to `batch` sits from the steps the batches took."""
    found = [
        bands.jumps[name][0].distance(value - bands.jumps[name][1])
        for name, value in bands.statistics(batch).items()
        if name in bands.jumps
    ]
    return max(found) if found else None


def distance(bands: Bands, batch: Core) -> float | None:
    """How far the batch sits from natural variation: the largest of its statistics' distances (None: none)."""
    found = bands.distances(batch)
    return max(found.values()) if found else None


def bands(
    history: Sequence[Mapping[str, float | None]],
    atom: float | None,
    batch: Core,
    *,
    ratio_scale: bool = False,
    shorter: float = 1.0,
) -> Bands:
    """The column's bands from its per-batch summaries (oldest first), with noise floors for `batch`'s size.

    Each summary carries `core_q10`, `core_q25`, `core_median`, `core_q75`, `core_q90`, `atom_share`
    (as `profiles.reference.ColumnSummary` keeps them) and `core_count` and `values` (its batch's sizes). `ratio_scale` (a unit with no offset: lengths,
    speeds, pressures...) measures location as log(median) when every reference batch's core is positive,
    so a rescaling moves it by log(factor) whatever the median's size; otherwise location is the median
    in units of the typical spread (temperatures, which cross zero). `shorter`: how many times shorter the
    batch is than the reference batches (>= 1; see `_band`)."""
    iqrs = [_diff(h, "core_q75", "core_q25") for h in history]
    wide = any(v is not None and v <= 0 for v in iqrs)
    spreads = [_diff(h, "core_q90", "core_q10") if wide else iqr for h, iqr in zip(history, iqrs)]
    positive = [s for s in spreads if s is not None and s > 0]
    typical = float(np.median(positive)) if positive else None
    n = max(batch.count, 1.0)
    cores = [
        (h, max(float(h.get("core_count") or 1.0), 1.0), spread)
        for h, spread in zip(history, spreads)
        if h.get("core_median") is not None
    ]
    families: dict[str, tuple[list[tuple[float, float]], float, float]] = {}  # name -> (history, se_new, extra)
    log_location = ratio_scale and bool(cores) and all((h.get("core_q10") or 0.0) > 0 for h, _, _ in cores)
    if typical and log_location:
        relative = typical / float(np.median([float(h["core_median"]) for h, _, _ in cores]))  # type: ignore[arg-type]
        se = _MEDIAN_SE * relative  # a median's SE in log units is its SE over the median
        families["location"] = (
            [
                (math.log(float(h["core_median"])), se / math.sqrt(k))  # type: ignore[arg-type]
                for h, k, _ in cores
            ],
            se / math.sqrt(n),
            _SKETCH_LOCATION * relative,
        )
    elif typical:
        families["location"] = (
            [
                (float(h["core_median"]) / typical, _MEDIAN_SE / math.sqrt(k))  # type: ignore[arg-type]
                for h, k, _ in cores
            ],
            _MEDIAN_SE / math.sqrt(n),
            _SKETCH_LOCATION,
        )
    if typical:
        families["spread"] = (
            [(math.log(s), _LOG_IQR_SE / math.sqrt(k)) for _, k, s in cores if s and s > 0],
            _LOG_IQR_SE / math.sqrt(n),
            _SKETCH_LOG_SPREAD,
        )
    if atom is not None:
        shares = [
            (float(share), float(h.get("values") or 1.0)) for h in history if (share := h.get("atom_share")) is not None
        ]
        p = float(np.mean([x for x, _ in shares])) if shares else 0.5
        binomial = math.sqrt(max(p * (1 - p), 0.0))
        families["atom"] = (
            [(x, binomial / math.sqrt(max(m, 1.0))) for x, m in shares],
            binomial / math.sqrt(max(batch.total, 1.0)),
            _SKETCH_SHARE,
        )
    found = {name: _band(name, *family, shorter=shorter) for name, family in families.items()}
    jumps = {name: j for name, family in families.items() if (j := _jump(*family, shorter=shorter)) is not None}
    location, spread, atom_band = found.get("location"), found.get("spread"), found.get("atom")
    return Bands(location, spread, atom_band, atom, typical, wide, log_location, jumps)


def _diff(summary: Mapping[str, float | None], high: str, low: str) -> float | None:
    a, b = summary.get(high), summary.get(low)
    return None if a is None or b is None else float(a) - float(b)


_RESCALE_GRID = 41  # factors tried per pass of the plain-rescale search (two passes: coarse, then fine)
_SHAPE_SE = 0.6  # rough standard error (x sqrt(n)) of the two shape ratios below, for a normal-like core


def shape(quantiles: Sequence[float | None] | None) -> tuple[float, float] | None:
    """Two numbers no positive affine map changes: where the median sits in the quartiles, (q50 - q25) /
    IQR, and the tails against the body, log((q90 - q10) / IQR). None where the quartiles tie."""
    if quantiles is None or any(q is None for q in quantiles):
        return None
    q10, q25, q50, q75, q90 = (float(q) for q in quantiles)  # type: ignore[arg-type]
    iqr = q75 - q25
    if iqr <= 0 or q90 - q10 <= 0:
        return None
    return (q50 - q25) / iqr, math.log((q90 - q10) / iqr)


def shape_distance(history: Sequence[Mapping[str, float | None]], batch: Core) -> float | None:
    """How far the batch's core shape sits from the reference batches' shapes (None: no shape to compare).
    A unit conversion or any rescaling keeps the shape; a real change of the shape is not a rescaling."""
    seen = shape(batch.quantiles)
    if seen is None:
        return None
    past = [
        (s, max(float(h.get("core_count") or 1.0), 1.0))
        for h in history
        if (s := shape([h.get(k) for k in ("core_q10", "core_q25", "core_median", "core_q75", "core_q90")]))
    ]
    if not past:
        return None
    n = max(batch.count, 1.0)
    found = []
    for index in (0, 1):
        band = _band("shape", [(s[index], _SHAPE_SE / math.sqrt(k)) for s, k in past], _SHAPE_SE / math.sqrt(n), 0.0)
        if band is not None:
            found.append(band.distance(seen[index]))
    return max(found) if found else None


@dataclass(frozen=True)
class Natural:
    """A column's natural variation as the reference batches show it, for batches `shorter` times shorter."""

    history: list[dict[str, float | None]]
    atom: float | None
    ratio: bool  # a ratio-scale unit (location judged as a log)
    shorter: float

    @classmethod
    def of(cls, reference: Reference, column: ColumnProfile, unit: str | None, shorter: float) -> Natural:
        """The column's (`column`: its merged reference profile) per-batch summaries, point mass and scale."""
        history = [summary.__dict__ for summary in reference.variation(column.name)]
        return cls(history, atom_of(column), unit is not None and is_ratio_scale(unit), shorter)

    def measure(self, batch: Core) -> tuple[float | None, float]:
        """(how far from natural the batch is, its jump). The distance is the nearer of: like the reference
        batches, or one ordinary step on from the newest of them (a level that keeps moving as it
        moved from batch to batch continues its trend); None when no statistic can be judged. The jump: how far its step from the
        newest reference batch sits from the steps they took (inf when there are too few to judge)."""
        found = bands(self.history, self.atom, batch, ratio_scale=self.ratio, shorter=self.shorter)
        stepped = jump(found, batch)
        stepped = stepped if stepped is not None else math.inf
        far = distance(found, batch)
        return (None if far is None else min(far, stepped)), stepped

    def plain_rescale(self, sketch: QuantileSketch, reference: QuantileSketch) -> tuple[float, float] | None:
        """The batch (its sketch) divided by the one factor that brings it nearest this natural variation: (factor,
        distance), the plan that inverts a rescaling no unit names (None: no spread to read a factor from). Searched
        on a log grid around the ratio of the batch's core spread to the merged reference's (`reference`: a rescale
        moves the spread by its factor, an offset leaves it alone), then finer around the best point."""
        spread, reference_spread = core(sketch, self.atom).spread(False), core(reference, self.atom).spread(False)
        if not spread or not reference_spread or spread <= 0 or reference_spread <= 0:
            return None
        best: tuple[float, float] | None = None
        centre, reach = math.log(spread / reference_spread), math.log(10.0)
        for _ in range(2):
            for log_factor in np.linspace(centre - reach, centre + reach, _RESCALE_GRID):
                found = self.measure(core(sketch, self.atom, math.exp(log_factor)))[0]
                if found is not None and (best is None or found < best[1]):
                    best = (math.exp(log_factor), found)
            if best is None:
                return None
            centre, reach = math.log(best[0]), 2 * reach / (_RESCALE_GRID - 1)
        return best

    def keeps_shape(self, batch: Core) -> tuple[bool, float | None]:
        """(the core's shape is one the reference batches had, within `policy.far`; the distance). An affine map keeps
        a shape, so a conversion or a rescaling must; a core whose shape changed moved for another reason
        (a batch whose values all sit near zero) and is drift, not a unit. Unknown: True."""
        found = shape_distance(self.history, batch)
        return found is None or found <= POLICY.far, found
