"""Stable reason codes: every finding kind, in one place, with its default severity."""

from __future__ import annotations

from enum import Enum

__all__ = ["FindingKind", "Severity", "DEFAULT_SEVERITY", "NOT_THE_DATA"]


class Severity(str, Enum):
    BLOCK = "block"
    WARN = "warn"


class FindingKind(str, Enum):
    # the guard itself could not decide: always a block (fail closed)
    CONTRACT_MISSING = "contract_missing"
    CONTRACT_INVALID = "contract_invalid"
    SNAPSHOT_UNREADABLE = "snapshot_unreadable"
    REFERENCE_MISSING = "reference_missing"
    CHECK_ERROR = "check_error"
    # schema
    COLUMN_MISSING = "column_missing"
    COLUMN_UNEXPECTED = "column_unexpected"
    COLUMN_RENAMED = "column_renamed"
    TYPE_CHANGED = "type_changed"
    # units and scale
    UNIT_MISMATCH = "unit_mismatch"
    SCALE_SHIFT = "scale_shift"
    UNIT_UNCHECKED = "unit_unchecked"  # guard-robust: too few values beside a point mass to judge a unit (warns)
    # nulls
    NULL_LIMIT = "null_limit"
    NULL_SPIKE = "null_spike"
    # labels
    LABEL_STALE = "label_stale"
    LABEL_IMMATURE = "label_immature"
    TIMESTAMP_UNPARSEABLE = "timestamp_unparseable"
    # volume and keys
    VOLUME_DROP = "volume_drop"
    DUPLICATE_KEYS = "duplicate_keys"
    VOLUME_SPIKE = "volume_spike"  # guard-robust: far more rows than the cadence expects (a table loaded 40x)
    HISTORY_CHANGED = "history_changed"  # rows the guard passed in an earlier batch are not what they were
    # domain
    OUT_OF_RANGE = "out_of_range"
    NEW_CATEGORY = "new_category"
    CATEGORY_CASING = "category_casing"
    # distribution
    DRIFT = "drift"
    TARGET_LEAKAGE = "target_leakage"
    # lineage
    UPSTREAM_UNKNOWN = "upstream_unknown"
    UPSTREAM_DEPRECATED = "upstream_deprecated"
    UPSTREAM_INCIDENT = "upstream_incident"
    UPSTREAM_STALE = "upstream_stale"
    # --- root causes (branch guard-causes): relationships learned from the reference, named causes ---
    TIMESTAMP_SHIFT = "timestamp_shift"  # a timestamp moved by a whole number of hours (a timezone)
    COLUMNS_SWAPPED = "columns_swapped"  # two columns written into each other's place
    SENTINEL = "sentinel"  # a placeholder value ('unknown' as -1, 0, 9999...) where a measurement belongs
    RELATION_BROKEN = "relation_broken"  # a sum or ratio the reference always held no longer holds
    # --- end of root causes ---


DEFAULT_SEVERITY: dict[FindingKind, Severity] = {kind: Severity.BLOCK for kind in FindingKind}
DEFAULT_SEVERITY[FindingKind.DRIFT] = Severity.WARN
DEFAULT_SEVERITY[FindingKind.UNIT_UNCHECKED] = (
    Severity.WARN
)  # guard-robust: says it cannot judge, never passes silently
# a column the contract does not name is never read (training reads the contract's columns only): it is named, and
# the contract's own columns are judged as usual; a rename (a contracted column missing beside it) still blocks
DEFAULT_SEVERITY[FindingKind.COLUMN_UNEXPECTED] = Severity.WARN

# the guard could not judge the data, or the rows are not the new batch's: nothing a person can take as normal
NOT_THE_DATA = frozenset(
    {
        FindingKind.CONTRACT_MISSING,
        FindingKind.CONTRACT_INVALID,
        FindingKind.SNAPSHOT_UNREADABLE,
        FindingKind.REFERENCE_MISSING,
        FindingKind.CHECK_ERROR,
        FindingKind.TIMESTAMP_UNPARSEABLE,
        FindingKind.HISTORY_CHANGED,
    }
)
