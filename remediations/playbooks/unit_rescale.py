"""Unit rescale: convert a column back to its contracted unit (affine conversions included).

value_declared = (value_actual - offset) / scale, on the finding's rows only: `Finding.rows` (a time
window, see `guard.findings`) when the unit changed in part of the rows (since a release), else every
row. Exact and invertible. Level-based only through the guard: re-run after a heal, the guard sees the
contracted unit and raises no finding.
"""

from __future__ import annotations

import pandas as pd

from guard.findings import Finding
from guard.kinds import FindingKind
from remediations.registry import HealInput, HealStep, PlaybookRefused, register
from remediations.rows import describe_rows, selected_rows

__all__ = ["unit_rescale", "rescale_step"]


@register(
    "unit_rescale",
    {FindingKind.UNIT_MISMATCH},
    description="undo a unit change: value_declared = (value_actual - offset) / scale, on the finding's rows",
    plan=("scale", "offset"),
)
def unit_rescale(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    finding, table = heal.finding, heal.table
    column = finding.column
    scale, offset = finding.params.get("scale"), finding.params.get("offset", 0.0)
    if column not in table.columns or not scale:
        raise PlaybookRefused(f"unit_rescale needs column {column!r} and a non-zero scale in the finding")
    try:
        values = pd.to_numeric(table[column], errors="raise")
    except (ValueError, TypeError) as exc:
        raise PlaybookRefused(f"unit_rescale: column {column!r} holds values that are not numbers ({exc})") from exc
    rows = selected_rows(table, finding) & values.notna().to_numpy()
    healed = table.copy()
    healed[column] = values.mask(rows, (values - offset) / scale)
    step = rescale_step(finding, scale, offset, int(rows.sum()))
    return healed, step


def rescale_step(finding: Finding, scale: float, offset: float, touched: int) -> HealStep:
    """What a rescale did, as every engine's unit_rescale records it."""
    params = {
        "from_unit": finding.params.get("actual_unit"),
        "to_unit": finding.params.get("declared_unit"),
        "scale": scale,
        "offset": offset,
        "rows": describe_rows(finding),
    }
    return HealStep("unit_rescale", finding.kind.value, finding.column, params, rows_touched=touched)
