"""Units and scale: block only on a named conversion (or a change far beyond natural variation).

Against a batch `Reference` (per-batch summaries of natural variation, KLL sketches on both sides):

1. The batch is summarised as `guard.variation` does (core location, core spread, share on the point
   mass) and its distance d0 from natural variation is measured (<= 1: inside): the nearer of its
   distance from the reference batches' band and of its step from the newest reference batch against
   the steps they took (a slow cycle moving on is a run of ordinary steps).
2. d0 <= 1 and the batch's values on the reference's decimal grid (below): nothing to say. Otherwise every unit of the declared unit's group (`guard.units`) is tried
   as a hypothesis: the batch converted back from it (x -> (x - offset) / scale, the conversion's exact
   factor and offset) is summarised and measured the same way, d_u.
3. A **good fit** for unit u (the closest of the candidates), either of:
   - far: the batch as it came sits beyond `policy.far` (d0 > `policy.far`) and converted back from u inside natural
     variation (d_u <= 1; not merely back within `policy.far`: x7.3 is not km/h (x3.6) with some drift left over);
   - a jump: the batch as it came sits outside natural variation (d0 > 1) and its step from the newest
     reference batch is beyond `policy.far` of the steps the reference batches took from one to the next, while
     converted back from u it is inside natural variation (d_u <= 1) and its step is an ordinary one
     (<= 1). Slow cycles move by steps; a unit change is a discontinuity. (Needs three reference batches.)
   and in both, converted back, its core keeps a shape the reference batches had (`guard.variation.shape`:
   where the median sits in the quartiles, the tails against the body; within `policy.far`): an affine map keeps
   shapes, so a good fit is one where the conversion alone explains the change.
   Then UNIT_MISMATCH names u (a block): the conversion's factor and offset explain the change; what is
   left is no more than natural variation. Unless the runner-up unit is a good fit too and fits less than
   `policy.unit_margin` further (lengths in metres or in yards, 9% apart, on a short batch whose band is
   wider than that): then the batch cannot say which. UNIT_MISMATCH still names the nearer (its failure
   mode, as memory fingerprints it) with both in `explained_by`, but with no playbook: a heal by the nearer
   alone would be a guess, and a wrong factor still verifies inside the band. What decides is the past: the
   verified heal of this very failure mode (`controlplane.watch.memory.reuse`), else it stays blocked.
   The least-squares affine map of the core's quantiles (observed against reference) is reported as
   evidence beside the conversion's own factor and offset.
   Or, from the values themselves: the reference's values sit on a decimal grid (0.1 mm, whole W/m2)
   that most of the batch's values left, and converted back from u they are on it again, and nearer natural
   variation than they came (`_Grid`). A conversion moves values off their grid and undoing it restores it
   exactly; no slow cycle does that. It names a unit inside natural variation (a month of small amounts in
   inches, as far out as 1.02x the band) and in a batch unlike any past one (a week of low readings in kW/m2).
4. Beyond `policy.far`, its shape kept (a rescaling), and no unit explains it: SCALE_SHIFT (a block: x2.5 with
   no unit).
5. Beyond `policy.far` with a changed shape (noise added, a broken feed) and no cause named: DRIFT, a block. A change
   twice as far as any past batch moved, that nothing explains, is evidence of a failure, not a slow cycle.
6. Otherwise (between 1 and `policy.far`): DRIFT, a warning (recorded, not a block): a change of the size or kind past
   batches show is not evidence of a failure.

A snapshot covering more than `policy.multi_batch_cadences` cadences (a whole table judged against a reference of batches)
mixes several batches' stretches of a cycle: its spread is wider than any one batch's by construction. A named
conversion still blocks it; an unexplained distance does not (DRIFT, a warning), since it is not
evidence of a failure.

`policy.far` = 2: twice as far from the centre of natural variation as the band's edge, where the band already
spans every reference batch, one more step of the largest batch-to-batch move, and three standard
errors of the new batch's own statistic. A point-mass column (one value >= 10% of rows: zeros of a
zero-inflated column, a visibility of 16,100 m) is judged on its core, and its point is a statistic of
its own: degC -> degF moves the point, so the conversion is still seen. Fewer than MIN_CORE values
beside the point and nothing else to judge: UNIT_UNCHECKED, a warning that says the check cannot judge.

Against a batch's own kept profile (the history check: a batch that passed earlier, read again, its rows the
same), a named conversion maps every kept quantile and extreme onto today's exactly, whatever the number of
values (a month with three non-zero days): UNIT_MISMATCH. Otherwise the batch is judged as above, against a
reference of that one batch: values emptied by a broken join leave a subset of the same rows, which moves
quantiles by sampling, not by a unit.

A numeric column that declares no unit has one hypothesis left, a rescaling by a factor no unit names: SCALE_SHIFT
where dividing by one factor alone explains the change (`_rescaled_without_unit`): the same rows that passed
earlier, every kept quantile times one factor exactly today's; or a new batch of a feature beyond
`policy.unexplained` as it came (where the drift check blocks it anyway), or outside the contract's bounds (where
the range check does) and nearer natural variation once divided, its shape kept, and back inside natural variation
(and the bounds)
divided by the factor that brings it nearest: there the name is what changes, not the verdict. A batch of a feature
that nothing blocks as it came is a SCALE_SHIFT, a block, when a partner it followed in every reference batch says it
was rescaled: their scale against each other moved beyond `policy.far`, the factor of that move brings the column
nearer its natural variation (and inside it), and the same factor would take the partner further from its own
(`_rescaled_against_partner`). A column whose own level varies widely from batch to batch (a panel of entities of
every size) hides a rescaling inside its band; against a column it moves with, the same rescaling is far outside.

Closest calls, per column with a unit against natural variation: d0 against `far` and `unexplained`, the cadences
the snapshot spans against `multi_batch_cadences`, and where the reference's values sit on a grid, the grid's
three limits (`_grid_calls`); against a bare profile, the fit's scale and offset against their tolerances
(`_profile_calls`). `unit_margin` and `match_scale_tolerance` decide which unit is named and whether it is healed,
never whether the batch blocks: they have none.

Against a bare whole-table profile (DataHub's datasetProfile: nine quantiles, no sketch, no batch
history) the check fits an affine map on the 10-90% quantiles and names the unit whose factor and offset
match within fixed tolerances (measured on 40 seeds of the demo table), as before; quantiles that tie on
a point mass are fitted on the distinct ones, and a reference whose quantiles all tie cannot be judged
(UNIT_UNCHECKED) rather than read as scale 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Iterator, Mapping

import numpy as np

from guard.context import GuardContext
from guard.contract import ColumnContract
from guard.findings import ClosestCall, Condition, Finding, make_finding, rule_calls
from guard.kinds import FindingKind, Severity
from guard.policy import DEFAULT as POLICY
from guard.registry import register
from guard.units import UNITS, candidates_for, conversion
from guard.variation import (
    MIN_CORE,
    Core,
    Natural,
    core,
    sketched,
    weighted_items,
)
from profiles.profile import BatchProfile, ColumnProfile
from profiles.reference import Reference
from profiles.relations import Relations, resolution
from profiles.sketches import QuantileSketch

__all__ = [
    "check_units",
    "judge_units",
    "fit_affine",
    "name_unit",
]

_NUMERIC = ("number", "integer")
_FIT_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
_ALL_QUANTILES = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


@register("units")
def check_units(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot and ctx.reference_profile is not None
    for column in ctx.contract.columns:
        yield from judge_units(ctx, column)


def judge_units(ctx: GuardContext, column: ColumnContract) -> Iterator[Finding | ClosestCall]:
    """The units check's finding for one column, if any, and against a batch reference its closest calls."""
    assert ctx.snapshot is not None and ctx.reference_profile is not None
    observed = ctx.snapshot.profile.columns.get(column.name)
    if observed is None or observed.logical_type not in _NUMERIC or not observed.values:
        return
    if column.unit is None:
        calls: list[ClosestCall] = []
        yield from _present(_rescaled_without_unit(ctx, column, observed, calls))
        yield from calls
        return
    if column.unit not in UNITS:
        raise ValueError(
            f"column {column.name!r} declares unit {column.unit!r}, which the guard cannot read: "
            "write it in pint's spelling (m, km, mile, degC, degF, mph, hPa, percent, USD...)"
        )
    reference = ctx.reference_profile.columns.get(column.name)
    if reference is None or not reference.quantiles:
        yield make_finding(
            FindingKind.REFERENCE_MISSING,
            ctx.dataset_urn,
            column.name,
            observed=None,
            expected="reference quantiles",
            message=f"no reference profile for {column.name!r}",
        )
        return
    if isinstance(ctx.reference, Reference) and _its_own(ctx.reference, ctx.snapshot.batch):
        converted = _same_rows_converted(ctx.dataset_urn, column, reference, observed)
        if converted is not None:
            yield converted
            return
    if isinstance(ctx.reference, Reference) and sketched(reference) and sketched(observed):
        yield from _batch_judged(ctx, column, ctx.reference, reference, observed)
        return
    assert ctx.contract is not None
    yield from _profile_calls(column.name, reference, observed, strict=column.name != ctx.contract.label_column)
    yield from _present(
        _profile_finding(
            ctx.dataset_urn,
            column.name,
            column.unit,
            reference,
            observed,
            strict=column.name != ctx.contract.label_column,
        )
    )


