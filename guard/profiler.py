"""Profile rows as they stream by, row group by row group: exact counts, mergeable sketches, a seeded sample.

`ProfileBuilder` is fed arrow tables (the rows of one batch, in order) and returns the batch's
`DatasetProfile` and its row sample. Memory holds one table plus the sample and the sketches.

Exact over every row: row, null, NaN and zero counts, min and max, count/sum/m2 (mean and stdev),
category counts up to MAX_CATEGORIES (a column showing more distinct values in its first
_PROBE_ROWS rows of a table, or more in total, is "too many": None), hour-of-day and weekday
histograms of timestamps. Sketched over every row: quantiles (KLL) of numbers and times (as epoch
milliseconds), distinct values (HyperLogLog) of strings, booleans, integers and times. Floats get no
distinct-count sketch: hashing every measurement cost about as much as the rest of the profile (23 ms
per column per million rows) and a continuous column's distinct count says little; its point masses
come from the quantile sketch. From the seeded uniform sample of at most `sample_rows`
rows (exact for smaller tables): the profiled quantiles of numbers that the checks compare, as before.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from guard.hashing import hash_array
from guard.profile import MAX_CATEGORIES, QUANTILES, ColumnProfile, DatasetProfile
from guard.relations import learn_relations
from guard.sketches import DistinctSketch, Moments, QuantileSketch

__all__ = ["ProfileBuilder", "logical_type", "epoch_ms", "as_number", "WORKERS"]

_PROBE_ROWS = 10_000  # rows looked at before counting a column's values in a table
_NUMERIC = ("integer", "number")
_TIMES = ("timestamp", "date")
_HASHED = ("string", "boolean")  # counted while few, then hashed value by value
_DISTINCT = ("string", "boolean", "integer", "timestamp", "date")  # floats: no HLL (its cost; see below)
_HOUR_MS, _DAY_MS = 3_600_000, 86_400_000
WORKERS = 2  # columns profiled at once (numpy and arrow release the GIL)
_UNIT_MS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}


def logical_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_dictionary(arrow_type):
        return logical_type(arrow_type.value_type)
    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "number"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if pa.types.is_timestamp(arrow_type):
        return "timestamp"
    if pa.types.is_date(arrow_type):
        return "date"
    return str(arrow_type)


def epoch_ms(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Non-null timestamps or dates as UTC epoch milliseconds (int64, floored; naive times read as UTC)."""
    kind = array.type
    values = array.drop_null() if isinstance(array, pa.Array) else pc.drop_null(array)
    if pa.types.is_date32(kind):
        return values.cast(pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64) * _DAY_MS
    if pa.types.is_date64(kind):
        return values.cast(pa.int64()).to_numpy(zero_copy_only=False)
    multiply, divide = _UNIT_MS[kind.unit]
    raw = values.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return raw * multiply if divide == 1 else np.floor_divide(raw, divide)


