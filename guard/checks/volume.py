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

Closest calls, on every batch: the rows over the expected rows times the lowest rate seen over the median (a drop
below `volume_min_row_fraction`) and times the highest (a spike above `volume_spike_factor`): the same comparison as
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
from profiles.reference import Reference

__all__ = ["check_volume", "expected_volume", "volume_limits", "Expectation"]


@dataclass(frozen=True)
class Expectation:
    rows: float  # rows expected of the snapshot
    low: float  # the lowest reference rate over the median rate (<= 1)
    high: float  # the highest over the median (>= 1)
    basis: str  # how `rows` was reached, for the finding


@register("volume", per_column=False, needs_reference=True)
def check_volume(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot and ctx.reference is not None
    expected = expected_volume(ctx)
    if expected.rows <= 0:
        return  # nothing to expect (an empty reference)
    observed = ctx.snapshot.profile.row_count
    yield from _closest_calls(observed, expected)
    minimum, maximum = _limits(expected)
    shown = round(expected.rows, 1)
    if observed < minimum:
        yield make_finding(
            FindingKind.VOLUME_DROP,
            ctx.dataset_urn,
            None,
            observed=observed,
            expected=minimum,
            reference_rows=shown,
            fraction=round(observed / expected.rows, 6),
            basis=expected.basis,
            message=f"the snapshot has {observed} rows, {observed / expected.rows:.1%} of the {shown:g} expected "
            f"({expected.basis}); at least {minimum} are expected: look for a partial load upstream",
        )
    elif observed > maximum:
        yield make_finding(
            FindingKind.VOLUME_SPIKE,
            ctx.dataset_urn,
            None,
            observed=observed,
            expected=maximum,
            reference_rows=shown,
            fraction=round(observed / expected.rows, 6),
            basis=expected.basis,
            message=f"the snapshot has {observed} rows, {observed / expected.rows:.1f}x the {shown:g} expected "
            f"({expected.basis}); at most {maximum} are expected: a table loaded more than once, or a "
            "join that fanned out?",
        )


def _closest_calls(observed: int, expected: Expectation) -> Iterator[ClosestCall]:
    low, high = expected.rows * expected.low, expected.rows * expected.high
    yield ClosestCall(
        "volume_min_row_fraction", None, observed / low if low > 0 else math.inf, POLICY.volume_min_row_fraction, False
    )
    yield ClosestCall("volume_spike_factor", None, observed / high, POLICY.volume_spike_factor)


def volume_limits(ctx: GuardContext) -> tuple[int, int] | None:
    """The least and the most rows the check accepts of the snapshot (None: it expects nothing, or cannot say)."""
    if ctx.snapshot is None or ctx.reference is None:
        return None
    expected = expected_volume(ctx)
    return _limits(expected) if expected.rows > 0 else None


def _limits(expected: Expectation) -> tuple[int, int]:
    return (
        math.ceil(expected.rows * POLICY.volume_min_row_fraction * expected.low),
        math.floor(expected.rows * POLICY.volume_spike_factor * expected.high),
    )


def expected_volume(ctx: GuardContext) -> Expectation:
    """The rows the snapshot is expected to hold, and the natural spread of the reference's rates."""
    reference = ctx.reference
    if not isinstance(reference, Reference):
        rows = float(reference.row_count) if reference is not None else 0.0
        return Expectation(rows, 1.0, 1.0, "the reference table's rows")
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
