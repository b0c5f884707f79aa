"""Drift: how far each feature's distribution moved from the reference's.

Numbers: the largest gap between the reference's CDF and the snapshot's empirical CDF, at each of the
reference's profiled quantiles (q, v): the snapshot's CDF, counted exactly on its row sample, jumps from
F(v-) to F(v) at v, and q must fall inside that jump; the distance it falls outside is the gap.
Counting on the sample, not interpolating its quantiles, keeps ties exact (counts, zero-inflated
amounts), so a quantile that straddles a point mass differently in two samples does not read as drift.
Evaluated at nine points only, the gap is a lower bound on the Kolmogorov-Smirnov distance: it errs
towards silence on noise, not towards alarms.
Categories: the total variation distance between the exact value shares, casing folded (a casing defect
is the domain check's finding alone).

A feature drifts when its distance exceeds both `policy.drift_threshold` and the two-sample Kolmogorov-Smirnov
critical value at alpha = 0.001, 1.95 * sqrt(1/n + 1/m), so small samples do not warn on noise. DRIFT
warns unless the contract makes the column drift-blocking. A column the units check finds converted or
rescaled drifts too; `guard.causes` keeps that drift as a warning explained by the unit.

Against a batch `Reference`, a numeric feature drifts only when it also left the natural variation of
the reference batches (`guard.variation`: its core location, spread or point mass outside the band the
past batches span, one batch-to-batch step and the noise floor included): a slow cycle moving on is not
drift. A column with a declared unit is then judged by the units check alone, which warns DRIFT itself
when the column moved beyond natural variation without a unit to explain it.

Closest call, per numeric feature judged against natural variation: its distance from it, against `unexplained`;
deciding where the snapshot is one batch, the column was not held on one value per batch nor made drift-blocking
by its contract, and the CDF gap or the spread found drift (a distance inside the band gets no further); and the
cadences the snapshot spans, against `multi_batch_cadences`, deciding where that distance is beyond `unexplained`
with a drift found. Per feature whose distribution is compared: the CDF gap (a total variation for a category)
against `drift_threshold` and, over sqrt(1/n + 1/m), against `ks_critical`, and the spread ratio against
`stdev_ratio_limit`; each deciding where the drift would block (the contract makes the column drift-blocking, or
it is beyond `unexplained` as one batch) and the rest of its limit is passed.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.contract import ColumnContract
from guard.findings import ClosestCall, Condition, Finding, make_finding, rule_calls
from guard.kinds import FindingKind, Severity
from guard.policy import DEFAULT as POLICY
from guard.registry import register
from guard.statistics import is_categorical, normalize_category
from guard.variation import atom_of, bands, core, distance, sketched
from profiles.profile import ColumnProfile
from profiles.reference import Reference

__all__ = [
    "check_drift",
    "quantile_gap",
    "category_distance",
]

_NUMERIC = ("integer", "number")


@register("drift", needs_reference=True)
def check_drift(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot and ctx.reference_profile is not None
    ctx.require_sample()
    for column in ctx.contract.features:
        observed = ctx.snapshot.profile.columns.get(column.name)
        if observed is None:
            continue  # reported by the schema check as a missing column
        severity = Severity.BLOCK if column.drift_blocking else Severity.WARN
        reference = ctx.reference_profile.columns.get(column.name)
        calls: list[ClosestCall] = []
        if observed.logical_type in _NUMERIC:
            finding, distance_ = _numeric_drift(ctx, column, observed, reference, severity, calls)
            if distance_ is not None:
                yield _unexplained_call(ctx, column, distance_, finding)
                yield from _cadences_call(ctx, column, distance_, finding)
        elif observed.logical_type == "string":
            finding = _category_drift(ctx, column, observed, reference, severity, calls)
        else:
            finding = None
        yield from calls
        if finding is not None:
            yield finding


def _numeric_drift(
    ctx: GuardContext,
    column: ColumnContract,
    observed: ColumnProfile,
    reference: ColumnProfile | None,
    severity: Severity,
    calls: list[ClosestCall],
) -> tuple[Finding | None, float | None]:
    """The column's drift finding, and its distance from natural variation where that was measured; the closest calls
    of the drift limits it compared go to `calls`."""
    if not observed.quantiles:
        return None, None  # no values: the nulls check speaks
    if reference is None or not reference.quantiles:
        return _no_reference(ctx, column.name, severity), None
    if _the_periods_value(ctx, column.name, observed):
        return None, None  # one value per batch by construction (a period's month, year or flag): it moves every batch
    if column.unit is not None and _batch_judged(ctx, reference, observed):
        return None, None  # the units check judges a column with a unit against natural variation
    found = (
        _natural_distance(ctx, column.name, reference, observed) if _batch_judged(ctx, reference, observed) else None
    )
    if found is not None and found <= 1:
        return None, found  # moved no further than past batches moved from one to the next
    if found is not None and found > ctx.policy.unexplained and not ctx.spans_batches and not _held(ctx, column):
        severity = Severity.BLOCK  # far beyond natural variation, and (unless a cause explains it) a failure
    return _distribution_drift(ctx, column, observed, reference, severity, calls), found


def _unexplained_call(
    ctx: GuardContext, column: ColumnContract, distance_: float, finding: Finding | None
) -> ClosestCall:
    """The distance against `policy.unexplained`: deciding where nothing but it stood between the column and a block."""
    drifted = distance_ <= 1 or finding is not None
    decides = drifted and not ctx.spans_batches and not _held(ctx, column) and not column.drift_blocking
    return ClosestCall("unexplained", column.name, distance_, ctx.policy.unexplained, decides=decides)


def _cadences_call(
    ctx: GuardContext, column: ColumnContract, distance_: float, finding: Finding | None
) -> Iterator[ClosestCall]:
    """The cadences the snapshot spans against `policy.multi_batch_cadences` (fewer: one batch, whose distance beyond
    `unexplained` blocks): deciding where that distance, a drift found and nothing else would block the column."""
    spanned = ctx.cadences_spanned
    if spanned is None:
        return
    decides = (
        distance_ > ctx.policy.unexplained
        and finding is not None
        and not _held(ctx, column)
        and not column.drift_blocking
    )
    yield ClosestCall("multi_batch_cadences", column.name, spanned, ctx.policy.multi_batch_cadences, False, decides)


def _distribution_drift(
    ctx: GuardContext,
    column: ColumnContract,
    observed: ColumnProfile,
    reference: ColumnProfile,
    severity: Severity,
    calls: list[ClosestCall],
) -> Finding | None:
    """DRIFT at `severity` when the CDF gap, or else the spread, moved beyond its sampling limit."""
    values = _sampled_values(ctx, column.name)
    gap, level = quantile_gap(reference, values)
    limit = _limit(len(values), _reference_size(ctx, reference))
    calls += _gap_calls(column.name, gap, len(values), _reference_size(ctx, reference), severity)
    if gap <= limit:
        return _dispersion_drift(
            ctx, column, observed, reference, severity, len(values), _reference_size(ctx, reference), calls
        )
    return _drift(
        ctx,
        column.name,
        ("max_cdf_gap", gap, limit),
        severity,
        at_level=level,
        reference_median=reference.quantile(0.5),
        observed_median=observed.quantile(0.5),
        sample_rows=len(values),
        message=f"{column.name!r} moved: {gap:.1%} of its mass shifted across the reference's {level:g} quantile "
        f"(median {reference.quantile(0.5):g} -> {observed.quantile(0.5):g}); the limit is {limit:.1%}",
    )


def _the_periods_value(ctx: GuardContext, name: str, observed: ColumnProfile) -> bool:
    return isinstance(ctx.reference, Reference) and ctx.reference.holds_the_periods_value(name, observed)


def _held(ctx: GuardContext, column: ColumnContract) -> bool:
    """Every kept batch held one value on all its rows (a flag, a period's value): a band of no width, so a move
    is new rather than far beyond natural variation, and warns (a person may accept it as the new normal)."""
    return isinstance(ctx.reference, Reference) and ctx.reference.held_per_batch(column.name)


def _batch_judged(ctx: GuardContext, reference: ColumnProfile, observed: ColumnProfile) -> bool:
    return isinstance(ctx.reference, Reference) and sketched(reference) and sketched(observed)


def _natural_distance(ctx: GuardContext, name: str, reference: ColumnProfile, observed: ColumnProfile) -> float | None:
    """How far the batch's core location, spread and point mass lie from the reference batches' bands, in band
    widths (guard.variation: 1 is the band's edge); None when it cannot be measured."""
    assert isinstance(ctx.reference, Reference) and observed.sketch is not None and ctx.snapshot is not None
    atom = atom_of(reference)
    batch = core(observed.sketch, atom)
    history = [s.__dict__ for s in ctx.reference.variation(name)]
    return distance(bands(history, atom, batch, shorter=ctx.reference.shorter_by(ctx.snapshot.batch)), batch)


def _dispersion_drift(
    ctx: GuardContext,
    column: ColumnContract,
    observed: ColumnProfile,
    reference: ColumnProfile,
    severity: Severity,
    n: int,
    m: int,
    calls: list[ClosestCall],
) -> Finding | None:
    """Quantiles of a discrete column hide extra noise (ties absorb it); its standard deviation does not.
    The limit widens for small samples: ~4 standard errors of a log stdev ratio, sqrt(1/2n + 1/2m). Its closest
    call: the ratio (or its inverse) against `policy.stdev_ratio_limit`, deciding where the drift would block and
    the small-sample limit is passed too."""
    if not observed.stdev or not reference.stdev or n <= 1 or m <= 1:
        return None
    ratio = observed.stdev / reference.stdev
    small = math.exp(4.0 * math.sqrt(1 / (2 * n) + 1 / (2 * m)))
    limit = max(ctx.policy.stdev_ratio_limit, small)
    spread = max(ratio, 1 / ratio)
    calls += rule_calls(
        column.name,
        Condition("stdev_ratio_limit", spread, ctx.policy.stdev_ratio_limit, spread > ctx.policy.stdev_ratio_limit),
        when=severity is Severity.BLOCK and spread > small,
    )
    if max(ratio, 1 / ratio) <= limit:
        return None
    return _drift(
        ctx,
        column.name,
        ("stdev_ratio", ratio, limit),
        severity,
        reference_stdev=reference.stdev,
        observed_stdev=observed.stdev,
        message=f"{column.name!r} spread changed x{ratio:.3g} (stdev {reference.stdev:.4g} -> {observed.stdev:.4g}); "
        f"the limit is x{limit:.3g}: added noise, clipping or a mixed source?",
    )


def _category_drift(
    ctx: GuardContext,
    column: ColumnContract,
    observed: ColumnProfile,
    reference: ColumnProfile | None,
    severity: Severity,
    calls: list[ClosestCall],
) -> Finding | None:
    if observed.value_counts is None or observed.row_count == observed.null_count:
        return None  # too many values to count (the domain check's), or none (the nulls check's)
    if reference is None or reference.row_count == reference.null_count:
        return _no_reference(ctx, column.name, severity)
    if not is_categorical(reference):
        return None  # an identifier or free text: no mix of categories to compare
    if _the_periods_value(ctx, column.name, observed):
        return None  # one value per batch by construction (a period's name): every batch has another mix
    distance = category_distance(reference, observed)
    n, m = observed.row_count - observed.null_count, reference.row_count - reference.null_count
    limit = _limit(n, m)
    calls += _gap_calls(column.name, distance, n, m, severity)
    if distance <= limit:
        return None
    return _drift(
        ctx,
        column.name,
        ("total_variation", distance, limit),
        severity,
        message=f"{column.name!r} changed its mix of values: {distance:.1%} of rows moved between categories; "
        f"the limit is {limit:.1%}",
    )


def _drift(
    ctx: GuardContext, name: str, measured: tuple[str, float, float], severity: Severity, **evidence: Any
) -> Finding:
    """DRIFT on `name`: `measured` is the statistic's name, its value and its limit (each to four places)."""
    statistic, value, limit = measured
    return make_finding(
        FindingKind.DRIFT,
        ctx.dataset_urn,
        name,
        observed=round(value, 4),
        expected=round(limit, 4),
        severity=severity,
        statistic=statistic,
        **evidence,
    )


def _no_reference(ctx: GuardContext, name: str, severity: Severity) -> Finding:
    return make_finding(
        FindingKind.REFERENCE_MISSING,
        ctx.dataset_urn,
        name,
        observed=None,
        expected="a reference distribution",
        severity=severity,
        check="drift",
        message=f"the reference profile has no distribution for {name!r}, so its drift cannot be judged; "
        "record a new reference with `kintsugi contract apply FILE --reference DATA.parquet`",
    )


def quantile_gap(reference: ColumnProfile, values: np.ndarray) -> tuple[float, float]:
    """The largest gap between the reference's CDF and the empirical CDF of `values`, and its level.

    At each reference quantile (q, v) the sample's CDF jumps from F(v-) to F(v); q must fall inside
    [F(v-), F(v)], and the distance it falls outside is the gap at q.
    """
    ordered = np.sort(values)
    n = len(ordered)
    if n == 0 or not reference.quantiles:
        return 0.0, 0.5  # nothing to compare: callers report missing values or reference first
    gaps = []
    for q, v in reference.quantiles:
        below = np.searchsorted(ordered, v, side="left") / n  # F(v-)
        within = np.searchsorted(ordered, v, side="right") / n  # F(v)
        gaps.append((max(0.0, below - q, q - within), q))
    gap, level = max(gaps, key=lambda item: item[0])
    return float(gap), float(level)


def _sampled_values(ctx: GuardContext, name: str) -> np.ndarray:
    assert ctx.snapshot is not None
    return pd.to_numeric(ctx.snapshot.sample[name], errors="coerce").dropna().to_numpy(dtype=float)


def _reference_size(ctx: GuardContext, reference: ColumnProfile) -> int:
    """Values behind the reference's quantiles: its non-null rows, capped by the sample size alike."""
    assert ctx.snapshot is not None
    size = reference.row_count - reference.null_count
    if len(ctx.snapshot.sample) < ctx.snapshot.profile.row_count:
        size = min(size, len(ctx.snapshot.sample))  # the reference was sampled like this snapshot
    return size


def _gap_calls(name: str, gap: float, n: int, m: int, severity: Severity) -> list[ClosestCall]:
    """A CDF gap (or a total variation) against `policy.drift_threshold` and, over the two samples' size term
    sqrt(1/n + 1/m), against `policy.ks_critical`: the drift is over its limit where both are crossed, and blocks
    where its severity is a block (drift-blocking by contract, or beyond `unexplained` as one batch)."""
    if n <= 0 or m <= 0:
        return []
    size = math.sqrt(1 / n + 1 / m)
    return rule_calls(
        name,
        Condition("drift_threshold", gap, POLICY.drift_threshold, gap > POLICY.drift_threshold),
        Condition("ks_critical", gap / size, POLICY.ks_critical, gap > POLICY.ks_critical * size),
        when=severity is Severity.BLOCK,
    )


def _limit(n: int, m: int) -> float:
    if n <= 0 or m <= 0:
        return math.inf
    return max(POLICY.drift_threshold, POLICY.ks_critical * math.sqrt(1 / n + 1 / m))


def category_distance(reference: ColumnProfile, observed: ColumnProfile) -> float:
    """Total variation distance between the two value distributions, casing folded."""
    ref, obs = _shares(reference), _shares(observed)
    return 0.5 * math.fsum(abs(ref.get(v, 0.0) - obs.get(v, 0.0)) for v in sorted(set(ref) | set(obs)))


def _shares(profile: ColumnProfile) -> dict[str, float]:
    counts: dict[str, int] = {}
    for value, count in profile.value_counts or ():
        key = normalize_category(value)
        counts[key] = counts.get(key, 0) + count
    total = sum(counts.values())
    return {value: count / total for value, count in counts.items()} if total else {}