def _present(finding: Finding | None) -> Iterator[Finding]:
    if finding is not None:
        yield finding


def _batch_judged(
    ctx: GuardContext, column: ColumnContract, reference: Reference, ref: ColumnProfile, observed: ColumnProfile
) -> Iterator[Finding | ClosestCall]:
    """A column with a unit against natural variation: its closest calls (its distance as it came against `far` and
    `unexplained`), then its finding, if any."""
    assert ctx.snapshot is not None and observed.sketch is not None
    natural = Natural.of(reference, ref, column.unit, reference.shorter_by(ctx.snapshot.batch))
    as_is = core(observed.sketch, natural.atom)
    measured = natural.measure(as_is)
    grid_calls: list[ClosestCall] = []
    finding = _batch_finding(
        ctx.dataset_urn, column, natural, ref, observed, as_is, measured, ctx.spans_batches, grid_calls
    )
    if measured[0] is not None:
        named = finding is not None and finding.kind is FindingKind.UNIT_MISMATCH
        kept = natural.keeps_shape(as_is)[0]
        yield from _closest_calls(column, measured[0], kept, ctx.spans_batches, named)
        yield from _cadences_call(ctx, column, measured[0], kept, named)
    yield from grid_calls
    yield from _present(finding)


def _closest_calls(
    column: ColumnContract, d0: float, shape_kept: bool, multi: bool, named: bool
) -> Iterator[ClosestCall]:
    """d0 against `far` (crossing it blocks where the shape was kept: SCALE_SHIFT) and against `unexplained`
    (crossing it blocks either way: a blocking DRIFT, or the SCALE_SHIFT first). Neither decides for a named
    conversion or a whole table of several batches, nor `unexplained` for a column its contract makes drift-blocking."""
    free = not multi and not named
    yield ClosestCall("far", column.name, d0, POLICY.far, decides=free and shape_kept)
    yield ClosestCall("unexplained", column.name, d0, POLICY.unexplained, decides=free and not column.drift_blocking)


