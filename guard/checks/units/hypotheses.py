"""Units against natural variation (`guard.checks.units`, steps 1 to 6): every unit of the declared unit's group
tried as a hypothesis, the batch converted back from it and measured as it came; a good fit names the unit, a
decimal grid the reference's values sat on and the batch left names it from the values themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterator, Mapping

import numpy as np

from guard.contract import ColumnContract
from guard.findings import ClosestCall, Condition, Finding, make_finding, rule_calls
from guard.kinds import FindingKind, Severity
from guard.policy import DEFAULT as POLICY
from guard.units import candidates_for, conversion
from guard.variation import (
    MIN_CORE,
    Core,
    Natural,
    core,
    weighted_items,
)
from profiles.profile import ColumnProfile
from profiles.relations import resolution
from profiles.sketches import QuantileSketch


def unit_mismatch_of(
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


@dataclass(frozen=True)
class _Hypothesis:
    unit: str
    scale: float
    offset: float
    batch: Core
    distance: float  # of the batch converted back from `unit`
    jump: float  # of the step from the newest reference batch to the batch converted back


def batch_finding(
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
    return unit_mismatch_of(
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
