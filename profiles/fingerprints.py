"""Fingerprints of the rows of time windows, all windows in one pass over a table: rows, and per column the
nulls and (for numbers and times) the minimum, maximum and sum.

It is how history is checked cheaply: every batch the guard passed is fingerprinted at every run and compared
with its fingerprint when it passed; only a batch whose fingerprint moved is profiled again and guarded. One
aggregate scan of the table, at about the cost of reading it — no sketch, no sample, no Python per row: each row
is given its window by one binary search over the windows' sorted bounds.

The rows after the kept batches (the new batch, `rest`) are only told apart from the rows in no window: a row group
whose footer puts every time of it there (its time column's minimum, maximum and null count, exact in parquet) is
not read at all, so a guard reads its new rows once, to profile them.

With a `FingerprintCache`, the scan follows the batch instead: what a row group adds to each window's fingerprint
is kept, keyed by the row group's footer (its ordinal, rows, byte sizes, encodings and statistics, column by column,
and the file's schema), so a row group whose footer is unchanged is not read again, and an appended table
(more row groups, in the same file or a new one) reads only the new ones. A row group is read again when the
windows its times meet are not the ones it was fingerprinted for (a new batch kept over it). The footer is the
row group's identity: a rewrite that keeps every byte size and every minimum, maximum and null count of every
column chunk of a row group is not seen; one that changes any of them (a rescale, a column swapped, rows added
or dropped) is.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profiles.profile import DatasetProfile, TimeWindow
from profiles.records import Record
from profiles.snapshot import footer_bounds
from tables import readonce

__all__ = [
    "Fingerprint",
    "FingerprintCache",
    "GroupPrints",
    "row_group_key",
    "fingerprint_windows",
    "fingerprint_of_profile",
    "fingerprint_rows",
    "rows_in",
]

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

    def moved(self, kept: Fingerprint, *, rel_tol: float = 1e-6) -> dict[str, str]:
        """How these rows differ from the kept ones, column by column, in words (evidence for a person: which
        columns to look at; `matches` decides). A column gone, or one whose nulls, least, greatest or total moved."""
        said: dict[str, str] = {}
        for name, then in kept.columns.items():
            now = self.columns.get(name)
            if now is None:
                said[name] = "gone"
                continue
            changes = [
                f"{key} {_said(then.get(key))} -> {_said(now.get(key))}"
                for key in ("nulls", "min", "max", "sum")
                if not _near(then.get(key), now.get(key), rel_tol)
            ]
            if changes:
                said[name] = ", ".join(changes)
        return said


def _near(a: float | None, b: float | None, rel_tol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=rel_tol, abs_tol=1e-9)


def _said(value: float | None) -> str:
    return "none" if value is None else f"{value:.6g}"


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


Bounds = tuple[int | None, int | None]  # a window's (after_ms, through_ms)


@dataclass
class GroupPrints(Record):
    """What one row group adds to the fingerprints of the windows its times meet: the span of its times (None: all
    null), the bounds of the windows that span meets, each such window's rows' fingerprint (rows 0: none of its
    rows lie there), and its rows in none of them."""

    column: str
    low: float | None
    high: float | None
    windows: list[Bounds]
    prints: list[Fingerprint]
    outside: int

    def fits(self, column: str, windows: Sequence[TimeWindow]) -> bool:
        """These are the row group's prints for `windows`: it meets exactly the windows it was fingerprinted for."""
        return column == self.column and _met(self.low, self.high, windows) == self.windows


def _met(low: float | None, high: float | None, windows: Sequence[TimeWindow]) -> list[Bounds]:
    if low is None or high is None:
        return []
    return [(w.after_ms, w.through_ms) for w in windows if not w.misses_range(low, high)]


_CACHE_FORMAT = 1