def _cadences_call(
    ctx: GuardContext, column: ColumnContract, d0: float, shape_kept: bool, named: bool
) -> Iterator[ClosestCall]:
    """The cadences the snapshot spans against `policy.multi_batch_cadences` (fewer: one batch): deciding where, no
    unit named, the distance would block one batch (beyond `far` with its shape kept, or beyond `unexplained`)."""
    spanned = ctx.cadences_spanned
    if spanned is None:
        return
    blocks = (d0 > POLICY.far and shape_kept) or (d0 > POLICY.unexplained and not column.drift_blocking)
    decides = not named and blocks
    yield ClosestCall("multi_batch_cadences", column.name, spanned, POLICY.multi_batch_cadences, False, decides)


def _unit_mismatch(
    urn: str, name: str, declared: str, actual: str, *, observed: object, expected: object, message: str
) -> Finding:
    """A column in `actual` where the contract declares `declared`: a block, healed by the unit_rescale playbook
    with the conversion's exact factor and offset."""
    scale, offset = conversion(declared, actual)
    return make_finding(
        FindingKind.UNIT_MISMATCH,
        urn,
        name,
        observed=observed,
        expected=expected,
        message=message,
        playbook="unit_rescale",
        declared_unit=declared,
        actual_unit=actual,
        scale=scale,
        offset=offset,
    )


# --- against a batch reference: natural variation -------------------------------------------------


@dataclass(frozen=True)
class _Hypothesis:
    unit: str
    scale: float
    offset: float
    batch: Core
    distance: float  # of the batch converted back from `unit`
    jump: float  # of the step from the newest reference batch to the batch converted back


def _batch_finding(
    urn: str,
    column: ColumnContract,
    natural: Natural,
    ref: ColumnProfile,
    observed: ColumnProfile,
    as_is: Core,
    measured: tuple[float | None, float],
    multi: bool,
    calls: list[ClosestCall],
) -> Finding | None:
    """The finding of a column with a unit, `as_is` its batch's core and `measured` its distance from `natural` and
    jump (`Natural.measure`); the closest calls of the grid's limits go to `calls`."""
    assert observed.sketch is not None and ref.sketch is not None and column.unit is not None
    atom = natural.atom
    d0, jump0 = measured
    if d0 is None or (as_is.quantiles is None and as_is.count > 0 and d0 <= POLICY.far):
        return _unchecked(urn, column, as_is, d0)
    grid = _Grid.of(ref.sketch, observed.sketch)
    hypotheses: list[_Hypothesis] = []
    declared = column.unit

    def tried_units() -> list[_Hypothesis]:
        """Every unit of the declared one's group, converted back and measured, nearest first (tried once)."""
        if not hypotheses:
            hypotheses.extend(sorted(_hypotheses(declared, observed, natural), key=lambda h: (h.distance, h.unit)))
        return hypotheses

    calls += _grid_calls(column.name, ref.sketch, observed.sketch, tried_units, d0, multi)
    if d0 <= 1 and grid is None:
        return None
    typical = core(ref.sketch, atom)
    tried = tried_units()
    best = tried[0] if tried else None
    evidence = {
        "distance": round(d0, 3),
        "jump": round(jump0, 3),
        "far": POLICY.far,
        "median": observed.quantile(0.5),
        "candidates": {h.unit: round(h.distance, 3) for h in tried[:4]},
    }
    regridded = grid.restored_by(tried, d0, multi) if grid is not None else None
    if regridded is not None:
        assert grid is not None
        evidence["grid"] = {"step": grid.step, "off_grid_as_it_came": round(grid.off_share, 4)}
        return _mismatch(urn, column, typical, regridded, evidence)
    if d0 <= 1:
        return None
    rescaled = natural.keeps_shape(as_is)
    evidence["shape_distance"] = None if rescaled[1] is None else round(rescaled[1], 3)
    # the rival of a conversion with an offset (degC to degF): the one factor that brings the batch nearest natural
    # variation; a conversion is named only where it explains the batch better (a zero-offset one is such a factor)
    rival = natural.plain_rescale(observed.sketch, ref.sketch) if best is not None and best.offset else None
    if rival is not None:
        evidence["plain_rescale"] = {"factor": round(rival[0], 6), "distance": round(rival[1], 3)}
    beaten = rival is not None and best is not None and rival[1] <= best.distance
    if best is not None and not beaten and _explains(d0, jump0, best) and natural.keeps_shape(best.batch)[0]:
        runner = _runner_up(tried, d0, jump0, natural)
        found = _mismatch(urn, column, typical, best, evidence)
        if runner is None:
            return found
        return replace(
            found,
            observed={**found.observed, "explained_by": [best.unit, runner.unit]},
            playbook=None,
            message=f"{column.name!r} is not in {column.unit}: converted back from {best.unit} (x{best.scale:.6g}) or "
            f"from {runner.unit} (x{runner.scale:.6g}) it is inside its natural variation either way, so this "
            f"batch cannot say which; healed only by the verified heal of {best.unit}, if this failure had one "
            "(a person names the unit, or a larger batch does)",
        )
    if d0 > POLICY.far and rescaled[0] and not multi:
        return make_finding(
            FindingKind.SCALE_SHIFT,
            urn,
            column.name,
            observed=evidence,
            expected=_expected(column, ref),
            message=f"{column.name!r} moved {d0:.1f}x as far as its natural variation allows (limit {POLICY.far:g}) and no "
            f"unit of {column.unit} explains it (closest: {_closest(best)})",
        )
    return make_finding(
        FindingKind.DRIFT,
        urn,
        column.name,
        observed=evidence,
        expected=_expected(column, ref),
        severity=Severity.BLOCK if column.drift_blocking or (d0 > POLICY.unexplained and not multi) else Severity.WARN,
        statistic="natural_variation",
        message=f"{column.name!r} moved beyond the natural variation of past batches ({d0:.2f}x the band"
        f"{_why_not_blocked(d0, rescaled[0], multi)}",
    )


