"""Distances between a batch's values and a reference column's distribution, shared by the cause checks."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from profiles.profile import ColumnProfile

__all__ = ["ks_distance", "ks_noise", "numeric_values", "reference_share"]

_GRID = np.linspace(0.01, 0.99, 99)


def numeric_values(values: pd.Series) -> np.ndarray:
    """The finite numbers of a column, as float64."""
    floats = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return floats[np.isfinite(floats)]


def ks_distance(values: np.ndarray, reference: ColumnProfile) -> float | None:
    """The largest gap between the values' empirical CDF and the reference's (from its quantile sketch, or its
    profiled quantiles), over the reference's and the values' percentiles; None without either."""
    if not len(values):
        return None
    ordered = np.sort(values)
    if reference.sketch is not None and reference.sketch.n:
        points = np.unique(
            np.concatenate(
                [np.asarray(reference.sketch.quantiles(_GRID), dtype=np.float64), np.quantile(ordered, _GRID)]
            )
        )
        expected = reference.sketch.ranks(points)
    elif reference.quantiles:
        points = np.array([v for _, v in reference.quantiles], float)
        expected = np.array([q for q, _ in reference.quantiles], float)
    else:
        return None
    seen = np.searchsorted(ordered, points, side="right") / len(ordered)
    return float(np.max(np.abs(seen - expected)))


def ks_noise(rows: int) -> float:
    """The two-sample KS distance clean data stays under at 99.9% (the batch's rows; the reference's many)."""
    return 1.95 / math.sqrt(rows) if rows else math.inf


def reference_share(reference: ColumnProfile, value: float) -> tuple[float, bool] | None:
    """(share of the reference's values equal to `value`, exact?): exactly 0 outside its range, exact for 0
    from the zero count, else the quantile sketch's mass (+-1.65%); None when the profile cannot say."""
    if (
        reference.minimum is not None
        and reference.maximum is not None
        and not (reference.minimum <= value <= reference.maximum)
    ):
        return 0.0, True
    if value == 0 and reference.zero_share is not None:
        return reference.zero_share, True
    sketch = reference.sketch
    if sketch is None or not sketch.n:
        return None
    inclusive, exclusive = sketch.ranks([value]), sketch.ranks([value], inclusive=False)
    return max(0.0, float(inclusive[0] - exclusive[0])), False
