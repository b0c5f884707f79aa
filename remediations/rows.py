"""Which rows of the table a finding concerns: its `params["rows"]` time window, or every row.

The contract (documented in `guard.findings`): `params["rows"] = {"column": TIME_COLUMN, "after_ms": X,
"through_ms": Y}`, the rows whose TIME_COLUMN lies in (X, Y] (UTC epoch milliseconds; either bound may be
None, unbounded), as `guard.profile.TimeWindow` cuts a batch. Absent or None: every row.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from datetime import datetime
from typing import Any, Mapping

import numpy as np
import pandas as pd

from guard.findings import Finding
from guard.relations import epoch_ms_of
from remediations.registry import PlaybookRefused

__all__ = ["selected_rows", "describe_rows", "rows_window", "row_key", "named_rows"]


def selected_rows(table: pd.DataFrame, finding: Finding) -> np.ndarray:
    """A boolean mask of the rows the finding concerns; a window that cannot be read refuses the heal."""
    rows = finding.params.get("rows")
    if rows is None:
        return np.ones(len(table), dtype=bool)
    column, after, through = rows_window(rows, finding)
    if column not in table.columns:
        raise PlaybookRefused(
            f"the {finding.kind.value} finding names rows by {column!r}, which the table does not "
            "have; re-run the guard on the current table"
        )
    values = table[column]
    if not pd.api.types.is_datetime64_any_dtype(values.dtype):
        raise PlaybookRefused(
            f"the {finding.kind.value} finding names rows by {column!r}, which is "
            f"{values.dtype}, not a timestamp; heal by hand"
        )
    stamps, present = epoch_ms_of(values)
    mask = present.copy()
    if after is not None:
        mask &= stamps > int(after)
    if through is not None:
        mask &= stamps <= int(through)
    return mask | _named(table, stamps, present & ~mask, named_rows(rows, finding))


def _named(table: pd.DataFrame, stamps: np.ndarray, outside: np.ndarray, named: list[tuple[int, str]]) -> np.ndarray:
    """The rows outside the window that `named` lists, each key taken as many times as it is listed (rows alike
    are interchangeable), first in table order. A listed row not found is no error: a heal applied once moved it."""
    mask = np.zeros(len(table), dtype=bool)
    if not named:
        return mask
    wanted = Counter(key for _, key in named)
    candidates = np.flatnonzero(outside & np.isin(stamps, [at for at, _ in named]))
    for position in candidates:
        key = row_key(table.iloc[int(position)].to_dict())
        if wanted[key] > 0:
            wanted[key] -= 1
            mask[position] = True
    return mask


def named_rows(rows: Any, finding: Finding) -> list[tuple[int, str]]:
    """(at_ms, key) of each row `params["rows"]["also"]` names; a malformed list refuses the heal."""
    also = rows.get("also") if isinstance(rows, Mapping) else None
    if also is None:
        return []
    if not isinstance(also, list) or not all(
        isinstance(item, Mapping)
        and isinstance(item.get("at_ms"), (int, np.integer))
        and isinstance(item.get("key"), str)
        for item in also
    ):
        raise PlaybookRefused(
            f"the {finding.kind.value} finding's params['rows']['also'] is {also!r}, not "
            "[{'at_ms': T, 'key': K}, ...]; re-run the guard"
        )
    return [(int(item["at_ms"]), str(item["key"])) for item in also]


def row_key(values: Mapping[str, Any]) -> str:
    """A key of one row's values, every column in name order: equal rows share it, and a value read back from the
    same parquet file (by arrow or pandas) gives the same one. Times are keyed as UTC instants, whole numbers as
    integers (3 and 3.0 alike), other floats by their exact repr, a missing value (None, NaN, NaT) as null."""
    canonical = [[str(name), _canonical(values[name])] for name in sorted(values, key=str)]
    text = json.dumps(canonical, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _canonical(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict, np.ndarray)):
        return str(value)  # a nested value, keyed by its text
    if value is None or (not isinstance(value, (str, bytes)) and bool(pd.isna(value))):
        return None
    if isinstance(value, (pd.Timestamp, datetime, np.datetime64)):
        stamp = pd.Timestamp(value)
        return (stamp.tz_convert("UTC") if stamp.tzinfo else stamp).isoformat()
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return int(number) if number.is_integer() and abs(number) < 2**53 else repr(number)
    return str(value)


def rows_window(rows: Any, finding: Finding) -> tuple[str, Any, Any]:
    """(time column, after_ms, through_ms) of a finding's `params["rows"]`; a malformed one refuses the heal."""
    if (
        not isinstance(rows, Mapping)
        or not isinstance(rows.get("column"), str)
        or not set(rows) <= {"column", "after_ms", "through_ms", "also"}
    ):
        raise PlaybookRefused(
            f"the {finding.kind.value} finding's params['rows'] is {rows!r}, not "
            "{'column': TIME_COLUMN, 'after_ms': X, 'through_ms': Y}; re-run the guard"
        )
    for bound in ("after_ms", "through_ms"):
        if rows.get(bound) is not None and not isinstance(rows[bound], (int, np.integer)):
            raise PlaybookRefused(f"params['rows'][{bound!r}] is {rows[bound]!r}, not epoch milliseconds")
    return rows["column"], rows.get("after_ms"), rows.get("through_ms")


def describe_rows(finding: Finding) -> dict[str, Any] | None:
    """The rows selector as heal notes carry it (None: every row)."""
    rows = finding.params.get("rows")
    return dict(rows) if isinstance(rows, Mapping) else None