@dataclass(frozen=True)
class _Grid:
    """The decimal grid every reference value sits on (0.1 mm, whole W/m2), and the batch's values that
    left it. A conversion moves values off their grid, and converting back by the same factor and offset puts
    them exactly on it again: evidence no slow cycle can give, even where the values stay within natural variation
    (a month of small amounts in inches) or where the batch is unlike any past one (a week of low readings in
    kW/m2)."""

    step: float
    values: np.ndarray  # the batch's non-zero values (from its sketch's retained items)
    off_share: float  # of them, off the grid as they came
    low: float  # the reference's range
    high: float

    @classmethod
    def of(cls, reference: QuantileSketch, batch: QuantileSketch) -> _Grid | None:
        """None unless the reference has a grid and at least `policy.grid_off` of the batch's values are off it."""
        known = weighted_items(reference)[0]
        step = 2 * resolution(known[known != 0]) if np.count_nonzero(known) >= POLICY.min_grid_values else 0.0
        values = weighted_items(batch)[0]
        values = values[values != 0]
        if not step or len(values) < POLICY.min_grid_values:
            return None
        off = 1.0 - _share_on(values, step)
        return cls(step, values, off, float(known.min()), float(known.max())) if off >= POLICY.grid_off else None

    def restored_by(self, tried: list[_Hypothesis], d0: float, multi: bool) -> _Hypothesis | None:
        """The nearest unit whose conversion, undone, puts `policy.grid_on` of the values back on the grid and the batch
        nearer its natural variation than it came (a finer precision read as cm is not: x10 moves it away). A
        whole table of several batches has no natural variation of one batch to come nearer to (its cycles'
        stretches are all there at once): there, nearer is more of its values inside the range the reference showed."""
        for hypothesis in tried:  # nearest first
            back = (self.values - hypothesis.offset) / hypothesis.scale
            nearer = hypothesis.distance < d0 or (multi and self._inside(back) > self._inside(self.values))
            if nearer and _share_on(back, self.step) >= POLICY.grid_on:
                return hypothesis
        return None

    def _inside(self, values: np.ndarray) -> float:
        return float(np.mean((values >= self.low) & (values <= self.high)))


def _grid_calls(
    name: str,
    reference: QuantileSketch,
    batch: QuantileSketch,
    tried: Callable[[], list[_Hypothesis]],
    d0: float,
    multi: bool,
) -> list[ClosestCall]:
    """The grid's three limits as `_Grid` compares them, where the reference's values sit on a step: the fewer of the
    reference's and the batch's non-zero values against `policy.min_grid_values`, the batch's share off the grid
    against `policy.grid_off`, and the most any unit that brings the batch nearer puts back on it against
    `policy.grid_on` (0 with no such unit); each deciding where the other two held (a UNIT_MISMATCH). A batch with
    every value on the grid has nothing a conversion could restore: its share off decides nothing."""
    known = weighted_items(reference)[0]
    known = known[known != 0]
    values = weighted_items(batch)[0]
    values = values[values != 0]
    step = 2 * resolution(known) if len(known) else 0.0
    if not step or not len(values):
        return []
    off = 1.0 - _share_on(values, step)
    back = 0.0
    if off > 0:
        grid = _Grid(step, values, off, float(known.min()), float(known.max()))
        back = max(
            (
                _share_on((values - h.offset) / h.scale, step)
                for h in tried()
                if h.distance < d0 or (multi and grid._inside((values - h.offset) / h.scale) > grid._inside(values))
            ),
            default=0.0,
        )
    enough = float(min(len(known), len(values)))
    calls = rule_calls(
        name,
        Condition("min_grid_values", enough, POLICY.min_grid_values, enough >= POLICY.min_grid_values),
        Condition("grid_off", off, POLICY.grid_off, off >= POLICY.grid_off),
        Condition("grid_on", back, POLICY.grid_on, back >= POLICY.grid_on),
    )
    return [c if off > 0 or c.threshold != "grid_off" else replace(c, decides=False) for c in calls]