def as_number(value: object) -> float | None:
    """Numbers as floats; timestamps and dates as epoch milliseconds."""
    if value is None:
        return None
    if isinstance(value, pd.Timestamp) or hasattr(value, "timestamp"):
        stamp = pd.Timestamp(value)
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize("UTC")
        return float(stamp.value // 1_000_000)
    if hasattr(value, "toordinal"):
        return float(pd.Timestamp(value).tz_localize("UTC").value // 1_000_000)
    return float(value)  # type: ignore[arg-type]


@dataclass
class _Column:
    """The running state of one column."""

    name: str
    kind: str
    nulls: int = 0
    nans: int = 0
    zeros: int = 0
    low: object = None
    high: object = None
    moments: Moments = field(default_factory=Moments)
    sketch: QuantileSketch = field(default_factory=QuantileSketch)
    distinct: DistinctSketch = field(default_factory=DistinctSketch)
    counts: dict[str, int] | None = None
    hours: np.ndarray = field(default_factory=lambda: np.zeros(24, dtype=np.int64))
    weekdays: np.ndarray = field(default_factory=lambda: np.zeros(7, dtype=np.int64))

    def add(self, column: pa.ChunkedArray) -> None:
        self.nulls += column.null_count
        if self.kind in _NUMERIC or self.kind in _TIMES:
            self._min_max(column)
        if self.kind in _NUMERIC:
            self._numbers(column)
        elif self.kind in _TIMES:
            self._times(column)
        elif self.counts is not None:
            self._count_values(column)
        if self.counts is None and self.kind in _HASHED:
            self._hash(pc.drop_null(column))

    def _min_max(self, column: pa.ChunkedArray) -> None:
        bounds = pc.min_max(column)  # skips nulls, and NaN unless every value is NaN
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or low != low:  # no value, or only NaN
            return
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)

    def _numbers(self, column: pa.ChunkedArray) -> None:
        values = pc.drop_null(column).to_numpy().astype(np.float64, copy=False)
        if self.kind == "number":
            nan = np.isnan(values)
            found = int(np.count_nonzero(nan))
            if found:
                self.nans += found
                values = values[~nan]
        self.zeros += int(np.count_nonzero(values == 0))
        self.moments = self.moments.merge(Moments.of(values))
        self.sketch.update(values)
        if self.kind == "integer":  # codes, counts, identifiers: distinct counts tell them apart
            present = pc.drop_null(column)
            few = len(pc.unique(present.slice(0, _PROBE_ROWS))) <= MAX_CATEGORIES
            self.distinct.update_hashes(hash_array(pc.unique(present) if few else pa.array(values.astype(np.int64))))

    def _times(self, column: pa.ChunkedArray) -> None:
        stamps = np.concatenate([epoch_ms(chunk) for chunk in column.chunks]) if column.num_chunks else \
            np.empty(0, np.int64)
        days = np.floor_divide(stamps, _DAY_MS)
        self.weekdays += np.bincount((days + 3) % 7, minlength=7)  # 1970-01-01 was a Thursday
        if self.kind == "timestamp":
            self.hours += np.bincount(np.floor_divide(stamps, _HOUR_MS) % 24, minlength=24)
        self.sketch.update(stamps.astype(np.float64))
        self.distinct.update_hashes(hash_array(pa.array(stamps)))

    def _count_values(self, column: pa.ChunkedArray) -> None:
        counts = self.counts
        assert counts is not None
        if len(pc.unique(column.slice(0, _PROBE_ROWS))) > MAX_CATEGORIES:
            self.counts = None  # an identifier or free text: stop before counting a million values
            return
        found = pc.value_counts(column.drop_null())
        if len(found) > MAX_CATEGORIES:
            self.counts = None
            return
        values = found.field("values")
        self.distinct.update_hashes(hash_array(values))  # the distinct values only: a few hashes
        for value, count in zip(values.to_pylist(), found.field("counts").to_pylist()):
            counts[str(value)] = counts.get(str(value), 0) + count
        if len(counts) > MAX_CATEGORIES:
            self.counts = None

    def _hash(self, present: pa.ChunkedArray) -> None:
        for chunk in present.chunks:
            self.distinct.update_hashes(hash_array(chunk))

    def profile(self, rows: int, sample: pd.Series) -> ColumnProfile:
        numeric, timed = self.kind in _NUMERIC, self.kind in _TIMES
        profile = ColumnProfile(
            name=self.name, logical_type=self.kind, row_count=rows, null_count=self.nulls,
            minimum=as_number(self.low), maximum=as_number(self.high),
            value_counts=tuple(sorted(self.counts.items())) if self.counts is not None else None,
            nan_count=self.nans, moments=self.moments if numeric else None,
            zero_count=self.zeros if numeric else None, sketch=self.sketch if numeric or timed else None,
            distinct=self.distinct if self.kind in _DISTINCT else None, hours=tuple(int(n) for n in self.hours) if self.kind == "timestamp" else None,
            weekdays=tuple(int(n) for n in self.weekdays) if timed else None)
        if not numeric or not self.moments.count:
            return profile
        values = pd.to_numeric(sample, errors="coerce").dropna().to_numpy(dtype=float)
        quantiles = tuple((q, float(v)) for q, v in zip(QUANTILES, np.quantile(values, QUANTILES))) if len(
            values) else ()
        return ColumnProfile(**{**profile.__dict__, "mean": self.moments.mean, "stdev": self.moments.stdev,
                                "quantiles": quantiles})


class ProfileBuilder:
    """Accumulates exact counts, sketches and a seeded sample over the tables of one batch, in order."""

    def __init__(self, schema: pa.Schema, total_rows: int, *, sample_rows: int, seed: int) -> None:
        self.schema = schema
        self.total_rows = total_rows
        rng = np.random.default_rng(seed)  # the sampled rows, drawn once: exactly min(sample_rows, total_rows)
        self.picks = np.sort(rng.choice(total_rows, size=min(sample_rows, total_rows), replace=False))
        self.offset = 0  # row number (within the batch) of the next table's first row
        self.pieces: list[pa.Table] = []
        self.columns = {f.name: _Column(f.name, logical_type(f.type)) for f in schema}
        for state in self.columns.values():
            if state.kind in ("string", "boolean"):
                state.counts = {}

    def add(self, table: pa.Table) -> None:
        if self.offset + table.num_rows > self.total_rows:
            raise ValueError(f"{self.offset + table.num_rows} rows arrived for a batch announced with "
                             f"{self.total_rows}: the files changed while they were read; read them again")
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            list(pool.map(lambda name: self.columns[name].add(table.column(name)), table.column_names))
        low, high = np.searchsorted(self.picks, [self.offset, self.offset + table.num_rows])
        if high > low:
            self.pieces.append(table.take(pa.array(self.picks[low:high] - self.offset)))
        self.offset += table.num_rows

    def finish(self) -> tuple[DatasetProfile, pd.DataFrame]:
        if self.offset != self.total_rows:
            raise ValueError(f"{self.offset} rows arrived for a batch announced with {self.total_rows}: the "
                             "files changed while they were read; read them again")
        table = pa.concat_tables(self.pieces) if self.pieces else self.schema.empty_table()
        sample = table.to_pandas()
        columns = {f.name: self.columns[f.name].profile(self.total_rows, sample[f.name]) for f in self.schema}
        relations = learn_relations(sample, {name: state.kind for name, state in self.columns.items()})
        return DatasetProfile(row_count=self.total_rows, columns=columns, relations=relations), sample
