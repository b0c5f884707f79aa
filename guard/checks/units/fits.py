"""Units against a bare whole-table profile (`guard.checks.units`): the least-squares affine map of the quantiles,
named as a unit where one of the group fits it.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from guard.checks.units.hypotheses import unit_mismatch_of
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.units import candidates_for, conversion
from profiles.profile import ColumnProfile

_FIT_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


_ALL_QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


def fit_affine(reference: ColumnProfile, observed: ColumnProfile) -> tuple[float, float, float] | None:
    """Least-squares (scale, offset) with observed ≈ scale * reference + offset, and the reference spread.

    On the 10-90% quantiles; where they tie on a point mass, on every profiled quantile whose reference
    value differs (the point itself fitted once). None when fewer than two distinct values remain."""
    for levels in (_FIT_QUANTILES, _ALL_QUANTILES):
        pairs = [(reference.quantile(q), observed.quantile(q)) for q in levels]
        known = [(r, o) for r, o in pairs if r is not None and o is not None]
        distinct = sorted({r for r, _ in known})
        if len(distinct) >= min(3, len(levels)) or (levels is _ALL_QUANTILES and len(distinct) >= 2):
            ref = np.array([r for r, _ in known], dtype=float)
            obs = np.array([o for _, o in known], dtype=float)
            scale, offset = np.polyfit(ref, obs, 1)
            spread = float(max(distinct) - min(distinct))
            return float(scale), float(offset), spread
    return None


def _is_identity(scale: float, offset: float, spread: float, reference: ColumnProfile, strict: bool) -> bool:
    """Within noise of the reference. `strict` (features, not the label, whose scale drifts with the world)
    tightens the tolerance for continuous columns: their fitted quantiles are exact to a few percent."""
    (scale_field, scale_tolerance), (offset_field, offset_tolerance) = _tolerances(reference, strict)
    return abs(scale - 1) <= scale_tolerance and abs(offset) <= offset_tolerance * spread


def _tolerances(reference: ColumnProfile, strict: bool) -> tuple[tuple[str, float], tuple[str, float]]:
    """The policy fields (and values) of the scale and offset tolerances a column is fitted with."""
    fitted = [reference.quantile(q) for q in _FIT_QUANTILES]
    if strict and len(set(fitted)) == len(fitted):
        return ("feature_scale_tolerance", POLICY.feature_scale_tolerance), (
            "feature_offset_tolerance",
            POLICY.feature_offset_tolerance,
        )
    return ("identity_scale_tolerance", POLICY.identity_scale_tolerance), ("offset_tolerance", POLICY.offset_tolerance)


def profile_calls(
    name: str, reference: ColumnProfile, observed: ColumnProfile, *, strict: bool
) -> Iterator[ClosestCall]:
    """Against a bare profile: the fit's |scale - 1| against its scale tolerance and |offset| over the reference's
    spread against its offset tolerance. Either crossed blocks (a named unit or a SCALE_SHIFT), so each decides where
    the other was not crossed."""
    fit = fit_affine(reference, observed)
    if fit is None:
        return
    scale, offset, spread = fit
    (scale_field, scale_tolerance), (offset_field, offset_tolerance) = _tolerances(reference, strict)
    moved, shifted = abs(scale - 1), abs(offset) / spread
    yield ClosestCall(scale_field, name, moved, scale_tolerance, decides=abs(offset) <= offset_tolerance * spread)
    yield ClosestCall(offset_field, name, shifted, offset_tolerance, decides=moved <= scale_tolerance)


def name_unit(declared: str, scale: float, offset: float, spread: float) -> str | None:
    """The unit whose conversion from `declared` explains (scale, offset), if one does."""
    best: tuple[float, str] | None = None
    for unit in candidates_for(declared):
        unit_scale, unit_offset = conversion(declared, unit)
        if scale <= 0 or abs(scale / unit_scale - 1) > POLICY.match_scale_tolerance:
            continue
        if abs(offset - unit_offset) > POLICY.offset_tolerance * spread * unit_scale:
            continue
        distance_ = abs(np.log(scale / unit_scale))
        if best is None or distance_ < best[0]:
            best = (distance_, unit)
    return best[1] if best else None


def profile_finding(
    urn: str, name: str, declared: str, reference: ColumnProfile, observed: ColumnProfile, *, strict: bool
) -> Finding | None:
    fit = fit_affine(reference, observed)
    if fit is None:
        if reference.quantiles == observed.quantiles:
            return None  # the same profile: nothing moved
        return make_finding(
            FindingKind.UNIT_UNCHECKED,
            urn,
            name,
            observed=dict(observed.quantiles),
            expected="a reference with two distinct quantiles",
            message=f"{name!r}: every profiled quantile of the reference is one value, so its unit ({declared}) "
            "cannot be judged against it; record a reference with more spread",
        )
    scale, offset, spread = fit
    if _is_identity(scale, offset, spread, reference, strict):
        return None
    seen = {"scale": round(scale, 6), "offset": round(offset, 6), "median": observed.quantile(0.5)}
    expected = {"unit": declared, "median": reference.quantile(0.5)}
    actual = name_unit(declared, scale, offset, spread)
    if actual is None:
        return make_finding(
            FindingKind.SCALE_SHIFT,
            urn,
            name,
            observed=seen,
            expected=expected,
            message=f"{name!r} shifted by x{scale:.4g} {offset:+.4g}, which no known unit explains",
        )
    return unit_mismatch_of(
        urn,
        name,
        declared,
        actual,
        observed={**seen, "unit": actual},
        expected=expected,
        message=f"{name!r} is in {actual}, the contract says {declared} (x{scale:.4g} {offset:+.4g})",
    )