def _share_on(values: np.ndarray, step: float) -> float:
    """The share of values that are whole multiples of `step` (to a relative 1e-6: conversions round-trip)."""
    steps = values / step
    return float(np.mean(np.abs(steps - np.round(steps)) <= 1e-6 * np.maximum(1.0, np.abs(steps))))


def _why_not_blocked(d0: float, shape_kept: bool, multi: bool) -> str:
    if d0 <= POLICY.far:
        return f"; a block needs {POLICY.far:g}x): a change a person may accept, not evidence of a failure"
    if multi:
        return "; a whole table of several batches is judged for named conversions only): a change a person may accept"
    shape = "its shape changed too, so no rescaling explains it" if not shape_kept else "no cause explains it"
    return f", over {POLICY.far:g}x; {shape}): evidence of a failure, not a slow cycle; find what changed upstream"


def _explains(d0: float, jump0: float, best: _Hypothesis) -> bool:
    """A good fit: far out as it came and back within drift converted back; or out as it came and a jump
    from the newest reference batch beyond `policy.far`, while converted back it is inside natural variation and
    continues from that batch as the reference batches' steps did."""
    if d0 > POLICY.far and best.distance <= 1:
        return True
    return d0 > 1 and jump0 > POLICY.far and best.distance <= 1


def _runner_up(tried: list[_Hypothesis], d0: float, jump0: float, natural: Natural) -> _Hypothesis | None:
    """The next-best unit when it too is a good fit and the best fits nearer by less than `policy.unit_margin`:
    the batch cannot tell the two apart (a short batch of lengths in metres or in yards), and a heal by the
    nearer would be a guess. None: the best unit stands alone."""
    best = tried[0]
    for other in tried[1:2]:
        near = other.distance - best.distance < POLICY.unit_margin
        if near and _explains(d0, jump0, other) and natural.keeps_shape(other.batch)[0]:
            return other
    return None


def _hypotheses(declared: str, observed: ColumnProfile, natural: Natural) -> Iterator[_Hypothesis]:
    assert observed.sketch is not None
    for unit in candidates_for(declared):
        scale, offset = conversion(declared, unit)
        back = core(observed.sketch, natural.atom, scale, offset)
        found, stepped = natural.measure(back)
        if found is not None:
            yield _Hypothesis(unit, scale, offset, back, found, stepped)


def _mismatch(
    urn: str, column: ColumnContract, typical: Core, best: _Hypothesis, evidence: Mapping[str, object]
) -> Finding:
    assert column.unit is not None
    seen = {
        **evidence,
        "unit": best.unit,
        "distance_converted_back": round(best.distance, 3),
        "jump_converted_back": round(best.jump, 3),
        **_core_fit(typical, best),
    }
    return _unit_mismatch(
        urn,
        column.name,
        column.unit,
        best.unit,
        observed=seen,
        expected={"unit": column.unit, "median": typical.median},
        message=f"{column.name!r} is in {best.unit}, the contract says {column.unit} (x{best.scale:.6g} "
        f"{best.offset:+.6g}): {_why_this_unit(best, evidence)}",
    )


def _why_this_unit(best: _Hypothesis, evidence: Mapping[str, object]) -> str:
    grid, as_came = evidence.get("grid"), float(evidence["distance"])  # type: ignore[arg-type]
    if not isinstance(grid, dict):
        return f"converted back it sits within natural variation ({best.distance:.2f}x the band), as it came {as_came}x"
    nearer = (
        f"nearer natural variation ({best.distance:.2f}x the band, as it came {as_came}x)"
        if best.distance < as_came
        else "more of them inside the range the reference showed (a whole table of several batches)"
    )
    return (
        f"converted back, its values sit on the reference's grid of {grid['step']:g} again "
        f"({grid['off_grid_as_it_came']:.0%} were off it as they came) and {nearer}"
    )


def _core_fit(reference: Core, best: _Hypothesis) -> dict[str, float]:
    """Least-squares observed ≈ scale * reference + offset on the cores' quantiles (evidence only)."""
    if reference.quantiles is None or best.batch.quantiles is None:
        return {}
    ref = np.array(reference.quantiles)
    obs = np.array(best.batch.quantiles) * best.scale + best.offset
    if np.ptp(ref) <= 0:
        return {}
    scale, offset = np.polyfit(ref, obs, 1)
    return {"fitted_scale": round(float(scale), 6), "fitted_offset": round(float(offset), 6)}


def _unchecked(urn: str, column: ColumnContract, batch: Core, d0: float | None) -> Finding:
    return make_finding(
        FindingKind.UNIT_UNCHECKED,
        urn,
        column.name,
        observed={
            "core_values": round(batch.count),
            "values": round(batch.total),
            "distance": None if d0 is None else round(d0, 3),
        },
        expected=f"at least {MIN_CORE} values beside the point mass",
        message=f"{column.name!r} has {batch.count:.0f} value(s) beside its point mass: too few to judge its unit "
        f"({column.unit}); judged on the point mass alone"
        if d0 is not None
        else f"{column.name!r}: no statistic of natural variation to judge its unit ({column.unit}) against",
    )


def _expected(column: ColumnContract, ref: ColumnProfile) -> dict[str, object]:
    return {"unit": column.unit, "median": ref.quantile(0.5)}


def _closest(best: _Hypothesis | None) -> str:
    return "none" if best is None else f"{best.unit} at {best.distance:.2f}x"


