"""Fingerprints of the rows of time windows, all windows in one pass over a table: rows, and per column the
nulls and (for numbers and times) the minimum, maximum and sum.

It is how history is checked cheaply: every batch the guard passed is fingerprinted at every run and compared
with its fingerprint when it passed; only a batch whose fingerprint moved is profiled again and guarded. One
aggregate scan of the table, at about the cost of reading it — no sketch, no sample, no Python per row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profiles.profile import DatasetProfile, TimeWindow
from profiles.records import Record

__all__ = ["Fingerprint", "fingerprint_windows", "fingerprint_of_profile", "fingerprint_rows", "rows_in"]

_NUMERIC = ("integer", "number", "timestamp", "date")


@dataclass
class Fingerprint(Record):
    rows: int = 0
    columns: dict[str, dict[str, float]] = field(default_factory=dict)  # column -> nulls, min, max, sum

    def merged(self, other: Fingerprint) -> Fingerprint:
        """The fingerprint of both sets of rows together."""
        columns = {name: dict(entry) for name, entry in self.columns.items()}
        for name, entry in other.columns.items():
            into = columns.setdefault(name, {"nulls": 0.0})
            into["nulls"] = into.get("nulls", 0.0) + entry.get("nulls", 0.0)
            for key, pick in (("min", min), ("max", max)):
                if key in entry:
                    into[key] = pick(into[key], entry[key]) if key in into else entry[key]
            if "sum" in entry:
                into["sum"] = into.get("sum", 0.0) + entry["sum"]
        return Fingerprint(self.rows + other.rows, columns)

    def matches(self, kept: Fingerprint) -> bool:
        """These rows are still the kept ones. A column the kept rows never had, all null in them now, is not a
        change of theirs: a later batch brought it (the table is read by column name)."""
        added = set(self.columns) - set(kept.columns)
        if (
            self.rows != kept.rows
            or not set(kept.columns) <= set(self.columns)
            or any(self.columns[c].get("nulls") != self.rows for c in added)
        ):
            return False
        return all(
            _close(self.columns[c].get(k), kept.columns[c].get(k))
            for c in kept.columns
            for k in set(self.columns[c]) | set(kept.columns[c])
        )


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def fingerprint_of_profile(profile: DatasetProfile) -> Fingerprint:
    """The fingerprint a batch's profile implies (what was there when it passed)."""
    columns: dict[str, dict[str, float]] = {}
    for name, column in profile.columns.items():
        entry: dict[str, float] = {"nulls": float(column.null_count)}
        if column.logical_type in _NUMERIC and column.minimum is not None:
            entry.update(min=float(column.minimum), max=float(column.maximum or 0.0))
            if column.mean is not None and column.logical_type in ("integer", "number"):
                valid = column.row_count - column.null_count - column.nan_count
                entry["sum"] = column.mean * valid
        columns[name] = entry
    return Fingerprint(profile.row_count, columns)


def fingerprint_windows(path: Path, windows: Sequence[TimeWindow]) -> tuple[list[Fingerprint], int]:
    """One fingerprint per window (rows in (after, through]), and the count of rows in none of them (a null
    time lies in no window), in one pass over the parquet file."""
    if not windows:
        return [], 0
    column = windows[0].column
    source = pq.ParquetFile(path)
    kinds = {f.name: _kind(f.type) for f in source.schema_arrow}
    prints = [Fingerprint(0, {name: {"nulls": 0.0} for name in kinds}) for _ in windows]
    outside = 0
    for group in range(source.num_row_groups):
        table = source.read_row_group(group)
        slot = _slots(table.column(column), windows)
        outside += int((slot < 0).sum())
        for index in np.unique(slot[slot >= 0]):
            _add(prints[int(index)], table.filter(pa.array(slot == index)), kinds)
    return prints, outside


def fingerprint_rows(rows: pa.Table) -> Fingerprint:
    """The fingerprint of rows already read (as `fingerprint_windows` gives a window's)."""
    kinds = {f.name: _kind(f.type) for f in rows.schema}
    into = Fingerprint(0, {name: {"nulls": 0.0} for name in kinds})
    _add(into, rows, kinds)
    return into


def rows_in(path: Path, window: TimeWindow) -> pa.Table:
    """The rows of the parquet file whose time lies in the window, in file order (one pass; for a few rows)."""
    source = pq.ParquetFile(path)
    parts = []
    for group in range(source.num_row_groups):
        inside = _slots(source.read_row_group(group, columns=[window.column]).column(0), [window]) == 0
        if inside.any():
            parts.append(source.read_row_group(group).filter(pa.array(inside)))
    return pa.concat_tables(parts) if parts else source.schema_arrow.empty_table()


def _kind(kind: pa.DataType) -> str:
    if pa.types.is_integer(kind):
        return "integer"
    if pa.types.is_floating(kind) or pa.types.is_decimal(kind):
        return "number"
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        return "time"
    return "other"


def _slots(times: pa.ChunkedArray, windows: Sequence[TimeWindow]) -> np.ndarray:
    """The index of the window each row falls in, or -1."""
    stamps = _epoch_ms(times)
    slot = np.full(len(stamps), -1, dtype=np.int64)
    for index, window in enumerate(windows):
        inside = ~np.isnan(stamps)
        if window.after_ms is not None:
            inside &= stamps > window.after_ms
        if window.through_ms is not None:
            inside &= stamps <= window.through_ms
        slot[inside & (slot < 0)] = index
    return slot


_PER_MS = {"s": 1e-3, "ms": 1.0, "us": 1e3, "ns": 1e6}


def _epoch_ms(times: pa.ChunkedArray) -> np.ndarray:
    """UTC epoch milliseconds, floored (as the profiles write them); NaN where the time is null."""
    kind = times.type
    if pa.types.is_timestamp(kind):
        raw = times.cast(pa.int64()).to_numpy(zero_copy_only=False).astype("float64")
        return np.floor(raw / _PER_MS[kind.unit])
    if pa.types.is_date(kind):
        days = pc.cast(times, pa.date32()).cast(pa.int32()).to_numpy(zero_copy_only=False).astype("float64")
        return days * 86_400_000
    return np.floor(times.cast(pa.float64()).to_numpy(zero_copy_only=False))


def _add(into: Fingerprint, rows: pa.Table, kinds: dict[str, str]) -> None:
    into.rows += rows.num_rows
    for name, kind in kinds.items():
        column = rows.column(name)
        entry = into.columns[name]
        entry["nulls"] += column.null_count
        if kind == "other" or column.null_count == len(column):
            continue
        numbers = _as_numbers(column, kind)
        bounds = pc.min_max(numbers)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or low != low:
            continue
        entry["min"] = low if "min" not in entry else min(entry["min"], low)
        entry["max"] = high if "max" not in entry else max(entry["max"], high)
        if kind != "time":
            entry["sum"] = entry.get("sum", 0.0) + float(pc.sum(pc.drop_null(numbers)).as_py() or 0.0)


def _as_numbers(column: pa.ChunkedArray, kind: str) -> pa.ChunkedArray:
    if kind == "time":
        return pa.chunked_array([pa.array(_epoch_ms(column), from_pandas=True)])
    numbers = pc.cast(column, pa.float64())
    return pc.if_else(pc.is_nan(numbers), pa.scalar(None, pa.float64()), numbers)
