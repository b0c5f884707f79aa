"""Label freshness: the label watermark's lag against the SLA, and the share of rows still unlabelled."""
from __future__ import annotations

from typing import Iterator

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register

__all__ = ["check_label_freshness"]

_HOUR_MS = 3_600_000
CLOCK_SKEW_HOURS = 3.0  # a label watermark further than this past `now` is a clock or timezone error


@register("label_freshness", per_column=False)
def check_label_freshness(ctx: GuardContext) -> Iterator[Finding]:
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
            FindingKind.TIMESTAMP_UNPARSEABLE, urn, stamp_column, observed=stamps.logical_type, expected="timestamp",
            message=f"label timestamp {stamp_column!r} is {stamps.logical_type} with no readable maximum; "
                    "the label watermark cannot be established")
        return
    lag_hours = (ctx.now_ms - stamps.maximum) / _HOUR_MS
    if -lag_hours > CLOCK_SKEW_HOURS:
        yield make_finding(
            FindingKind.TIMESTAMP_UNPARSEABLE, urn, stamp_column, observed=int(stamps.maximum),
            expected=f"at most {CLOCK_SKEW_HOURS:g} h after now ({ctx.now_ms})", watermark_ms=int(stamps.maximum),
            message=f"newest label is {-lag_hours:.1f} h in the future: timestamps written in a local timezone, or a "
                    "clock error; the label watermark cannot be trusted")
        return
    if lag_hours > contract.label_freshness_hours:
        yield make_finding(
            FindingKind.LABEL_STALE, urn, stamp_column, observed=round(lag_hours, 3),
            expected=contract.label_freshness_hours, playbook=None, watermark_ms=int(stamps.maximum),
            message=f"newest label is {lag_hours:.1f} h old, the SLA is {contract.label_freshness_hours:g} h")


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
            FindingKind.LABEL_IMMATURE, ctx.dataset_urn, contract.label_column, observed=round(fraction, 6),
            expected=contract.max_immature_label_fraction, playbook="label_window",
            watermark_ms=int(stamps.maximum) if stamps and stamps.maximum is not None else None, event_column=contract.event_timestamp_column,
            message=f"{fraction:.1%} of rows have no label yet (limit {contract.max_immature_label_fraction:.1%})")