# --- against a batch's own kept profile (the history check) ------------------------------------------


def _its_own(reference: Reference, batch: BatchProfile | None) -> bool:
    """The reference is this batch's own profile, kept when it passed (the history check): the same rows."""
    return batch is not None and [b.batch_id for b in reference.batches] == [batch.batch_id]


def _kept_and_now(kept: ColumnProfile, now: ColumnProfile) -> np.ndarray | None:
    """(kept, today's) pairs of every profiled quantile and extreme of the same rows; None when they cannot show a
    map (fewer than two distinct kept values) or show none (every value as it was)."""
    pairs = [(k, now.quantile(q)) for q, k in kept.quantiles] + [
        (kept.minimum, now.minimum),
        (kept.maximum, now.maximum),
    ]
    known = np.array([(k, n) for k, n in pairs if k is not None and n is not None], dtype=float)
    if len(known) < 2 or len(np.unique(known[:, 0])) < 2 or np.allclose(known[:, 0], known[:, 1], rtol=1e-9, atol=0.0):
        return None
    return known


def _same_rows_converted(urn: str, column: ColumnContract, kept: ColumnProfile, now: ColumnProfile) -> Finding | None:
    """The same rows, every value converted: a named conversion maps each kept quantile and extreme onto today's
    exactly (a monotone map keeps each value's rank), however few values there are beside a point mass."""
    assert column.unit is not None
    known = _kept_and_now(kept, now)
    if known is None:
        return None
    for unit in candidates_for(column.unit):
        scale, offset = conversion(column.unit, unit)
        if np.allclose(known[:, 1], known[:, 0] * scale + offset, rtol=1e-6, atol=1e-9):
            return _unit_mismatch(
                urn,
                column.name,
                column.unit,
                unit,
                observed={"unit": unit, "median": now.quantile(0.5), "same_rows": True},
                expected={"unit": column.unit, "median": kept.quantile(0.5)},
                message=f"{column.name!r} is in {unit}, the contract says {column.unit} (x{scale:.6g} {offset:+.6g}): "
                "these rows passed earlier, and every kept quantile converted is today's exactly",
            )
    return None


# --- a column with no unit: one hypothesis, a rescaling by a factor no unit names ------------------------------


def _rescaled_without_unit(
    ctx: GuardContext, column: ColumnContract, observed: ColumnProfile, calls: list[ClosestCall]
) -> Finding | None:
    """A numeric column that declares no unit has no conversion to name, but one plan still inverts a rescaling
    (a count written per thousand, a share written as a percentage): dividing by one factor. SCALE_SHIFT (a block)
    where that plan alone explains the change:
    - the same rows that passed earlier (the history check): every kept quantile and extreme times one factor is
      today's exactly;
    - a new batch (a feature): it sits beyond `policy.unexplained` of natural variation as it came (where, with no
      cause named, the drift check blocks it), or it has values outside the contract's bounds (where the range
      check blocks it) and the factor that puts them back inside brings the batch nearer its natural variation too
      (a few bad values are not every value times one factor: dividing all by the factor that fits them moves the
      rest away; and a calendar field whose batches each hold another stretch of it varies so widely from batch
      to batch that its band says little where its bounds say much); its shape is one the
      reference batches had, and divided by the factor
      that brings it nearest its natural variation it is inside it (and inside the bounds). A slow cycle moves a
      level by steps and reshapes it; it does not multiply every value by one number. Either way the batch was
      blocked already: the name is what changes, never the verdict;
    - a new batch of a feature not blocked as it came: rescaled against a partner (`_rescaled_against_partner`,
      whose closest calls go to `calls`), a block."""
    assert ctx.contract is not None and ctx.snapshot is not None and ctx.reference_profile is not None
    reference, kept = ctx.reference, ctx.reference_profile.columns.get(column.name)
    if not isinstance(reference, Reference) or kept is None or not kept.quantiles:
        return None
    if _its_own(reference, ctx.snapshot.batch):
        return _same_rows_rescaled(ctx.dataset_urn, column.name, kept, observed)
    features = {c.name for c in ctx.contract.features}
    if column.name not in features or ctx.spans_batches or not (sketched(kept) and sketched(observed)):
        return None
    if reference.held_per_batch(column.name) or reference.holds_the_periods_value(column.name, observed):
        return None  # one value per batch: no spread to show a rescaling by
    assert observed.sketch is not None and kept.sketch is not None
    natural = Natural.of(reference, kept, None, reference.shorter_by(ctx.snapshot.batch))
    as_is = core(observed.sketch, natural.atom)
    d0 = natural.measure(as_is)[0]
    blocked = d0 is not None and (d0 > POLICY.unexplained or _outside(column, observed))
    if d0 is None or not natural.keeps_shape(as_is)[0]:
        return None
    if not blocked:
        return _rescaled_against_partner(ctx, column.name, observed, natural, d0, calls)
    rescaled = _within_bounds(column, observed, natural, natural.plain_rescale(observed.sketch, kept.sketch))
    if rescaled is None or rescaled[1] > 1 or (d0 <= POLICY.unexplained and rescaled[1] >= d0):
        return None  # out of bounds alone: the factor must bring the batch nearer natural variation too
    factor, back = rescaled
    return make_finding(
        FindingKind.SCALE_SHIFT,
        ctx.dataset_urn,
        column.name,
        observed={"distance": round(d0, 3), "factor": round(factor, 6), "distance_rescaled_back": round(back, 3)},
        expected={"median": kept.quantile(0.5), "far": POLICY.unexplained},
        message=f"{column.name!r} moved {d0:.1f}x as far as its natural variation allows and divided by {factor:.4g} "
        f"it is back inside ({back:.2f}x the band), its shape kept: rescaled upstream? (no unit is declared to name "
        "a conversion)",
    )


