"""Label freshness: the label watermark's lag against the SLA, and the share of rows still unlabelled;
and timestamps that no clock could have written for this table (the epoch, centuries away).

Closest calls: the hours the newest label lies past now, against `clock_skew_hours`; per timestamp column, the
horizons its times reach beyond the reference's (or now), against `plausible_horizons`. Crossing either blocks."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Iterator

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.registry import register

__all__ = ["check_label_freshness", "check_timestamp_range", "plausible_times"]

_HOUR_MS = 3_600_000


@register("label_freshness", per_column=False)
def check_label_freshness(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    contract, snapshot, urn = ctx.contract, ctx.snapshot, ctx.dataset_urn
    assert contract and snapshot
    yield from _immature(ctx)
    stamp_column = contract.label_timestamp_column
    if stamp_column is None or contract.label_freshness_hours is None:
        return
    stamps = snapshot.profile.columns.get(stamp_column)
    if stamps is None:
        return  # reported by the schema check as a missing column
    if stamps.logical_type != "timestamp" or stamps.maximum is None:
        yield make_finding(
            FindingKind.TIMESTAMP_UNPARSEABLE,
            urn,
            stamp_column,
            observed=stamps.logical_type,
            expected="timestamp",
            message=f"label timestamp {stamp_column!r} is {stamps.logical_type} with no readable maximum; "
            "the label watermark cannot be established",
        )
        return
    lag_hours = (ctx.now_ms - stamps.maximum) / _HOUR_MS
    # closest call: the hours the newest label lies past now, against the skew a clock may have (crossing it blocks)
    yield ClosestCall("clock_skew_hours", stamp_column, -lag_hours, ctx.policy.clock_skew_hours)
    if -lag_hours > ctx.policy.clock_skew_hours:
        yield make_finding(
            FindingKind.TIMESTAMP_UNPARSEABLE,
            urn,
            stamp_column,
            observed=int(stamps.maximum),
            expected=f"at most {ctx.policy.clock_skew_hours:g} h after now ({ctx.now_ms})",
            watermark_ms=int(stamps.maximum),
            message=f"newest label is {-lag_hours:.1f} h in the future: timestamps written in a local timezone, or a "
            "clock error; the label watermark cannot be trusted",
        )
        return
    if lag_hours > contract.label_freshness_hours:
        yield make_finding(
            FindingKind.LABEL_STALE,
            urn,
            stamp_column,
            observed=round(lag_hours, 3),
            expected=contract.label_freshness_hours,
            playbook=None,
            watermark_ms=int(stamps.maximum),
            message=f"newest label is {lag_hours:.1f} h old, the SLA is {contract.label_freshness_hours:g} h",
        )


def _immature(ctx: GuardContext) -> Iterator[Finding]:
    contract, snapshot = ctx.contract, ctx.snapshot
    assert contract and snapshot
    label = snapshot.profile.columns.get(contract.label_column or "")
    if label is None:
        return
    fraction = label.null_fraction
    if fraction > contract.max_immature_label_fraction:
        stamps = snapshot.profile.columns.get(contract.label_timestamp_column or "")
        yield make_finding(
            FindingKind.LABEL_IMMATURE,
            ctx.dataset_urn,
            contract.label_column,
            observed=round(fraction, 6),
            expected=contract.max_immature_label_fraction,
            playbook="label_window",
            watermark_ms=int(stamps.maximum) if stamps and stamps.maximum is not None else None,
            event_column=contract.event_timestamp_column,
            message=f"{fraction:.1%} of rows have no label yet (limit {contract.max_immature_label_fraction:.1%})",
        )


@register("timestamp_range", needs_reference=True)
def check_timestamp_range(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    """Timestamps no clock could have written for this table: the epoch (zeroed bytes read as times), or
    further from the reference's times than `policy.plausible_horizons` times its span (at least a year). Blocks as
    OUT_OF_RANGE on the time column: every row-level judgement keyed on those times would be wrong."""
    assert ctx.contract and ctx.snapshot and ctx.reference_profile is not None
    for column in ctx.contract.columns:
        observed = ctx.snapshot.profile.columns.get(column.name)
        reference = ctx.reference_profile.columns.get(column.name)
        if (
            observed is None
            or observed.logical_type not in ("timestamp", "date")
            or observed.minimum is None
            or observed.maximum is None
            or reference is None
            or reference.minimum is None
            or reference.maximum is None
        ):
            continue
        low, high = plausible_times(reference.minimum, reference.maximum, ctx.now_ms)
        yield _horizons_call(column.name, observed.minimum, observed.maximum, reference.minimum, reference.maximum, ctx)
        if low <= observed.minimum and observed.maximum <= high:
            continue
        yield make_finding(
            FindingKind.OUT_OF_RANGE,
            ctx.dataset_urn,
            column.name,
            observed={"minimum": _iso(observed.minimum), "maximum": _iso(observed.maximum)},
            expected={"minimum": _iso(low), "maximum": _iso(high), "source": "reference times"},
            message=f"{column.name!r} spans {_iso(observed.minimum)} to {_iso(observed.maximum)}, outside the "
            f"plausible {_iso(low)} to {_iso(high)} for a table whose reference runs "
            f"{_iso(reference.minimum)} to {_iso(reference.maximum)}: zeroed bytes or a sentinel read as times?",
        )


_YEAR_MS = 365 * 24 * _HOUR_MS


def _horizons_call(
    name: str, first: float, last: float, reference_min: float, reference_max: float, ctx: GuardContext
) -> ClosestCall:
    """How many horizons (the reference's span, at least a year) the column's times reach before the reference's or
    after it (or now, if later), against `policy.plausible_horizons`: crossing it blocks (the epoch's own rule aside)."""
    horizon = max(reference_max - reference_min, _YEAR_MS)
    reach = max((reference_min - first) / horizon, (last - max(reference_max, float(ctx.now_ms))) / horizon)
    return ClosestCall("plausible_horizons", name, reach, POLICY.plausible_horizons)


def plausible_times(reference_min: float, reference_max: float, now_ms: int) -> tuple[float, float]:
    """[low, high] epoch ms a timestamp of this table may take; the epoch itself only if the reference has it."""
    horizon = POLICY.plausible_horizons * max(reference_max - reference_min, _YEAR_MS)
    low = reference_min - horizon
    if reference_min > _HOUR_MS * 24:
        low = max(low, 1.0)  # 1970-01-01T00:00:00.000 is what zeroed bytes read as
    return low, max(reference_max, float(now_ms)) + horizon


def _iso(ms: float) -> str:
    return (
        datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="seconds")
        if -6e13 < ms < 2.5e14
        else f"{ms:.0f} ms"
    )
