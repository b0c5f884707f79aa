"""Domain: numbers inside the contract's limits, categories inside the allowed set.

Ranges are judged on the snapshot's exact minimum and maximum (a full scan). Categories are judged on
the exact value counts of string columns, against the contract's allowed values or, when the contract
lists none, against the values the reference has seen. A value equal to an allowed one once trimmed,
whitespace-collapsed and case-folded is miscased (CATEGORY_CASING, healed by its mapping); any other
unseen value is a NEW_CATEGORY — blocking against the contract, a warning against the reference (which
records history, not law).
"""
from __future__ import annotations

from typing import Iterator, Mapping

import pandas as pd

from guard.checks.units import unit_shifted
from guard.context import GuardContext
from guard.contract import ColumnContract
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind, Severity
from guard.profile import ColumnProfile
from guard.registry import register
from guard.snapshot import MAX_CATEGORIES

__all__ = ["check_domain", "normalize_category", "casing_mapping", "is_categorical", "MAX_LISTED_VALUES"]

MAX_LISTED_VALUES = 20  # new values listed in a finding, most frequent first
_NUMERIC = ("integer", "number")


def normalize_category(value: str) -> str:
    """The form two spellings of one category share: trimmed, single-spaced, case-folded."""
    return " ".join(value.split()).casefold()


def is_categorical(profile: ColumnProfile) -> bool:
    """Counted values that repeat: not an identifier or free text (at most one distinct value per two rows)."""
    if profile.value_counts is None:
        return False
    return 2 * len(profile.value_counts) <= profile.row_count - profile.null_count


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
    reference = ctx.reference_profile.columns.get(column.name) if ctx.reference_profile else None
    if unit_shifted(column.unit, reference, observed, strict=column.name != ctx.contract.label_column):
        return  # the bounds are in the declared unit; the units check reports the conversion
    below = column.minimum is not None and observed.minimum < column.minimum
    above = column.maximum is not None and observed.maximum > column.maximum
    if not (below or above):
        return
    assert ctx.snapshot is not None
    outside, sampled = _outside(ctx.snapshot.sample, column)
    yield make_finding(
        FindingKind.OUT_OF_RANGE, ctx.dataset_urn, column.name,
        observed={"minimum": observed.minimum, "maximum": observed.maximum},
        expected={"minimum": column.minimum, "maximum": column.maximum},
        sample_rows_outside=outside, sample_rows=sampled,
        message=f"{column.name!r} spans [{observed.minimum:g}, {observed.maximum:g}], outside the contract's "
                f"[{_bound(column.minimum)}, {_bound(column.maximum)}] ({outside} of {sampled} sampled values)")


def _outside(sample: pd.DataFrame, column: ColumnContract) -> tuple[int, int]:
    """How many sampled values fall outside the limits, of how many sampled values."""
    if column.name not in sample:
        return 0, 0
    values = pd.to_numeric(sample[column.name], errors="coerce").dropna()
    outside = pd.Series(False, index=values.index)
    if column.minimum is not None:
        outside |= values < column.minimum
    if column.maximum is not None:
        outside |= values > column.maximum
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
            FindingKind.CATEGORY_CASING, ctx.dataset_urn, column.name,
            observed={value: unseen[value] for value in sorted(mapping)}, expected=sorted(values),
            playbook="category_casing", mapping=mapping, rows=rows, source=source,
            message=f"{column.name!r} spells {len(mapping)} allowed value(s) differently in {rows} rows: "
                    f"{', '.join(f'{k!r}->{v!r}' for k, v in sorted(mapping.items()))}")
    new = {value: count for value, count in unseen.items() if value not in mapping}
    if new:
        yield _new_category(ctx, column.name, new, values, source)


def _allowed_values(ctx: GuardContext, column: ColumnContract) -> tuple[frozenset[str], str] | None:
    """The allowed set and where it comes from: the contract, else a categorical reference column."""
    if column.allowed_values is not None:
        return frozenset(column.allowed_values), "contract"
    reference = ctx.reference_profile.columns.get(column.name) if ctx.reference_profile is not None else None
    if column.primary_key or reference is None or not is_categorical(reference):
        return None
    assert reference.value_counts is not None
    return frozenset(value for value, _ in reference.value_counts), "reference"


def _new_category(ctx: GuardContext, name: str, new: dict[str, int], allowed: frozenset[str],
                  source: str) -> Finding:
    listed = dict(sorted(new.items(), key=lambda item: (-item[1], item[0]))[:MAX_LISTED_VALUES])
    severity = Severity.BLOCK if source == "contract" else Severity.WARN
    return make_finding(
        FindingKind.NEW_CATEGORY, ctx.dataset_urn, name, observed=listed, expected=sorted(allowed),
        severity=severity, new_values=len(new), rows=sum(new.values()), source=source,
        message=f"{name!r} has {len(new)} value(s) the {source} does not allow: "
                f"{', '.join(repr(v) for v in listed)}{' …' if len(new) > len(listed) else ''}")