def _rescaled_against_partner(
    ctx: GuardContext, name: str, observed: ColumnProfile, natural: Natural, d0: float, calls: list[ClosestCall]
) -> Finding | None:
    """SCALE_SHIFT (a block) for a feature not blocked as it came, when a partner says it was rescaled: a column it
    followed in every reference batch (|correlation| at least `policy.pair_scale_correlation`), against which its
    scale (`profiles.relations` "k:a|b", log(sd b / sd a)) moved from the middle of the range those batches span by
    more than `policy.far` bands (a band: one and a half times that range, and three sampling errors of the batch's
    own ratio). Two plans invert that move: the column divided by its factor, or the partner multiplied by it. The column
    is named when its plan brings it nearer its natural variation (and inside it) while the partner's would take the
    partner further from its own; otherwise the batch cannot say which of the two moved, and nothing is named. A
    level that drifts moves both columns of a pair that moves together; a rescaling of one moves it alone.

    Closest calls, per partner whose scale against the column moved: the least |correlation| its pair held over the
    reference batches against `pair_scale_correlation`, and the move against `far`, each deciding where the other
    held and the partner's plan named the column (read partner by partner, the farthest among those held named)."""
    assert ctx.snapshot is not None and ctx.reference_profile is not None and observed.sketch is not None
    reference = ctx.reference
    kept, now = ctx.reference_profile.relations, ctx.snapshot.profile.relations
    if kept is None or now is None or not isinstance(reference, Reference) or len(reference.batches) < 3:
        return None
    moves = list(_scale_moves(kept, now, name))
    for partner, factor, distance, held in moves:
        follows, moved = held >= POLICY.pair_scale_correlation, distance > POLICY.far
        named = (follows or moved) and _named_by(ctx, reference, observed, natural, d0, partner, factor) is not None
        calls += rule_calls(  # neither held: no call decides, and the plans are not tried
            name,
            Condition("pair_scale_correlation", held, POLICY.pair_scale_correlation, follows),
            Condition("far", distance, POLICY.far, moved),
            when=named,
        )
    followed = [move for move in moves if move[3] >= POLICY.pair_scale_correlation]
    farthest = max(followed, key=lambda move: move[2], default=None)
    if farthest is None or farthest[2] <= POLICY.far:
        return None
    partner, factor, distance, _ = farthest
    plans = _named_by(ctx, reference, observed, natural, d0, partner, factor)
    if plans is None:
        return None
    back, rival = plans
    return make_finding(
        FindingKind.SCALE_SHIFT,
        ctx.dataset_urn,
        name,
        observed={
            "distance": round(d0, 3),
            "partner": partner,
            "scale_distance": round(distance, 3),
            "factor": round(factor, 6),
            "distance_rescaled_back": round(back, 3),
            "partner_distance": [round(rival[0], 3), round(rival[1], 3)],
        },
        expected={"far": POLICY.far, "correlation_at_least": POLICY.pair_scale_correlation},
        message=f"{name!r} against {partner!r}, which it followed in every reference batch, moved {distance:.1f}x as far "
        f"as those batches allow (limit {POLICY.far:g}); divided by {factor:.4g}, {name!r} comes back from {d0:.2f}x to "
        f"{back:.2f}x its natural variation, while {partner!r} multiplied by it would leave its own ({rival[0]:.2f}x to "
        f"{rival[1]:.2f}x): rescaled upstream?",
    )


def _named_by(
    ctx: GuardContext,
    reference: Reference,
    observed: ColumnProfile,
    natural: Natural,
    d0: float,
    partner: str,
    factor: float,
) -> tuple[float, tuple[float, float]] | None:
    """(the column's distance divided by `factor`, the partner's as it came and multiplied by it) where the column's
    plan brings it nearer its natural variation and inside it while the partner's would take the partner further
    from its own; None where the batch cannot say which of the two moved."""
    assert observed.sketch is not None
    back = natural.measure(core(observed.sketch, natural.atom, factor))[0]
    rival = _distances(ctx, reference, partner, 1 / factor)
    if back is None or back > 1 or back >= d0 or rival is None or rival[1] <= rival[0]:
        return None
    return back, rival


def _scale_moves(kept: Relations, now: Relations, name: str) -> Iterator[tuple[str, float, float, float]]:
    """(partner, factor, distance, held) for each numeric column paired with `name`: the factor `name` would have
    been multiplied by to move the pair's scale as far as the batch did, that move in bands (see
    `_rescaled_against_partner`), and the least |correlation| the pair held over the reference batches (a partner
    is followed at `policy.pair_scale_correlation` or more)."""
    for key, pair in now.pairs.items():
        a, b = key.split("|")
        ratio = pair.log_scale
        if name not in (a, b) or pair.correlation is None or ratio is None or pair.n < 3:
            continue
        held, scale = kept.spread.get(f"r:{key}"), kept.spread.get(f"k:{key}")
        if held is None or scale is None:
            continue
        low, high = scale
        error = math.sqrt(max(1.0 - pair.correlation**2, 0.0) / (pair.n - 2))  # of a log ratio of two spreads
        band = 1.5 * (high - low) + 3 * error
        if band <= 0:
            continue
        moved = ratio - (low + high) / 2
        yield (b if name == a else a), math.exp(-moved if name == a else moved), abs(moved) / band, held[0]


