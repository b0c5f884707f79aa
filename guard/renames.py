"""Renames within a table: a contracted column that lost its values in exactly the rows where a new column has
them — a batch whose producer renamed the column, landed into a table read by column name.

The whole-table rename (the old name gone, a new one with the same distribution) is the schema check's own; this
is the partial one, where the older rows still carry the old name. The evidence is structural: on the row sample
the two columns never both hold a value, the new one fills the rows the old one lost, and its values are
plausible for the old column (same type; values inside the reference's range widened by half its span, or
inside its categories). A batch is a stretch of time, not the whole history, so its distribution is not required to
match the reference's.

"The rows the old one lost" are the rows it has no value in beyond its own nulls: a column that is empty in some
rows of every clean batch keeps those rows empty under either name. So the rows neither column fills, read as the
merged column's null share (the plan's inverse applied), must be a share a clean batch of the sample's size reaches
(`guard.statistics.natural_null_share`: the highest batch share, its largest step and the sampling error), or at
most `rename_null_slack` over the reference's share.
"""

from __future__ import annotations

import pandas as pd

from guard.contract import Contract
from guard.findings import ClosestCall
from guard.policy import DEFAULT as POLICY
from guard.statistics import natural_null_share
from profiles.profile import ColumnProfile, DatasetProfile
from profiles.reference import Reference
from profiles.snapshot_types import Snapshot

__all__ = ["split_renames"]


def split_renames(
    contract: Contract,
    snapshot: Snapshot,
    reference: Reference | DatasetProfile,
    unexpected: list[str],
    calls: list[ClosestCall] | None = None,
) -> dict[str, str]:
    """old -> new, for each contracted column that exactly one unexpected column completes. Into `calls`, if given:
    for each candidate pair, the share of sampled rows neither column fills over the reference's null share, against
    `policy.rename_null_slack` (crossing it completes the pair where the natural null share allows less), deciding
    where everything else a rename asks holds and no other column completes the old one."""
    observed = snapshot.profile.columns
    merged = reference.profile if isinstance(reference, Reference) else reference
    found: dict[str, str] = {}
    for column in contract.columns:
        old, before = observed.get(column.name), merged.columns.get(column.name)
        if old is None or before is None or old.null_fraction <= before.null_fraction:
            continue
        empty = max(
            natural_null_share(reference, column.name, len(snapshot.sample)),
            before.null_fraction + POLICY.rename_null_slack,
        )
        candidates = [
            new
            for new in unexpected
            if new not in found.values() and _types_match(before, observed[new]) and _plausible(before, observed[new])
        ]
        matches = [new for new in candidates if _complements(snapshot.sample, column.name, new, empty)]
        if calls is not None:
            for new in candidates:
                neither = _neither(snapshot.sample, column.name, new)
                if neither is not None:
                    alone = not [other for other in matches if other != new]
                    decides = alone and _complements(snapshot.sample, column.name, new, 1.0)
                    slack = neither - before.null_fraction
                    calls.append(
                        ClosestCall("rename_null_slack", column.name, slack, POLICY.rename_null_slack, False, decides)
                    )
        if len(matches) == 1:
            found[column.name] = matches[0]
    return found


def _neither(sample: pd.DataFrame, old: str, new: str) -> float | None:
    """The share of sampled rows where neither column has a value (None: a column not sampled, or no rows)."""
    if old not in sample or new not in sample or not len(sample):
        return None
    return float((sample[old].isna() & sample[new].isna()).mean())


def _types_match(reference: ColumnProfile, new: ColumnProfile) -> bool:
    kinds = {reference.logical_type, new.logical_type}
    return len(kinds) == 1 or kinds == {"number", "integer"}


def _complements(sample: pd.DataFrame, old: str, new: str, empty: float) -> bool:
    """No sampled row holds both; the new column has values; the rows neither fills are at most `empty` of them."""
    if old not in sample or new not in sample or not len(sample):
        return False
    has_old, has_new = sample[old].notna(), sample[new].notna()
    neither = float((~has_old & ~has_new).mean())
    return bool(has_new.any()) and not bool((has_old & has_new).any()) and neither <= empty


def _plausible(reference: ColumnProfile, new: ColumnProfile) -> bool:
    if reference.value_counts is not None and new.value_counts is not None:
        return {v for v, _ in new.value_counts} <= {v for v, _ in reference.value_counts}
    if None in (reference.minimum, reference.maximum, new.minimum, new.maximum):
        return reference.value_counts is None and new.value_counts is None
    assert reference.minimum is not None and reference.maximum is not None
    half = (reference.maximum - reference.minimum) / 2 or abs(reference.maximum) / 2 or 1.0
    return reference.minimum - half <= new.minimum and new.maximum <= reference.maximum + half  # type: ignore[operator]
