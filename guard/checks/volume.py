"""Volume: the snapshot's rows against the rows the reference expects of it, too few or too many.

Against a batch `Reference` the expectation follows the cadence: the reference batches' median rate
(rows per millisecond of the batch's span) times the time the snapshot covers — its window up to `now`
when it was cut by one (a week still open, or the last days of a year, expects its share of a week),
else the time between its first and last rows plus one typical row interval (a whole table expects a
whole table's rows). Without time information, the median reference batch. Against a bare whole-table
profile, that profile's row count.

A periodic table (`Reference.periodic`: a panel, a periodic aggregate, a snapshot, where every row of a batch
shares its period's time) is counted in periods, not in time: the reference's median rows per period times the
periods (distinct times) the snapshot holds, spread by the reference's lowest and highest rows per period. A
period's time says which period it is, not when its rows came, so a time rate would expect rows per
millisecond of a one-instant batch, or a whole period more for every step of the clock past it.

The natural spread of the reference batches' rates widens both limits: a drop is fewer than
`policy.volume_min_row_fraction` of the expected rows (times the lowest rate seen over the median, when below 1); a
spike is more than `policy.volume_spike_factor` times them (times the highest rate seen over the median, when above 1).
volume_min_row_fraction = 0.8, chosen with each domain of the corpus left out: a batch missing a fifth of its rows
below the lowest rate the reference saw is a partial load. volume_spike_factor = 3: a table loaded twice plus one
more partition passes it, one loaded three times (or forty) does not.

A full grid is counted to the row. Where every reference batch (at least `policy.volume_grid_batches`) holds the
same whole number k of rows at each of its slots, one slot every `step` from its first time to its last (a regular
series: one row an hour, two causes a day; a panel: the same k entities at one instant), the batch is expected to
hold k rows at each slot between its own first and last times. The history shows no spread to allow for: a
batch lacking `policy.volume_grid_slack_rows` rows is still whole (a reading missed once, a local clock's hour
that never was in UTC), one lacking more has lost rows (a load that dropped some, entities gone from the panel),
named with the slots' count. The step is the reference batches' median time per slot; a batch's slots are those
from its first time to its last (its span over the step, rounded, plus one: steps of unequal length, a month,
still count whole), and batches next to each other must meet one step apart (a week of weekdays is whole from
Monday to Friday, but the next starts three steps on); each batch's own time per slot must lie within
`policy.volume_grid_step_spread` of the step, or the slots are of no one length (business days) and there is no
grid.

Closest calls, on every batch: the rows a full grid lacks (over `volume_grid_slack_rows`), where there is one; the
rows over the expected rows times the lowest rate seen over the median (a drop below `volume_min_row_fraction`,
deciding only where there is no grid) and times the highest (a spike above `volume_spike_factor`): the same comparison as
the limits, since a whole number of rows is under ceil(x) exactly when it is under x.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Iterator

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.registry import register
from profiles.reference import BatchSummary, Reference

__all__ = ["check_volume", "expected_volume", "volume_limits", "Expectation"]


@dataclass(frozen=True)
class Expectation:
    rows: float  # rows expected of the snapshot
    low: float  # the lowest reference rate over the median rate (<= 1)
    high: float  # the highest over the median (>= 1)
    basis: str  # how `rows` was reached, for the finding
    exact: bool = False  # a full grid: no row fewer is natural


@register("volume", per_column=False, needs_reference=True)
def check_volume(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot and ctx.reference is not None
    expected = expected_volume(ctx)
    if expected.rows <= 0:
        return  # nothing to expect (an empty reference)
    observed = ctx.snapshot.profile.row_count + ctx.rows_set_aside  # a heal's training view lacks them, not the batch
    yield from _closest_calls(observed, expected)
    minimum, maximum = _limits(expected)
    if minimum <= observed <= maximum:
        return
    shown, fraction, drop = round(expected.rows, 1), observed / expected.rows, observed < minimum
    if drop:
        said = f"{fraction:.1%} of the {shown:g} expected ({expected.basis}); at least {minimum} are expected: look "
        said += "for a partial load upstream"
    else:
        said = f"{fraction:.1f}x the {shown:g} expected ({expected.basis}); at most {maximum} are expected: a table "
        said += "loaded more than once, or a join that fanned out?"
    yield make_finding(
        FindingKind.VOLUME_DROP if drop else FindingKind.VOLUME_SPIKE,
        ctx.dataset_urn,
        None,
        observed=observed,
        expected=minimum if drop else maximum,
        reference_rows=shown,
        fraction=round(fraction, 6),
        basis=expected.basis,
        message=f"the snapshot has {observed} rows, {said}",
    )


def _closest_calls(observed: int, expected: Expectation) -> Iterator[ClosestCall]:
    low, high = expected.rows * expected.low, expected.rows * expected.high
    if expected.exact:  # a full grid: the rows it lacks decide, not a share of them
        yield ClosestCall("volume_grid_slack_rows", None, expected.rows - observed, POLICY.volume_grid_slack_rows)
    yield ClosestCall(
        "volume_min_row_fraction",
        None,
        observed / low if low > 0 else math.inf,
        POLICY.volume_min_row_fraction,
        False,
        decides=not expected.exact,
    )
    yield ClosestCall("volume_spike_factor", None, observed / high, POLICY.volume_spike_factor)


def volume_limits(ctx: GuardContext) -> tuple[int, int] | None:
    """The least and the most rows the check accepts of the snapshot (None: it expects nothing, or cannot say)."""
    if ctx.snapshot is None or ctx.reference is None:
        return None
    expected = expected_volume(ctx)
    return _limits(expected) if expected.rows > 0 else None


def _limits(expected: Expectation) -> tuple[int, int]:
    least = (
        expected.rows - POLICY.volume_grid_slack_rows
        if expected.exact
        else expected.rows * POLICY.volume_min_row_fraction * expected.low
    )
    return math.ceil(least), math.floor(expected.rows * POLICY.volume_spike_factor * expected.high)


def expected_volume(ctx: GuardContext) -> Expectation:
    """The rows the snapshot is expected to hold, and the natural spread of the reference's rates."""
    reference = ctx.reference
    if not isinstance(reference, Reference):
        rows = float(reference.row_count) if reference is not None else 0.0
        return Expectation(rows, 1.0, 1.0, "the reference table's rows")
    grid = _grid(ctx, reference)
    if grid is not None:
        return grid
    if reference.periodic:
        periods = _periods(ctx, reference)
        if periods is not None:
            return periods
    rates = [b.rows / b.span_ms for b in reference.batches if b.span_ms]
    covered = _covered_ms(ctx, reference, rates)
    if not rates or covered is None:
        return Expectation(reference.expected_rows, 1.0, 1.0, "the median reference batch")
    rate = statistics.median(rates)
    days = covered / 86_400_000
    return Expectation(
        rate * covered,
        min(1.0, min(rates) / rate),
        max(1.0, max(rates) / rate),
        f"{rate * 86_400_000:.4g} rows a day over {days:.3g} days",
    )


