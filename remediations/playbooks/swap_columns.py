"""Swap two columns back: undo values written into each other's place, exactly.

Heals COLUMNS_SWAPPED, whose finding carries `params["columns"] = [a, b]` and `params["scope"]`:

- "order": the rows where `order[0] > order[1]` (an order the reference always held) are swapped back;
  applied to its own output it finds no such row and changes nothing;
- "all": every row (of the finding's `rows` window) is swapped back while the columns still sit where the
  guard saw them: each column's median is nearer the median the guard saw for it
  (`params["observed_medians"]`) than the other's; once swapped back they sit the other way round and the
  playbook changes nothing.

A swap is its own inverse; no value is invented. Each column comes back in its contracted type: a whole-number
column that held its partner's decimals is cast back to whole numbers, exactly, and the swap is refused where a
value would not survive that cast.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from guard.checks.schema import types_compatible
from guard.kinds import FindingKind
from remediations.playbooks.cast_types import cast_series, logical_type_of
from remediations.registry import HealInput, HealStep, PlaybookRefused, register, table_column
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
    for name, other in ((a, b), (b, a)):
        swapped = pd.Series(np.where(mask, table[other].to_numpy(), table[name].to_numpy()), index=table.index)
        healed[name] = _in_contracted_type(heal, name, swapped, same_dtype=table[a].dtype == table[b].dtype)
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
        table_column(heal.table.columns, column, "swap_columns")
        if heal.contract.column(column) is None:
            raise PlaybookRefused(f"swap_columns only swaps contracted columns; {column!r} is not in the contract")
    return a, b


def _in_contracted_type(heal: HealInput, name: str, values: pd.Series, *, same_dtype: bool) -> pd.Series:
    """A column swapped back, in its contracted type: as the table held it where that type fits; else cast exactly
    (a whole-number column that held its partner's decimals, now its own whole numbers again), refused where a
    value would not survive the cast."""
    contracted = heal.contract.column(name)
    assert contracted is not None
    if types_compatible(contracted.logical_type, logical_type_of(values)):
        return values.astype(heal.table[name].dtype) if same_dtype else values
    cast, _ = cast_series(values, contracted.logical_type)
    lost = values.notna() & cast.isna()
    if lost.any():
        raise PlaybookRefused(
            f"swap_columns would leave {int(lost.sum())} value(s) of {name!r} that are not {contracted.logical_type}, "
            f"its contracted type, e.g. {values[lost].iloc[0]!r}: not a swap of these two columns; heal by hand"
        )
    plain = getattr(cast.dtype, "numpy_dtype", None)  # Int64 with no null left is int64, as the column came
    return cast.astype(plain) if plain is not None and not cast.isna().any() else cast


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
