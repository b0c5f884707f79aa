"""Swap two columns back: undo values written into each other's place, exactly.

Heals COLUMNS_SWAPPED, whose finding carries `params["columns"] = [a, b]` and `params["scope"]`:

- "order": the rows where `order[0] > order[1]` (an order the reference always held) are swapped back;
  applied to its own output it finds no such row and changes nothing;
- "all": every row (of the finding's `rows` window) is swapped back while the columns still sit where the
  guard saw them: each column's median is nearer the median the guard saw for it
  (`params["observed_medians"]`) than the other's; once swapped back they sit the other way round and the
  playbook changes nothing.

A swap is its own inverse; no value is invented. Refuses columns of different dtypes (a swap would cast).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from guard.kinds import FindingKind
from remediations.registry import HealInput, HealStep, PlaybookRefused, register
from remediations.rows import describe_rows, selected_rows

__all__ = ["swap_columns"]


@register(
    "swap_columns",
    {FindingKind.COLUMNS_SWAPPED},
    description="swap two columns back on the rows the finding names (all, or where a learned order breaks)",
    plan=("columns", "scope", "order"),
)
def swap_columns(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    finding, table = heal.finding, heal.table
    a, b = _columns(heal)
    rows = selected_rows(table, finding)
    scope = finding.params.get("scope")
    if scope == "order":
        mask = rows & _order_broken(table, finding.params.get("order"))
    elif scope == "all":
        mask = rows if _as_seen(table, rows, a, b, finding.params.get("observed_medians") or {}) else rows & False
    else:
        raise PlaybookRefused(f"swap_columns needs params['scope'] 'all' or 'order', not {scope!r}; re-run the guard")
    healed = table.copy()
    first, second = table[a].to_numpy(), table[b].to_numpy()
    healed[a] = pd.Series(np.where(mask, second, first), index=table.index).astype(table[a].dtype)
    healed[b] = pd.Series(np.where(mask, first, second), index=table.index).astype(table[b].dtype)
    params: dict[str, Any] = {
        "columns": [a, b],
        "scope": scope,
        "rows_swapped": int(mask.sum()),
        "rows": describe_rows(finding),
    }
    return healed, HealStep("swap_columns", finding.kind.value, finding.column, params, rows_touched=int(mask.sum()))


def _columns(heal: HealInput) -> tuple[str, str]:
    columns = heal.finding.params.get("columns") or []
    if len(columns) != 2 or len(set(columns)) != 2:
        raise PlaybookRefused(f"swap_columns needs params['columns'] = [a, b], not {columns!r}; re-run the guard")
    a, b = (str(c) for c in columns)
    for column in (a, b):
        if column not in heal.table.columns:
            raise PlaybookRefused(f"swap_columns found no column {column!r} in the table; re-run the guard")
        if heal.contract.column(column) is None:
            raise PlaybookRefused(f"swap_columns only swaps contracted columns; {column!r} is not in the contract")
    if heal.table[a].dtype != heal.table[b].dtype:
        raise PlaybookRefused(
            f"swap_columns will not swap {a!r} ({heal.table[a].dtype}) and {b!r} "
            f"({heal.table[b].dtype}): the swap would cast values; heal by hand"
        )
    return a, b


def _order_broken(table: pd.DataFrame, order: Any) -> np.ndarray:
    if not isinstance(order, list) or len(order) != 2 or any(c not in table.columns for c in order):
        raise PlaybookRefused(f"swap_columns needs params['order'] = [low, high] of the table's columns, not {order!r}")
    low = pd.to_numeric(table[order[0]], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    high = pd.to_numeric(table[order[1]], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return low > high


def _as_seen(table: pd.DataFrame, rows: np.ndarray, a: str, b: str, seen: dict[str, Any]) -> bool:
    """True while the columns sit as the guard saw them (not yet swapped back)."""
    if a not in seen or b not in seen:
        raise PlaybookRefused(
            "swap_columns needs params['observed_medians'] of both columns to tell a swapped "
            "table from a healed one; re-run the guard"
        )
    now_a = float(
        np.nanmedian(pd.to_numeric(table.loc[rows, a], errors="coerce").to_numpy(dtype=float, na_value=np.nan))
    )
    now_b = float(
        np.nanmedian(pd.to_numeric(table.loc[rows, b], errors="coerce").to_numpy(dtype=float, na_value=np.nan))
    )
    as_seen = abs(now_a - seen[a]) + abs(now_b - seen[b])
    swapped_back = abs(now_a - seen[b]) + abs(now_b - seen[a])
    return as_seen <= swapped_back