def _grid(ctx: GuardContext, reference: Reference) -> Expectation | None:
    """k rows at each slot from the snapshot's first time to its last, when every reference batch is such a full
    grid (None: it is not, or the snapshot's times are not known)."""
    assert ctx.snapshot is not None
    batch = ctx.snapshot.batch
    shape = grid_of(reference.batches)
    if shape is None or batch is None or batch.start_ms is None or batch.end_ms is None:
        return None
    per_slot, step = shape
    if step is None and batch.end_ms != batch.start_ms:
        return None  # one instant a batch: a snapshot of several is counted in periods
    slots = 1 if step is None else round((batch.end_ms - batch.start_ms) / step) + 1
    every = "at its one time" if step is None else f"every {_duration(step)} from its first time to its last"
    return Expectation(
        float(per_slot * slots), 1.0, 1.0, f"a full grid: {per_slot} row(s) {every}, {slots} slot(s)", exact=True
    )


def grid_of(batches: tuple[BatchSummary, ...]) -> tuple[int, float | None] | None:
    """(rows a slot, the step between slots; None: one instant a batch) when every batch is a full grid of one
    shape, else None. The step is the batches' median time per slot from first row to last (k rows a slot: a
    batch's rows over its distinct times). Every batch must hold exactly k rows at each slot from its first time to
    its last, and two batches next to each other (their gap shorter than two batches' span: not a batch kept from a
    year before) must meet one step apart, with at least one such pair: a week of weekdays is a full grid from
    Monday to Friday, but the next week starts three steps later."""
    timed = sorted(
        (b for b in batches if b.start_ms is not None and b.end_ms is not None and b.rows > 0),
        key=lambda b: b.start_ms or 0,
    )
    if len(timed) < POLICY.volume_grid_batches or len(timed) != len(batches):
        return None
    spans = [(b.rows, (b.end_ms or 0) - (b.start_ms or 0), b.instants) for b in timed]
    if all(span == 0 for _, span, _ in spans):
        counts = {rows for rows, _, _ in spans}
        return (counts.pop(), None) if len(counts) == 1 else None
    if any(span == 0 or not instants for _, span, instants in spans):
        return None
    per_slot = round(statistics.median(rows / instants for rows, _, instants in spans if instants))
    if per_slot < 1 or any(rows <= per_slot for rows, _, _ in spans):
        return None
    steps = [span / (rows / per_slot - 1) for rows, span, _ in spans]
    step = statistics.median(steps)
    if any(abs(s - step) > POLICY.volume_grid_step_spread * step for s in steps):
        return None  # slots of no one length (business days, a month of weekdays): not a grid, however it counts
    if any(rows != per_slot * (round(span / step) + 1) for rows, span, _ in spans):
        return None
    reach = 2 * max(span for _, span, _ in spans)
    gaps = [(b.start_ms or 0) - (a.end_ms or 0) for a, b in zip(timed, timed[1:])]
    meeting = [round(gap / step) for gap in gaps if 0 < gap <= reach]
    if not meeting or any(slots != 1 for slots in meeting):
        return None  # no two batches seen to meet, or slots empty between them: no grid across their edges
    return per_slot, step


