"""Dedupe keys: undo a duplicate load by keeping the first row of each key.

Heals DUPLICATE_KEYS on ``contract.key_columns`` (with none declared, on every column, for a finding of whole
rows repeated: `guard.checks.duplicates`). A duplicate load repeats whole rows, so every row
whose key was already seen is dropped, keeping the first. A row whose key was seen but whose other
values differ from every earlier row of that key is a *conflicting* duplicate: two versions of one
entity, not a repeated load, and choosing one is not this playbook's call.

Limits: refuses when it would drop more than ``MAX_DROP_FRACTION`` (20%) of the rows, and when
conflicting duplicates are more than ``MAX_CONFLICT_FRACTION`` (0.1%) of the rows; below that
tiny fraction they are dropped too (first row kept) and counted in the params. Nulls compare
equal to nulls. Applied to its own output it drops nothing.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from guard.contract import Contract
from guard.findings import Finding
from guard.kinds import FindingKind
from remediations.registry import HealInput, HealStep, PlaybookRefused, register

__all__ = ["dedupe_keys", "heal_keys", "MAX_DROP_FRACTION", "MAX_CONFLICT_FRACTION"]

MAX_DROP_FRACTION = 0.2
MAX_CONFLICT_FRACTION = 0.001
_EXAMPLES = 5


@register(
    "dedupe_keys",
    {FindingKind.DUPLICATE_KEYS},
    max_fraction_touched=MAX_DROP_FRACTION,
    description="drop repeated rows of a key, keeping the first; refuses over 20% of rows or over 0.1% "
    "conflicting duplicates",
    plan=("whole_rows", "key_columns"),
)
def dedupe_keys(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    """Drop every row whose key was already seen, unless too many rows or too many conflicts."""
    finding, table = heal.finding, heal.table
    keys = _key_columns(heal)
    repeated, conflicting = _duplicates(table, keys)
    dropped, conflicts, rows = int(repeated.sum()), int(conflicting.sum()), max(len(table), 1)
    params: dict[str, Any] = {
        "key_columns": list(keys),
        "rows_before": len(table),
        "rows_dropped": dropped,
        "conflicting_rows": conflicts,
        "conflicting_keys": _examples(table.loc[conflicting, list(keys)]),
    }
    if conflicts / rows > MAX_CONFLICT_FRACTION:
        raise PlaybookRefused(
            f"dedupe_keys found {conflicts} of {len(table)} rows ({conflicts / rows:.2%}) repeating a key of "
            f"{list(keys)} with different values, e.g. {params['conflicting_keys']}; over its limit of "
            f"{MAX_CONFLICT_FRACTION:.1%} conflicting rows: this is not a duplicate load, resolve the keys by hand"
        )
    if dropped / rows > MAX_DROP_FRACTION:
        raise PlaybookRefused(
            f"dedupe_keys would drop {dropped} of {len(table)} rows ({dropped / rows:.1%}) as repeated keys of "
            f"{list(keys)}, over its limit of {MAX_DROP_FRACTION:.0%} of rows (max_fraction_touched); "
            "find the repeated load upstream"
        )
    healed = table.loc[~repeated].reset_index(drop=True)
    return healed, HealStep(
        "dedupe_keys", finding.kind.value, finding.column, params, rows_touched=0, rows_dropped=dropped
    )


def heal_keys(contract: Contract, finding: Finding) -> tuple[str, ...]:
    """The contract's key; with none declared, every column, when the finding is of whole rows repeated."""
    whole_rows = finding.params.get("whole_rows") and finding.params.get("key_columns")
    return contract.key_columns or (tuple(finding.params["key_columns"]) if whole_rows else ())


def _key_columns(heal: HealInput) -> tuple[str, ...]:
    keys = heal_keys(heal.contract, heal.finding)
    if not keys:
        raise PlaybookRefused(
            f"dedupe_keys needs key columns; mark them primary_key in the contract of {heal.contract.dataset_urn}"
        )
    missing = [k for k in keys if k not in heal.table.columns]
    if missing:
        raise PlaybookRefused(f"dedupe_keys found no key column(s) {missing} in the table; heal the schema first")
    return keys


def _duplicates(table: pd.DataFrame, keys: tuple[str, ...]) -> tuple[pd.Series, pd.Series]:
    """Rows whose key was already seen, and those among them that differ from every earlier row of the key."""
    try:
        repeated = table.duplicated(subset=list(keys), keep="first")
        exact = table.duplicated(keep="first")
    except TypeError as exc:
        raise PlaybookRefused(f"dedupe_keys cannot compare rows of this table ({exc}); heal by hand") from exc
    return repeated, repeated & ~exact


def _examples(keys: pd.DataFrame) -> list[list[str]]:
    unique = keys.drop_duplicates().head(_EXAMPLES)
    return [[str(v) for v in row] for row in unique.itertuples(index=False, name=None)]
