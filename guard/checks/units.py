"""Units and scale: fit observed quantiles against the reference and name the unit the data is in."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.profile import ColumnProfile
from guard.registry import register
from guard.units import UNITS, candidates_for, conversion

__all__ = ["check_units", "fit_affine", "name_unit", "unit_shifted"]

_FIT_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
_IDENTITY_SCALE_TOLERANCE = 0.15  # the label, and columns with a point mass among the fitted quantiles
_FEATURE_SCALE_TOLERANCE = 0.04  # a continuous feature: clean batches stay within ±2.6% (40 seeds measured)
_FEATURE_OFFSET_TOLERANCE = 0.06
_MATCH_SCALE_TOLERANCE = 0.08
_OFFSET_TOLERANCE = 0.15  # of the reference's 10-90% spread


@register("units")
def check_units(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot and ctx.reference_profile is not None
    for column in ctx.contract.columns:
        observed = ctx.snapshot.profile.columns.get(column.name)
        if column.unit is None or observed is None or observed.logical_type not in ("number", "integer"):
            continue
        if column.unit not in UNITS:
            raise ValueError(f"column {column.name!r} declares unit {column.unit!r}, which the guard cannot check")
        reference = ctx.reference_profile.columns.get(column.name)
        if reference is None or not reference.quantiles:
            yield make_finding(FindingKind.REFERENCE_MISSING, ctx.dataset_urn, column.name, observed=None,
                               expected="reference quantiles", message=f"no reference profile for {column.name!r}")
            continue
        finding = _unit_finding(ctx.dataset_urn, column.name, column.unit, reference, observed,
                                strict=column.name != ctx.contract.label_column)
        if finding is not None:
            yield finding


def fit_affine(reference: ColumnProfile, observed: ColumnProfile) -> tuple[float, float, float]:
    """Least-squares (scale, offset) with observed ≈ scale * reference + offset, and the reference spread."""
    ref = np.array([reference.quantile(q) for q in _FIT_QUANTILES], dtype=float)
    obs = np.array([observed.quantile(q) for q in _FIT_QUANTILES], dtype=float)
    spread = float(ref[-1] - ref[0])
    if spread <= 0:
        median = ref[2] or 1.0
        return float(obs[2] / median), 0.0, abs(median)
    scale, offset = np.polyfit(ref, obs, 1)
    return float(scale), float(offset), spread


def unit_shifted(unit: str | None, reference: ColumnProfile | None, observed: ColumnProfile, *,
                 strict: bool = True) -> bool:
    """True when the units check reports this column (its values are in other units or rescaled):
    range and drift checks, which judge values in the declared unit, then stay quiet about it."""
    if unit is None or reference is None or not reference.quantiles or not observed.quantiles:
        return False
    scale, offset, spread = fit_affine(reference, observed)
    return not _is_identity(scale, offset, spread, reference, strict)


def _is_identity(scale: float, offset: float, spread: float, reference: ColumnProfile, strict: bool) -> bool:
    """Within noise of the reference. `strict` (features, not the label, whose scale drifts with the world)
    tightens the tolerance for continuous columns: their fitted quantiles are exact to a few percent."""
    fitted = [reference.quantile(q) for q in _FIT_QUANTILES]
    tight = strict and len(set(fitted)) == len(fitted)
    scale_tolerance = _FEATURE_SCALE_TOLERANCE if tight else _IDENTITY_SCALE_TOLERANCE
    offset_tolerance = _FEATURE_OFFSET_TOLERANCE if tight else _OFFSET_TOLERANCE
    return abs(scale - 1) <= scale_tolerance and abs(offset) <= offset_tolerance * spread


def name_unit(declared: str, scale: float, offset: float, spread: float) -> str | None:
    """The unit whose conversion from `declared` explains (scale, offset), if one does."""
    best: tuple[float, str] | None = None
    for unit in candidates_for(declared):
        unit_scale, unit_offset = conversion(declared, unit)
        if scale <= 0 or abs(scale / unit_scale - 1) > _MATCH_SCALE_TOLERANCE:
            continue
        if abs(offset - unit_offset) > _OFFSET_TOLERANCE * spread * unit_scale:
            continue
        distance = abs(np.log(scale / unit_scale))
        if best is None or distance < best[0]:
            best = (distance, unit)
    return best[1] if best else None


def _unit_finding(urn: str, name: str, declared: str, reference: ColumnProfile,
                  observed: ColumnProfile, *, strict: bool) -> Finding | None:
    scale, offset, spread = fit_affine(reference, observed)
    if _is_identity(scale, offset, spread, reference, strict):
        return None
    seen = {"scale": round(scale, 6), "offset": round(offset, 6), "median": observed.quantile(0.5)}
    expected = {"unit": declared, "median": reference.quantile(0.5)}
    actual = name_unit(declared, scale, offset, spread)
    if actual is None:
        return make_finding(FindingKind.SCALE_SHIFT, urn, name, observed=seen, expected=expected,
                            message=f"{name!r} shifted by x{scale:.4g} {offset:+.4g}, which no known unit explains")
    unit_scale, unit_offset = conversion(declared, actual)
    return make_finding(
        FindingKind.UNIT_MISMATCH, urn, name, observed={**seen, "unit": actual}, expected=expected,
        message=f"{name!r} is in {actual}, the contract says {declared} (x{scale:.4g} {offset:+.4g})",
        playbook="unit_rescale", declared_unit=declared, actual_unit=actual, scale=unit_scale, offset=unit_offset)
