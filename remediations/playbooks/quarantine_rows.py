"""Quarantine rows: what cannot be corrected is set aside, never filled in.

Heals NULL_LIMIT and NULL_SPIKE (rows whose value is null, e.g. a join that missed) and SENTINEL (rows
holding the placeholder `params["value"]`), within the finding's `rows` window. The value those rows should
hold is unknown: inventing one (a median, a draw from the reference) would put made-up data into the team's
table. So the rows stay in the published table exactly as they arrived, are listed in the quarantine
beside it with the finding that put them there, and are left out of the training view. The incident stays
open: its cause is not corrected (`remediations.sandbox.HealOutcome.open_findings`).

This is the playbook findings named `null_impute` now reach (`remediations.registry.ALIASES`).
Limit: refuses when the rows to quarantine are more than MAX_QUARANTINE_FRACTION of the rows the finding
concerns (its batch: a batch mostly quarantined is a broken feed, however large the table; fix it upstream). Never quarantines on the label (label_window's
business) or a key column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from guard.kinds import FindingKind
from remediations.aside import value_hit
from remediations.registry import HealInput, HealStep, PlaybookRefused, register, table_column
from remediations.rows import describe_rows, selected_rows

__all__ = ["quarantine_rows", "MAX_QUARANTINE_FRACTION"]

MAX_QUARANTINE_FRACTION = 0.5


@register(
    "quarantine_rows",
    {FindingKind.NULL_LIMIT, FindingKind.NULL_SPIKE, FindingKind.SENTINEL},
    max_fraction_touched=MAX_QUARANTINE_FRACTION,
    quarantines=True,
    description="set aside rows that cannot be corrected (nulls, sentinels): kept as they are in the table, "
    "listed in the quarantine, left out of training; refuses over 50% of rows",
    plan=("value",),
)
def quarantine_rows(heal: HealInput) -> tuple[np.ndarray, HealStep]:
    finding, table, column = heal.finding, heal.table, heal.finding.column
    _check_column(heal)
    assert column is not None
    values = table[column]
    if finding.kind is FindingKind.SENTINEL:
        value = finding.params.get("value")
        if value is None:
            raise PlaybookRefused("quarantine_rows needs the sentinel's params['value']; re-run the guard")
        hit = value_hit(values, float(value))
        reason: dict[str, Any] = {"value": value}
    else:
        hit = value_hit(values, None)
        reason = {"null": True}
    concerned = selected_rows(table, finding)
    mask = concerned & hit
    count, of = int(mask.sum()), int(concerned.sum())
    if of and count / of > MAX_QUARANTINE_FRACTION:
        raise PlaybookRefused(
            f"quarantine_rows would set aside {count} of the {of} rows the finding concerns ({count / of:.1%}) for "
            f"{finding.kind.value} on {column!r}, over its limit of {MAX_QUARANTINE_FRACTION:.0%} of rows "
            "(max_fraction_touched); the feed is broken: fix it upstream"
        )
    params = {"column": column, **reason, "rows_quarantined": count, "rows": describe_rows(finding)}
    return mask, HealStep("quarantine_rows", finding.kind.value, column, params, rows_touched=0, rows_quarantined=count)


def _check_column(heal: HealInput) -> None:
    column, contract = table_column(heal.table.columns, heal.finding.column, "quarantine_rows"), heal.contract
    if column == contract.label_column:
        raise PlaybookRefused(f"quarantine_rows leaves the label column {column!r} to label_window")
    if column in contract.key_columns:
        raise PlaybookRefused(
            f"quarantine_rows will not set rows aside by key column {column!r}: a row without "
            "its key cannot be traced; fix the producer"
        )
