"""Domain: numbers inside the contract's limits and physics', categories inside the allowed set.

Ranges are judged on the snapshot's exact minimum and maximum (a full scan). A value outside the
contract's bounds blocks; so does an impossible one where the contract sets no bound on that side: what
the declared unit allows (`guard.units.limits`: no negative length or mass, no temperature
below absolute zero, a percentage in [0, 100]). Against a batch `Reference`, a value beyond the
reference batches' range by more than `policy.domain_reference_margin` of it, but possible, is a warning (OUT_OF_RANGE
at WARN: a storm beyond the last months' maximum is news, not a failure); the range moves with the batch's level
(its median against the reference's), since a level that moved carries its extremes along (prices on a trend). Categories are judged on
the exact value counts of string columns, against the contract's allowed values or, when the contract
lists none, against the values the reference has seen. A value equal to an allowed one once trimmed,
whitespace-collapsed and case-folded is miscased (CATEGORY_CASING, healed by its mapping); any other
unseen value is a NEW_CATEGORY — blocking against the contract, a warning against the reference (which
records history, not law) unless one of them is a known value written wrong (`guard.spellings`: a letter slipped,
two swapped, leetspeak), which blocks and names the value it resembles, or the reference's set is closed: no kept
batch after the first brought a value the ones before had not held, and the batch's rows of new values are more
than the rule of three over those values gives with a chance of `policy.category_false_alarm`
(`guard.statistics.never_seen_chance`; a column that gains a value now and then, as routes or products, stays open) — but for the period's name: a column every kept batch held on one value, one value
in this batch too (a month's name in a month's batch), is new in every batch by construction.
"""

from __future__ import annotations

import math
from typing import Iterator, Mapping

import pandas as pd

from guard.context import GuardContext
from guard.contract import ColumnContract
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind, Severity
from guard.registry import register
from guard.spellings import resembled
from guard.statistics import NeverSeen, is_categorical, never_seen_chance, normalize_category
from guard.units import limits
from profiles.profile import MAX_CATEGORIES, ColumnProfile
from profiles.reference import Reference

__all__ = [
    "check_domain",
    "casing_mapping",
    "MAX_LISTED_VALUES",
]

MAX_LISTED_VALUES = 20  # new values listed in a finding, most frequent first
_NUMERIC = ("integer", "number")


def casing_mapping(unseen: Mapping[str, int], allowed: frozenset[str]) -> dict[str, str]:
    """seen -> canonical, for each unseen value that normalizes to exactly one allowed value."""
    canonical: dict[str, str | None] = {}
    for value in sorted(allowed):
        key = normalize_category(value)
        canonical[key] = None if key in canonical else value  # two allowed spellings: ambiguous
    matches = {value: canonical.get(normalize_category(value)) for value in unseen}
    return {value: target for value, target in matches.items() if target is not None}