@dataclass
class FingerprintCache:
    """Row groups' prints (`GroupPrints`) by their footer, kept between runs (`load` / `save`: one JSON file).

    `hits` counts the row groups answered from the cache, `reads` those read; an entry neither used since `load`
    nor by the run that saved it last is dropped at `save`, so the file follows the table's row groups."""

    entries: dict[str, GroupPrints] = field(default_factory=dict)
    hits: int = 0
    reads: int = 0
    footers: int = 0  # row groups answered by their footer alone (wholly among the new rows), unread
    generation: int = 0  # how many saves made the file
    seen: dict[str, int] = field(default_factory=dict)  # entry -> the last generation that used it

    @classmethod
    def load(cls, path: Path) -> FingerprintCache:
        """The cache kept at `path`; empty when there is none, or it is unreadable or of another format (every row
        group is then read, as without a cache)."""
        try:
            data = json.loads(Path(path).read_text())
            if data.get("format") != _CACHE_FORMAT:
                return cls()
            kept = {key: (int(seen), GroupPrints.from_dict(part)) for key, (seen, part) in data["entries"].items()}
            return cls(
                {key: part for key, (_, part) in kept.items()},
                generation=int(data["generation"]),
                seen={key: seen for key, (seen, _) in kept.items()},
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return cls()

    def save(self, path: Path) -> None:
        """Keep the entries used since `load`, and those the last save used, atomically. A cache that cannot be
        written costs only a read of the row groups next time."""
        generation = self.generation + 1
        entries = {
            key: [self.seen[key], part.to_dict()]
            for key, part in self.entries.items()
            if self.seen.get(key, -1) >= self.generation
        }
        path = Path(path)
        temporary: str | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".fingerprints-", suffix=".json")
            with os.fdopen(handle, "w") as out:
                # dumps, not dump: dump to a file encodes in Python, chunk by chunk (ten times slower)
                out.write(json.dumps({"format": _CACHE_FORMAT, "generation": generation, "entries": entries}))
            os.replace(temporary, path)
        except OSError:
            if temporary is not None:
                Path(temporary).unlink(missing_ok=True)

    def lookup(self, key: str, column: str, windows: Sequence[TimeWindow]) -> GroupPrints | None:
        found = self.entries.get(key)
        if found is None or not found.fits(column, windows):
            return None
        self.hits += 1
        self.seen[key] = self.generation + 1
        return found

    def keep(self, key: str, part: GroupPrints) -> None:
        self.reads += 1
        self.entries[key] = part
        self.seen[key] = self.generation + 1


_PLACES = ("file_offset", "dictionary_page_offset", "data_page_offset", "bloom_filter_offset")


def row_group_key(source: pq.ParquetFile, group: int, schema: str | None = None) -> str:
    """A row group's identity from the file's footer alone: its ordinal, rows, and every column chunk's byte sizes,
    encodings and statistics, with the file's schema (`schema`: its text, when already made). Where in the file its
    bytes start is left out: a row group rewritten before it moves it, not its content."""
    described = source.metadata.row_group(group).to_dict()
    described["columns"] = [{k: v for k, v in c.items() if k not in _PLACES} for c in described["columns"]]
    whole = {"group": group, "schema": str(source.schema_arrow) if schema is None else schema, "metadata": described}
    return hashlib.sha256(json.dumps(whole, sort_keys=True, default=str).encode()).hexdigest()


def fingerprint_windows(
    path: Path,
    windows: Sequence[TimeWindow],
    cache: FingerprintCache | None = None,
    *,
    rest: TimeWindow | None = None,
) -> tuple[list[Fingerprint], int]:
    """One fingerprint per window (rows in (after, through]), and the count of rows in none of them nor in `rest`
    (a null time lies in no window), in one pass over the parquet file; with `cache`, only the row groups it does
    not hold for these windows are read (and then kept in it). `rest` (the rows after the kept batches) is not
    fingerprinted: a row group its footer puts wholly inside `rest`, and outside every window, is not read."""
    given = len(windows)
    windows = [*windows, rest] if rest is not None else list(windows)
    if not windows:
        return [], 0
    column = windows[0].column
    source = readonce.open_parquet(path)
    time_leaf = _leaf(source, column)
    kinds = {f.name: _kind(f.type) for f in source.schema_arrow}
    prints = [Fingerprint(0, {name: {"nulls": 0.0} for name in kinds}) for _ in windows]
    first: dict[Bounds, int] = {}  # a window's bounds -> its first index (a row lies in the first window that holds it)
    for index, window in enumerate(windows):
        first.setdefault((window.after_ms, window.through_ms), index)
    outside, schema = 0, str(source.schema_arrow)
    for group in range(source.num_row_groups):
        if rest is not None and _only_rest(source, group, time_leaf, windows[:given], rest):
            if cache is not None:
                cache.footers += 1
            continue
        key = row_group_key(source, group, schema) if cache is not None else ""
        part = cache.lookup(key, column, windows) if cache is not None else None
        if part is None:
            part = _group_prints(source.read_row_group(group), column, windows, kinds)
            if cache is not None:
                cache.keep(key, part)
        for bounds, found in zip(part.windows, part.prints):
            if found.rows:
                at = first[bounds]
                prints[at] = prints[at].merged(found)
        outside += part.outside
    return prints[:given], outside