def _duration(ms: float) -> str:
    for unit, length in (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1000)):
        if ms >= length:
            return f"{ms / length:.3g} {unit}s"
    return f"{ms:.3g} ms"


def _periods(ctx: GuardContext, reference: Reference) -> Expectation | None:
    """Rows per period times the snapshot's periods (None: the snapshot's distinct times are not known)."""
    assert ctx.snapshot is not None
    clock = ctx.snapshot.profile.columns.get(reference.time_column or "")
    batch = ctx.snapshot.batch
    if batch is not None and batch.start_ms is not None and batch.start_ms == batch.end_ms:
        periods: float | None = 1.0
    else:
        periods = clock.distinct_count if clock is not None else None
    if periods is None or periods <= 0:
        return None
    per_period = [b.rows / b.instants for b in reference.batches if b.instants]
    rate = statistics.median(per_period)
    periods = float(round(periods))
    return Expectation(
        rate * periods,
        min(1.0, min(per_period) / rate),
        max(1.0, max(per_period) / rate),
        f"{rate:.4g} rows a period over {periods:g} period{'s' if periods != 1 else ''}",
    )


def _covered_ms(ctx: GuardContext, reference: Reference, rates: list[float]) -> float | None:
    """The time the snapshot covers: its window up to now, else its rows' time span plus one row interval."""
    assert ctx.snapshot is not None
    window = ctx.snapshot.window
    if window is not None and window.after_ms is not None and window.through_ms is not None:
        end = min(window.through_ms, ctx.now_ms) if ctx.now_ms > window.after_ms else window.through_ms
        return float(end - window.after_ms)
    batch = ctx.snapshot.batch
    if batch is None or batch.start_ms is None or batch.end_ms is None or not rates:
        return None
    return float(batch.end_ms - batch.start_ms) + 1.0 / statistics.median(rates)