@register("domain")
def check_domain(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot
    for column in ctx.contract.columns:
        observed = ctx.snapshot.profile.columns.get(column.name)
        if observed is None:
            continue  # reported by the schema check as a missing column
        yield from _range_findings(ctx, column, observed)
        yield from _category_findings(ctx, column, observed)


def _range_findings(ctx: GuardContext, column: ColumnContract, observed: ColumnProfile) -> Iterator[Finding]:
    if observed.logical_type not in _NUMERIC or observed.minimum is None or observed.maximum is None:
        return  # not a number (the schema check), or no value at all (the nulls check)
    low, high, source = limits(column)
    below = low is not None and observed.minimum < low
    above = high is not None and observed.maximum > high
    if below or above:
        yield _out_of_range(ctx, column, observed, low, high, source)
        return
    beyond = _beyond_reference(ctx, column, observed)
    if beyond is not None:
        yield beyond


def _out_of_range(
    ctx: GuardContext,
    column: ColumnContract,
    observed: ColumnProfile,
    low: float | None,
    high: float | None,
    source: str,
) -> Finding:
    assert ctx.snapshot is not None and observed.minimum is not None and observed.maximum is not None
    outside, sampled = _outside(ctx.snapshot.sample, column.name, low, high)
    what = "the contract's bounds" if source == "contract" else f"what the contract and {column.unit} allow"
    return make_finding(
        FindingKind.OUT_OF_RANGE,
        ctx.dataset_urn,
        column.name,
        observed={"minimum": observed.minimum, "maximum": observed.maximum},
        expected={"minimum": low, "maximum": high},
        source=source,
        sample_rows_outside=outside,
        sample_rows=sampled,
        message=f"{column.name!r} spans [{observed.minimum:g}, {observed.maximum:g}], outside {what} "
        f"[{_bound(low)}, {_bound(high)}] ({outside} of {sampled} sampled values)",
    )


def _beyond_reference(ctx: GuardContext, column: ColumnContract, observed: ColumnProfile) -> Finding | None:
    """A warning: values past the reference batches' range, moved by as far as the batch's level moved, by more than
    `policy.domain_reference_margin` of it (plausible, new)."""
    if not isinstance(ctx.reference, Reference):
        return None  # a bare profile holds one table's extremes, not a range learned over batches
    reference = ctx.reference.columns.get(column.name)
    if reference is None or reference.minimum is None or reference.maximum is None:
        return None
    assert observed.minimum is not None and observed.maximum is not None
    share = ctx.policy.domain_reference_margin * _size_factor(observed.row_count, ctx.reference.expected_rows)
    margin = share * (reference.maximum - reference.minimum)
    moved = _level_moved(reference, observed)
    low, high = reference.minimum + min(moved, 0.0) - margin, reference.maximum + max(moved, 0.0) + margin
    if low <= observed.minimum and observed.maximum <= high:
        return None
    return make_finding(
        FindingKind.OUT_OF_RANGE,
        ctx.dataset_urn,
        column.name,
        severity=Severity.WARN,
        observed={"minimum": observed.minimum, "maximum": observed.maximum},
        expected={"minimum": low, "maximum": high},
        source="reference",
        message=f"{column.name!r} spans [{observed.minimum:g}, {observed.maximum:g}], beyond the reference "
        f"batches' [{reference.minimum:g}, {reference.maximum:g}] by more than {share:.0%} of "
        "it: plausible, so a warning; accept it as the new normal or look upstream",
    )


def _level_moved(reference: ColumnProfile, observed: ColumnProfile) -> float:
    """How far the batch's median sits from the reference's: a level that moved (a trend, a cycle) carries its
    extremes with it, so the range they are judged against moves with it; a value beyond that is a new extreme
    (a storm: one value past the rest moves no median)."""
    before, now = reference.quantile(0.5), observed.quantile(0.5)
    return 0.0 if before is None or now is None else now - before


def _size_factor(rows: int, expected_rows: float) -> float:
    """Extremes grow with the rows they are drawn from (about as the log of their number for a light tail):
    a batch k times the usual size gets a margin 1 + ln k times as wide."""
    ratio = rows / expected_rows if expected_rows > 0 else 1.0
    return 1.0 + math.log(ratio) if ratio > 1.0 else 1.0


def _outside(sample: pd.DataFrame, name: str, low: float | None, high: float | None) -> tuple[int, int]:
    """How many sampled values fall outside the limits, of how many sampled values."""
    if name not in sample:
        return 0, 0
    values = pd.to_numeric(sample[name], errors="coerce").dropna()
    outside = pd.Series(False, index=values.index)
    if low is not None:
        outside |= values < low
    if high is not None:
        outside |= values > high
    return int(outside.sum()), len(values)


def _bound(limit: float | None) -> str:
    return "-inf" if limit is None else f"{limit:g}"


def _category_findings(ctx: GuardContext, column: ColumnContract, observed: ColumnProfile) -> Iterator[Finding]:
    if observed.logical_type != "string":
        return
    allowed = _allowed_values(ctx, column)
    if allowed is None:
        return
    values, source = allowed
    if observed.value_counts is None:  # more distinct values than the profile counts: new ones among them
        yield _new_category(ctx, column.name, {f"<more than {MAX_CATEGORIES} distinct values>": 0}, values, source)
        return
    unseen = {value: count for value, count in observed.value_counts if value not in values}
    mapping = casing_mapping(unseen, values)
    if mapping:
        rows = sum(unseen[value] for value in mapping)
        yield make_finding(
            FindingKind.CATEGORY_CASING,
            ctx.dataset_urn,
            column.name,
            observed={value: unseen[value] for value in sorted(mapping)},
            expected=sorted(values),
            playbook="category_casing",
            mapping=mapping,
            rows_affected=rows,
            source=source,
            message=f"{column.name!r} spells {len(mapping)} allowed value(s) differently in {rows} rows: "
            f"{', '.join(f'{k!r}->{v!r}' for k, v in sorted(mapping.items()))}",
        )
    new = {value: count for value, count in unseen.items() if value not in mapping}
    if new and not (source == "reference" and _the_periods_name(ctx, column.name, observed)):
        closed = _closed(ctx, column.name, sum(new.values()), observed.values) if source == "reference" else None
        yield _new_category(ctx, column.name, new, values, source, closed)


def _the_periods_name(ctx: GuardContext, name: str, observed: ColumnProfile) -> bool:
    """Every kept batch held one value of the column, and so does this one: the period's name (a month), new in
    every batch by construction until its cycle comes round. A contract's own list still binds it."""
    return isinstance(ctx.reference, Reference) and ctx.reference.holds_the_periods_value(name, observed)


def _allowed_values(ctx: GuardContext, column: ColumnContract) -> tuple[frozenset[str], str] | None:
    """The allowed set and where it comes from: the contract, else a categorical reference column."""
    if column.allowed_values is not None:
        return frozenset(column.allowed_values), "contract"
    reference = ctx.reference_profile.columns.get(column.name) if ctx.reference_profile is not None else None
    if column.primary_key or reference is None or not is_categorical(reference):
        return None
    assert reference.value_counts is not None
    return frozenset(value for value, _ in reference.value_counts), "reference"


def _closed(ctx: GuardContext, name: str, rows: int, values: int) -> NeverSeen | None:
    """The evidence that the reference's set is closed, where it is: no kept batch after the first brought a value the
    ones before had not held (`Reference.unseen_values`), and `rows` of the batch's `values` holding new ones are more
    than the rule of three over the values that history counted gives with a chance of `policy.category_false_alarm`."""
    history = ctx.reference.unseen_values(name) if isinstance(ctx.reference, Reference) else None
    if history is None or history[0] > 0 or history[1] <= 0:
        return None
    evidence = never_seen_chance(rows, values, history[1])
    return evidence if evidence.chance < ctx.policy.category_false_alarm else None


def _new_category(
    ctx: GuardContext,
    name: str,
    new: dict[str, int],
    allowed: frozenset[str],
    source: str,
    closed: NeverSeen | None = None,
) -> Finding:
    listed = dict(sorted(new.items(), key=lambda item: (-item[1], item[0]))[:MAX_LISTED_VALUES])
    slips = {
        value: known
        for value in new
        if (known := resembled(value, allowed, ctx.policy.spelling_min_length)) is not None
    }
    severity = Severity.BLOCK if source == "contract" or slips or closed else Severity.WARN
    said = (
        f"{len(slips)} of them a known value written wrong ("
        + ", ".join(f"{v!r} for {k!r}" for v, k in sorted(slips.items())[:MAX_LISTED_VALUES])
        + f"{' …' if len(slips) > MAX_LISTED_VALUES else ''}, {sum(new[v] for v in slips)} rows); "
        if slips
        else ""
    )
    if closed is not None:
        said += (
            f"a closed set: no kept batch brought a value the ones before had not held ({closed.reference_rows} "
            f"values), and {closed.rows} of {closed.seen} rows of new values is no chance ({closed.chance:.1e}); "
        )
    return make_finding(
        FindingKind.NEW_CATEGORY,
        ctx.dataset_urn,
        name,
        observed=listed,
        expected=sorted(allowed),
        severity=severity,
        new_values=len(new),
        rows_affected=sum(new.values()),
        source=source,
        resembles=slips,
        closed_set=closed is not None,
        message=f"{name!r} has {len(new)} value(s) the {source} does not allow: {said}"
        f"{', '.join(repr(v) for v in listed)}{' …' if len(new) > len(listed) else ''}",
    )
