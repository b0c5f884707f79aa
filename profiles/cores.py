"""A column's core in one batch, read from its KLL sketch: its values other than its point mass (the atom), at a few
levels, and the share on the atom. A statistic of a batch; `guard.variation` judges how far it moved. Pure."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profiles.profile import ColumnProfile
from profiles.sketches import QuantileSketch

__all__ = ["Core", "ATOM_SHARE", "MIN_CORE", "CORE_LEVELS", "atom_of", "core", "weighted_items", "sketched"]

ATOM_SHARE = 0.10  # a single value holding a tenth of the rows is a point mass: six times the sketch's
#                    1.65% PMF error, so never a rounding artefact, and well below the 47-96% zero shares
#                    and 50-90% sentinels real columns show
MIN_CORE = 5  # values beside the point mass needed to judge the core's location and spread
CORE_LEVELS = (0.1, 0.25, 0.5, 0.75, 0.9)
_ATOM_TOLERANCE = 1e-3  # relative: a value converted and rounded back (16,100 m -> 10.0 mi -> 16,093 m) hits its atom


@dataclass(frozen=True)
class Core:
    """One batch's values, (converted and) split into the point mass and the rest."""

    quantiles: tuple[float, ...] | None  # the core's values at CORE_LEVELS; None below MIN_CORE values
    count: float  # values in the core
    total: float  # all values
    atom_share: float | None  # share of values on the atom (None: no atom)

    @property
    def median(self) -> float | None:
        return None if self.quantiles is None else self.quantiles[2]

    def spread(self, wide: bool) -> float | None:
        """The IQR (or the 10-90% range when `wide`), None when there is none to take a log of."""
        if self.quantiles is None:
            return None
        low, high = (self.quantiles[0], self.quantiles[4]) if wide else (self.quantiles[1], self.quantiles[3])
        return high - low if high > low else None


def sketched(column: ColumnProfile | None) -> bool:
    return column is not None and column.sketch is not None and column.sketch.n > 0


def atom_of(column: ColumnProfile) -> float | None:
    """The column's point mass: its most frequent value when that holds ATOM_SHARE of its values or more."""
    mass = column.point_mass
    return mass[0] if mass is not None and mass[1] >= ATOM_SHARE else None


def weighted_items(sketch: QuantileSketch) -> tuple[np.ndarray, np.ndarray]:
    """The sketch's retained values, sorted, and the weight each stands for."""
    values = np.concatenate(sketch.levels) if sketch.levels else np.empty(0)
    weights = np.concatenate([np.full(len(level), float(1 << h)) for h, level in enumerate(sketch.levels)])
    order = np.argsort(values, kind="stable")
    return values[order], weights[order]


def core(sketch: QuantileSketch, atom: float | None, scale: float = 1.0, offset: float = 0.0) -> Core:
    """The batch's core after converting it back from (scale, offset): x -> (x - offset) / scale."""
    values, weights = weighted_items(sketch)
    values = (values - offset) / scale
    total = float(weights.sum())
    share = None
    if atom is not None:
        on_atom = np.abs(values - atom) <= _ATOM_TOLERANCE * abs(atom) + 1e-9
        share = float(weights[on_atom].sum()) / total if total else None
        values, weights = values[~on_atom], weights[~on_atom]
    count = float(weights.sum())
    if count < MIN_CORE or len(values) == 0:
        return Core(None, count, total, share)
    cumulative = np.cumsum(weights)
    ranks = [min(int(np.searchsorted(cumulative, q * count, side="left")), len(values) - 1) for q in CORE_LEVELS]
    return Core(tuple(float(values[i]) for i in ranks), count, total, share)
