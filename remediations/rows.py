"""Which rows of the table a finding concerns: its `rows` selector (a time window), or every row.

The contract (documented in `guard.findings`): `Finding.rows` is a `RowSelector`, the rows whose time column lies
in (after_ms, through_ms] (UTC epoch milliseconds; either bound may be None, unbounded), as
`profiles.profile.TimeWindow` cuts a batch, plus the rows it names one by one. None: every row.
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
from profiles.profile import TimeWindow
from profiles.relations import epoch_ms_of
from remediations.registry import PlaybookRefused

__all__ = ["selected_rows", "window_mask", "describe_rows", "row_key"]


def selected_rows(table: pd.DataFrame, finding: Finding) -> np.ndarray:
    """A boolean mask of the rows the finding concerns; a selector that cannot be applied refuses the heal."""
    rows = finding.rows
    if rows is None:
        return np.ones(len(table), dtype=bool)
    if rows.column not in table.columns:
        raise PlaybookRefused(
            f"the {finding.kind.value} finding names rows by {rows.column!r}, which the table does not "
            "have; re-run the guard on the current table"
        )
    values = table[rows.column]
    if not pd.api.types.is_datetime64_any_dtype(values.dtype):
        raise PlaybookRefused(
            f"the {finding.kind.value} finding names rows by {rows.column!r}, which is "
            f"{values.dtype}, not a timestamp; heal by hand"
        )
    stamps, present = epoch_ms_of(values)
    mask = _in_window(stamps, present, rows.after_ms, rows.through_ms)
    return mask | _named(table, stamps, present & ~mask, [(r.at_ms, r.key) for r in rows.also])


def window_mask(table: pd.DataFrame, window: TimeWindow) -> np.ndarray:
    """The rows whose time lies in the window (none where the table lacks its time column)."""
    if window.column not in table.columns:
        return np.zeros(len(table), dtype=bool)
    stamps, present = epoch_ms_of(table[window.column])
    return _in_window(stamps, present, window.after_ms, window.through_ms)


def _in_window(stamps: np.ndarray, present: np.ndarray, after_ms: int | None, through_ms: int | None) -> np.ndarray:
    mask = present.copy()
    if after_ms is not None:
        mask &= stamps > int(after_ms)
    if through_ms is not None:
        mask &= stamps <= int(through_ms)
    return mask


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


def describe_rows(finding: Finding) -> dict[str, Any] | None:
    """The rows selector as heal notes carry it (None: every row)."""
    return finding.rows.to_dict() if finding.rows is not None else None