def _distances(ctx: GuardContext, reference: Reference, name: str, factor: float) -> tuple[float, float] | None:
    """A numeric column's distance from its natural variation as it came and divided by `factor` (None: unknown)."""
    assert ctx.snapshot is not None and ctx.reference_profile is not None
    observed, kept = ctx.snapshot.profile.columns.get(name), ctx.reference_profile.columns.get(name)
    if observed is None or kept is None or not (sketched(observed) and sketched(kept)) or observed.sketch is None:
        return None
    natural = Natural.of(reference, kept, None, reference.shorter_by(ctx.snapshot.batch))
    as_is = natural.measure(core(observed.sketch, natural.atom))[0]
    moved = natural.measure(core(observed.sketch, natural.atom, factor))[0]
    return None if as_is is None or moved is None else (as_is, moved)


def _outside(column: ColumnContract, observed: ColumnProfile, factor: float = 1.0) -> bool:
    """Whether the batch divided by `factor` has a value outside the contract's bounds (where the range check
    blocks). Divided back, a value may miss its bound by the rounding the writer did after rescaling (half the step
    of the batch's values, over the factor: whole weeks times 2.5 written as whole numbers), and by float rounding."""
    assert observed.minimum is not None and observed.maximum is not None
    written = _written(observed) if factor != 1.0 else 0.0

    def slack(bound: float) -> float:
        return written / factor + 1e-9 * max(1.0, abs(bound))

    low, high = observed.minimum / factor, observed.maximum / factor
    return (column.minimum is not None and low < column.minimum - slack(column.minimum)) or (
        column.maximum is not None and high > column.maximum + slack(column.maximum)
    )


def _written(observed: ColumnProfile) -> float:
    """Half the step the batch's values are written on (0.5 for whole numbers), from its sketch's retained items."""
    return resolution(weighted_items(observed.sketch)[0]) if observed.sketch is not None else 0.0


def _within_bounds(
    column: ColumnContract, observed: ColumnProfile, natural: Natural, rescaled: tuple[float, float] | None
) -> tuple[float, float] | None:
    """The rescale (factor, distance) whose inverse also keeps the contract's bounds: the nearest one if it does,
    else the nearest of the factors that keep both (positive bounds: from the maximum's over the upper bound to the
    minimum's over the lower, each widened by the writer's rounding; tried at its ends and its middle, and the
    factors that put an extreme on its bound), since the search's nearest factor is only as exact as a batch of
    repeated values lets it be (clamped into that range it would be one of its ends); None when no factor keeps
    both."""
    if rescaled is None or not _outside(column, observed, rescaled[0]):
        return rescaled
    assert observed.sketch is not None and observed.minimum is not None and observed.maximum is not None
    written, lowest, highest = _written(observed), 0.0, math.inf
    if column.maximum is not None and column.maximum > 0 and observed.maximum > 0:
        lowest = (observed.maximum - written) / column.maximum
    if column.minimum is not None and column.minimum > 0 and observed.minimum > 0:
        highest = (observed.minimum + written) / column.minimum
    ends = [f for f in (lowest, highest) if 0 < f < math.inf]
    extremes = ((observed.maximum, column.maximum), (observed.minimum, column.minimum))
    onto = [value / bound for value, bound in extremes if bound]
    tried = {*ends, *([sum(ends) / 2] if len(ends) == 2 else []), *onto}
    kept = []
    for factor in sorted(f for f in tried if f > 0 and not _outside(column, observed, f)):
        found = natural.measure(core(observed.sketch, natural.atom, factor))[0]
        if found is not None:
            kept.append((factor, found))
    return min(kept, key=lambda pair: pair[1], default=None)


def _same_rows_rescaled(urn: str, name: str, kept: ColumnProfile, now: ColumnProfile) -> Finding | None:
    """The same rows, every value times one factor: each kept quantile and extreme maps onto today's exactly."""
    known = _kept_and_now(kept, now)
    if known is None:
        return None
    factor = float(known[:, 0] @ known[:, 1] / (known[:, 0] @ known[:, 0]))
    if factor <= 0 or not np.allclose(known[:, 1], known[:, 0] * factor, rtol=1e-6, atol=1e-9):
        return None
    return make_finding(
        FindingKind.SCALE_SHIFT,
        urn,
        name,
        observed={"factor": round(factor, 6), "median": now.quantile(0.5), "same_rows": True},
        expected={"median": kept.quantile(0.5)},
        message=f"{name!r} is x{factor:.6g} what it was: these rows passed earlier, and every kept quantile times "
        f"{factor:.6g} is today's exactly (no unit is declared to name a conversion)",
    )


# --- against a bare whole-table profile -----------------------------------------------------------


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


def _profile_calls(
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


def _profile_finding(
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
    return _unit_mismatch(
        urn,
        name,
        declared,
        actual,
        observed={**seen, "unit": actual},
        expected=expected,
        message=f"{name!r} is in {actual}, the contract says {declared} (x{scale:.4g} {offset:+.4g})",
    )