def _leaf(source: pq.ParquetFile, column: str) -> int | None:
    """The index of a top-level column among the file's leaf columns (those the footer describes)."""
    leaves = source.metadata.schema
    return next((i for i in range(len(leaves)) if leaves.column(i).path == column), None)


def _only_rest(
    source: pq.ParquetFile, group: int, leaf: int | None, windows: Sequence[TimeWindow], rest: TimeWindow
) -> bool:
    """The row group's footer puts every time of it inside `rest` and outside every window (no null time: a null
    lies in no window and must be counted)."""
    bounds = footer_bounds(source, group, leaf) if leaf is not None else None
    if bounds is None:
        return False
    return rest.contains_range(*bounds) and all(w.misses_range(*bounds) for w in windows)


def _group_prints(table: pa.Table, column: str, windows: Sequence[TimeWindow], kinds: dict[str, str]) -> GroupPrints:
    stamps = _epoch_ms(table.column(column))
    known = stamps[~np.isnan(stamps)]
    low, high = (float(known.min()), float(known.max())) if len(known) else (None, None)
    met = _met(low, high, windows)
    slot = _slot_of(stamps, windows)
    position = {bounds: i for i, bounds in reversed(list(enumerate(met)))}
    prints = [Fingerprint(0, {name: {"nulls": 0.0} for name in kinds}) for _ in met]
    order = np.argsort(slot, kind="stable")
    counts = np.bincount(slot + 1, minlength=len(windows) + 1)
    starts = np.concatenate([[0], np.cumsum(counts)])
    whole = len(slot) > 0 and int(counts[int(slot[0]) + 1]) == len(slot)  # every row in one window: no take
    for index in np.flatnonzero(counts[1:]):
        window = windows[int(index)]
        rows = table if whole else table.take(order[starts[index + 1] : starts[index + 2]])
        _add(prints[position[(window.after_ms, window.through_ms)]], rows, kinds)
    return GroupPrints(column, low, high, met, prints, int(counts[0]))


def fingerprint_rows(rows: pa.Table) -> Fingerprint:
    """The fingerprint of rows already read (as `fingerprint_windows` gives a window's)."""
    kinds = {f.name: _kind(f.type) for f in rows.schema}
    into = Fingerprint(0, {name: {"nulls": 0.0} for name in kinds})
    _add(into, rows, kinds)
    return into


def rows_in(path: Path, window: TimeWindow) -> pa.Table:
    """The rows of the parquet file whose time lies in the window, in file order (one pass; for a few rows)."""
    source = readonce.open_parquet(path)
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
    return _slot_of(_epoch_ms(times), windows)


def _slot_of(stamps: np.ndarray, windows: Sequence[TimeWindow]) -> np.ndarray:
    """The index of the first window holding each time (epoch ms, NaN: null), or -1. Windows that do not overlap
    (kept batches and the rows after them) are searched at once: each time is placed among the windows' lower
    bounds, sorted, by one binary search, then checked against that window's upper bound."""
    after = np.array([-np.inf if w.after_ms is None else float(w.after_ms) for w in windows])
    through = np.array([np.inf if w.through_ms is None else float(w.through_ms) for w in windows])
    order = np.argsort(after, kind="stable")
    after, through = after[order], through[order]
    if np.any(through[:-1] > after[1:]):  # windows that overlap: each row goes to the first that holds it
        return _first_slot(stamps, windows)
    at = np.searchsorted(after, stamps, side="left") - 1  # the window of the greatest lower bound below the time
    held = at >= 0
    held[held] = stamps[held] <= through[at[held]]  # a NaN (null) time is held by none
    return np.where(held, order[np.maximum(at, 0)], -1).astype(np.int64)


def _first_slot(stamps: np.ndarray, windows: Sequence[TimeWindow]) -> np.ndarray:
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
