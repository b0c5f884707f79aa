"""Rename columns: put a renamed column back under its contracted name.

Heals COLUMN_RENAMED, whose finding carries ``params["mapping"] = {new_name: contracted_name}``.

Limits: the target must be a column of the contract, and it must not already exist next to the
new name (two columns would claim one contracted name: which is the real one is not ours to
guess) — unless the finding says the rename is partial (``params["merge"]``: a batch renamed the
column, the older rows keep the old name): then the new column's values move into the rows where
the contracted one has none, and only if no row holds both (nothing is overwritten; the rows moved
are counted). A rename whose target is present and whose source is gone is already done, so the
step is a no-op with ``rows_touched == 0``.
"""

from __future__ import annotations

import pandas as pd

from guard.kinds import FindingKind
from remediations.registry import HealInput, HealStep, PlaybookRefused, register

__all__ = ["rename_columns"]


@register(
    "rename_columns",
    {FindingKind.COLUMN_RENAMED},
    description="rename new -> contracted name; refuses when the contracted name already exists",
    plan=("mapping", "merge"),
)
def rename_columns(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    """Rename each ``new`` column of the finding's mapping to its contracted ``old`` name."""
    finding, table = heal.finding, heal.table
    mapping = finding.params.get("mapping") or {}
    if not mapping:
        raise PlaybookRefused(
            f"rename_columns needs params['mapping'] = {{new: contracted}} in the "
            f"{finding.kind.value} finding on {finding.column!r}; re-run the guard"
        )
    if finding.params.get("merge"):
        return _merge(heal, {str(new): str(old) for new, old in mapping.items()})
    pending, done = _plan(table, {str(new): str(old) for new, old in mapping.items()}, heal)
    healed = table.rename(columns=pending) if pending else table.copy()
    step = HealStep(
        "rename_columns",
        finding.kind.value,
        finding.column,
        {"mapping": dict(mapping), "renamed": pending, "already_renamed": done},
        rows_touched=len(table) if pending else 0,
    )
    return healed, step


def _merge(heal: HealInput, mapping: dict[str, str]) -> tuple[pd.DataFrame, HealStep]:
    """A partial rename: the new column's values into the contracted column's empty rows, the new column dropped."""
    healed, moved = heal.table.copy(), {}
    for new, old in sorted(mapping.items()):
        contracted = heal.contract.column(old)
        if contracted is None or old not in healed or new not in healed:
            raise PlaybookRefused(
                f"rename_columns cannot merge {new!r} into {old!r}: both must be in the table and "
                f"{old!r} in the contract; re-run the guard on the current snapshot"
            )
        both = int((healed[old].notna() & healed[new].notna()).sum())
        if both:
            raise PlaybookRefused(
                f"rename_columns will not merge {new!r} into {old!r}: {both} rows hold both "
                "(one would overwrite the other); fix the batch by hand"
            )
        fill = healed[old].isna() & healed[new].notna()
        healed[old] = healed[old].where(~fill, healed[new])
        if contracted.logical_type == "integer" and not healed[old].isna().any():
            healed[old] = healed[old].astype("int64")
        healed = healed.drop(columns=[new])
        moved[new] = int(fill.sum())
    step = HealStep(
        "rename_columns",
        heal.finding.kind.value,
        heal.finding.column,
        {"mapping": dict(mapping), "merged_rows": moved},
        rows_touched=sum(moved.values()),
    )
    return healed, step


def _plan(table: pd.DataFrame, mapping: dict[str, str], heal: HealInput) -> tuple[dict[str, str], dict[str, str]]:
    """Split the mapping into renames still to do and renames already done; refuse on any conflict."""
    present = set(table.columns)
    pending: dict[str, str] = {}
    done: dict[str, str] = {}
    for new, old in sorted(mapping.items()):
        if heal.contract.column(old) is None:
            raise PlaybookRefused(
                f"rename_columns will only rename to a contracted column; {old!r} is not in "
                f"the contract of {heal.contract.dataset_urn}"
            )
        if new in present and old in present:
            raise PlaybookRefused(
                f"rename_columns cannot rename {new!r} to {old!r}: the target name already "
                f"exists; drop one of the two columns by hand"
            )
        if new in present:
            pending[new] = old
        elif old in present:
            done[new] = old
        else:
            raise PlaybookRefused(
                f"rename_columns found neither {new!r} nor {old!r} in the table; "
                f"re-run the guard on the current snapshot"
            )
    if len(set(pending.values())) != len(pending):
        raise PlaybookRefused(f"rename_columns mapping {mapping} sends two columns to one name; fix the mapping")
    return pending, done
