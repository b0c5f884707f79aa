"""Profile rows as they stream by, row group by row group: exact counts, mergeable sketches, a seeded sample.

`ProfileBuilder` is fed arrow tables (the rows of one batch) and returns the batch's `DatasetProfile`
and its row sample; given the key columns it also keeps the batch's key hashes (`KeyHashes`), computed
in the same pass, so duplicate keys never need a second read. Memory holds one table plus the sample,
the sketches and 8 bytes per keyed row. Builders of parts of one batch (Spark partitions) merge
(`merge`) into the builder of the whole batch.

Exact over every row: row, null, NaN and zero counts, min and max, count/sum/m2 (mean and stdev),
category counts up to MAX_CATEGORIES (a column showing more distinct values in its first
_PROBE_ROWS rows of a table, or more in total, is "too many": None), hour-of-day and weekday
histograms of timestamps. Sketched over every row: quantiles (KLL) of numbers and times (as epoch
milliseconds), distinct values (HyperLogLog) of strings, booleans, integers and times. Floats get no
distinct-count sketch (hashing every measurement cost about as much as the rest of the profile and a
continuous column's distinct count says little; point masses come from the quantile sketch).
Dictionary-encoded strings (categories read as dictionaries) are counted from their indices.

The sample (at most `sample_rows` rows; the profiled quantiles of numbers come from it):
- without key columns (`keys=None`, the historical default): a seeded uniform draw of row positions;
- with `keys` (the engines): a sample by hash, the same whatever the engine or the partitioning. Each
  row's score is splitmix64(hash of its key ^ seed) (of the whole canonical row when `keys` is empty);
  the sample is the `sample_rows` rows of smallest (score, canonical row hash), in that order. Rows
  scoring above a ceiling that keeps about sample_rows + 8·sqrt(sample_rows) rows are dropped as they
  stream by, so memory holds about the sample only. Every copy of a sampled key is sampled (a sample by
  key, as the duplicate count's), and fewer than `sample_rows` rows remain only when very few keys
  repeat very often.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from profiles.engines.content import canonical_row_hashes
from profiles.engines.keys import KeyHashes, key_ceiling
from profiles.hashing import _mix, hash_array, hash_rows
from profiles.profile import MAX_CATEGORIES, QUANTILES, ColumnProfile, DatasetProfile
from profiles.relations import learn_relations
from profiles.sketches import DistinctSketch, Moments, QuantileSketch, _splitmix

__all__ = ["ProfileBuilder", "logical_type", "epoch_ms", "as_number", "frame_of", "WORKERS", "sample_scores"]

_PROBE_ROWS = 10_000  # rows looked at before counting a column's values in a table
_NUMERIC = ("integer", "number")
_TIMES = ("timestamp", "date")
_HASHED = ("string", "boolean")  # counted while few, then hashed value by value
_DISTINCT = ("string", "boolean", "integer", "timestamp", "date")  # floats: no HLL (its cost; see above)
_HOUR_MS, _DAY_MS = 3_600_000, 86_400_000
WORKERS = 2  # columns profiled at once (numpy and arrow release the GIL)
_UNIT_MS = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}
_SMALL_RANGE = 1 << 16  # integers spanning fewer values are counted with one bincount
_MAX_HOURS = 1 << 22  # time spans up to ~478 years are binned per hour since their first hour


def frame_of(table: pa.Table) -> pd.DataFrame:
    """An Arrow table as a DataFrame with every column a column, in the table's order, and pandas' dtypes as its
    writer kept them (a nullable Int64 stays Int64): a pandas index the writer stored (a `set_index` before
    `to_parquet`) is read back as the column it is, never hidden in the index."""
    frame = table.to_pandas()
    metadata = table.schema.pandas_metadata or {}
    stored = [c for c in metadata.get("index_columns", []) if isinstance(c, str) and c in table.column_names]
    if not stored:
        return frame
    frame = frame.reset_index()
    frame.columns = [*stored, *frame.columns[len(stored) :]]
    return frame[table.column_names]


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
    values = (array.drop_null() if isinstance(array, pa.Array) else pc.drop_null(array)) if array.null_count else array
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if pa.types.is_date32(kind):
        return values.cast(pa.int32()).to_numpy(zero_copy_only=False).astype(np.int64) * _DAY_MS
    if pa.types.is_date64(kind):
        return values.cast(pa.int64()).to_numpy(zero_copy_only=False)
    multiply, divide = _UNIT_MS[kind.unit]
    raw = values.view(pa.int64()).to_numpy(zero_copy_only=False)
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


def _plain(column: pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


@dataclass
class _Column:
    """The running state of one column."""

    name: str
    kind: str
    nulls: int = 0
    nans: int = 0
    zeros: int = 0
    low: float | None = None
    high: float | None = None
    moments: Moments = field(default_factory=Moments)
    sketch: QuantileSketch = field(default_factory=QuantileSketch)
    distinct: DistinctSketch | None = None  # only for the types whose values are counted distinct (_DISTINCT)
    counts: dict[str, int] | None = None
    hours: np.ndarray = field(default_factory=lambda: np.zeros(24, dtype=np.int64))
    weekdays: np.ndarray = field(default_factory=lambda: np.zeros(7, dtype=np.int64))

    def __post_init__(self) -> None:
        if self.distinct is None and self.kind in _DISTINCT:  # 4 KiB a column: none for floats (never read)
            self.distinct = DistinctSketch()

    def _distinct(self, hashes: np.ndarray) -> None:
        assert self.distinct is not None, f"{self.kind} values are not counted distinct"
        self.distinct.update_hashes(hashes)

    def add(self, column: pa.ChunkedArray, value_hashes: np.ndarray | None = None) -> None:
        self.nulls += column.null_count
        if self.kind in _NUMERIC:
            self._numbers(column)
        elif self.kind in _TIMES:
            self._times(column)
        elif self.counts is not None:
            self._count_values(column)
        if self.counts is None and self.kind in _HASHED:
            if value_hashes is not None:  # the key's value hashes, computed once for both
                valid = pc.is_valid(column).to_numpy(zero_copy_only=False) if column.null_count else None
                self._distinct(value_hashes if valid is None else value_hashes[valid])
            else:
                for chunk in pc.drop_null(column).chunks if column.null_count else column.chunks:
                    self._distinct(hash_array(chunk))

    def _bounds(self, low: float, high: float) -> None:
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)

    def _numbers(self, column: pa.ChunkedArray) -> None:
        present = _plain(pc.drop_null(column) if column.null_count else column)
        raw = present.to_numpy(zero_copy_only=False)
        values = raw.astype(np.float64, copy=False)
        if not len(values):
            return
        first, last = raw.min(), raw.max()  # integers as they are (exact beyond 2**53), for the distinct values
        low, high = float(first), float(last)
        if math.isnan(low) or math.isnan(high):  # a NaN carries through min and max: none, when neither is one
            nan = np.isnan(values)
            self.nans += int(np.count_nonzero(nan))
            values = raw = values[~nan]
            if not len(values):
                return
            first, last = raw.min(), raw.max()
            low, high = float(first), float(last)
        self._bounds(low, high)
        self.zeros += int(np.count_nonzero(values == 0))
        self.moments = self.moments.merge(Moments.of(values))
        self.sketch.update(values, bounds=(low, high))
        if self.kind == "integer":  # codes, counts, identifiers: distinct counts tell them apart
            self._distinct(hash_array(pa.array(_distinct_integers(raw, int(first), int(last)))))

    def _times(self, column: pa.ChunkedArray) -> None:
        stamps = epoch_ms(column)
        if not len(stamps):
            return
        low, high = int(stamps.min()), int(stamps.max())
        self._bounds(float(low), float(high))
        self._calendar(stamps, low, high)
        self.sketch.update(stamps.astype(np.float64), bounds=(float(low), float(high)))
        self._distinct(_mix(stamps.view(np.uint64).copy()))  # = hash_array of the int64 ms

    def _calendar(self, stamps: np.ndarray, low: int, high: int) -> None:
        """Hour-of-day and weekday histograms: one division and one bincount per row (rows per hour since
        the first hour), folded into 24 and 7 bins; a batch spanning over _MAX_HOURS hours bins row by row."""
        unit = _HOUR_MS if self.kind == "timestamp" else _DAY_MS
        first, last = low // unit, high // unit
        if last - first > _MAX_HOURS:
            periods = np.floor_divide(stamps, unit)
            starts, counts = periods, np.ones(len(periods), dtype=np.int64)
        else:
            counts = np.bincount(np.floor_divide(stamps, unit) - first, minlength=last - first + 1)
            starts = np.arange(first, last + 1)
        hours = starts if unit == _HOUR_MS else starts * 24
        days = np.floor_divide(hours, 24)
        self.weekdays += np.bincount((days + 3) % 7, weights=counts, minlength=7).astype(np.int64)
        if self.kind == "timestamp":
            self.hours += np.bincount(hours % 24, weights=counts, minlength=24).astype(np.int64)

    def _count_values(self, column: pa.ChunkedArray) -> None:
        if pa.types.is_dictionary(column.type):
            self._count_dictionary(column)
            return
        if len(pc.unique(column.slice(0, _PROBE_ROWS))) > MAX_CATEGORIES:
            self.counts = None  # an identifier or free text: stop before counting a million values
            return
        found = pc.value_counts(column.drop_null())
        if len(found) > MAX_CATEGORIES:
            self.counts = None
            return
        self._tally(found.field("values"), found.field("counts").to_pylist())

    def _count_dictionary(self, column: pa.ChunkedArray) -> None:
        """Counts from the indices: the strings themselves are never decoded."""
        for chunk in column.chunks:
            if self.counts is None:
                return
            dictionary = chunk.dictionary
            indices = chunk.indices.drop_null() if chunk.null_count else chunk.indices
            tally = np.bincount(indices.to_numpy(zero_copy_only=False), minlength=len(dictionary))
            used = np.flatnonzero(tally)
            if len(used) > MAX_CATEGORIES:
                self.counts = None
                self._hash_values(dictionary.take(pa.array(used)))
                return
            self._tally(dictionary.take(pa.array(used)), tally[used].tolist())

    def _hash_values(self, values: pa.Array) -> None:
        self._distinct(hash_array(values))

    def _tally(self, values: pa.Array, counts: list[int]) -> None:
        assert self.counts is not None
        self._distinct(hash_array(values))  # the distinct values only: a few hashes
        for value, count in zip(values.to_pylist(), counts):
            self.counts[str(value)] = self.counts.get(str(value), 0) + count
        if len(self.counts) > MAX_CATEGORIES:
            self.counts = None

    def merge(self, other: _Column) -> None:
        """Fold another part's state of the same column into this one."""
        self.nulls, self.nans, self.zeros = self.nulls + other.nulls, self.nans + other.nans, self.zeros + other.zeros
        if other.low is not None and other.high is not None:
            self._bounds(other.low, other.high)
        self.moments = self.moments.merge(other.moments)
        self.sketch = self.sketch.merge(other.sketch)
        if self.distinct is not None and other.distinct is not None:
            self.distinct = self.distinct.merge(other.distinct)
        if self.counts is not None and other.counts is not None:
            for value, count in other.counts.items():
                self.counts[value] = self.counts.get(value, 0) + count
            if len(self.counts) > MAX_CATEGORIES:
                self.counts = None
        else:
            self.counts = None
        self.hours = self.hours + other.hours
        self.weekdays = self.weekdays + other.weekdays

    def profile(self, rows: int, sample: pd.Series) -> ColumnProfile:
        numeric, timed = self.kind in _NUMERIC, self.kind in _TIMES
        profile = ColumnProfile(
            name=self.name,
            logical_type=self.kind,
            row_count=rows,
            null_count=self.nulls,
            minimum=self.low,
            maximum=self.high,
            value_counts=tuple(sorted(self.counts.items())) if self.counts is not None else None,
            nan_count=self.nans,
            moments=self.moments if numeric else None,
            zero_count=self.zeros if numeric else None,
            sketch=self.sketch if numeric or timed else None,
            distinct=self.distinct if self.kind in _DISTINCT else None,
            hours=tuple(int(n) for n in self.hours) if self.kind == "timestamp" else None,
            weekdays=tuple(int(n) for n in self.weekdays) if timed else None,
        )
        if not numeric or not self.moments.count:
            return profile
        values = pd.to_numeric(sample, errors="coerce").dropna().to_numpy(dtype=float)
        quantiles = (
            tuple((q, float(v)) for q, v in zip(QUANTILES, np.quantile(values, QUANTILES))) if len(values) else ()
        )
        return ColumnProfile(
            **{**profile.__dict__, "mean": self.moments.mean, "stdev": self.moments.stdev, "quantiles": quantiles}
        )


def _distinct_integers(values: np.ndarray, low: int, high: int) -> np.ndarray:
    """The distinct values of an integer column (from `low` to `high`) as int64: one bincount when they span a
    small range."""
    values = values.astype(np.int64, copy=False)
    if 0 <= low and high < _SMALL_RANGE:  # counted as they are, without shifting every value
        return np.flatnonzero(np.bincount(values, minlength=high + 1))
    if high - low < _SMALL_RANGE:
        return np.flatnonzero(np.bincount(values - low, minlength=high - low + 1)) + low
    head = values[:_PROBE_ROWS]
    return np.unique(values) if len(np.unique(head)) <= MAX_CATEGORIES else values


def sample_scores(table: pa.Table, keys: Sequence[str], seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Each row's sample score, and its key hash (None without keys): see the module's docstring."""
    salt = _salt(seed)
    if not keys:
        return _mix(canonical_row_hashes(table) ^ salt), None
    key_hashes = hash_rows(table.select(list(keys)))
    return _mix(key_hashes ^ salt), key_hashes


def _salt(seed: int) -> np.uint64:
    return np.uint64(_splitmix(seed & ((1 << 64) - 1)))


def _decoded(table: pa.Table) -> pa.Table:
    """Dictionary columns back to their values (the sample is what a reader of the table would see)."""
    for index, column in enumerate(table.columns):
        if pa.types.is_dictionary(column.type):
            table = table.set_column(index, table.field(index).name, column.cast(column.type.value_type))
    return table


class _PositionSampler:
    """The historical sample: `sample_rows` row positions drawn with the seed, exactly, in table order."""

    def __init__(self, total_rows: int, sample_rows: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.picks = np.sort(rng.choice(total_rows, size=min(sample_rows, total_rows), replace=False))
        self.pieces: list[pa.Table] = []

    def add(self, table: pa.Table, offset: int, scores: np.ndarray | None) -> None:
        low, high = np.searchsorted(self.picks, [offset, offset + table.num_rows])
        if high > low:
            self.pieces.append(_decoded(table.take(pa.array(self.picks[low:high] - offset))))

    def finish(self, schema: pa.Schema) -> pa.Table:
        return pa.concat_tables(self.pieces) if self.pieces else _plain_schema(schema).empty_table()


class _HashSampler:
    """The sample by hash: rows of smallest (score, canonical row hash); mergeable across partitions."""

    def __init__(self, total_rows: int, sample_rows: int) -> None:
        self.sample_rows = sample_rows
        margin = sample_rows + 8 * math.sqrt(sample_rows) + 64
        share = margin / total_rows if total_rows else 1.0
        self.ceiling = None if share >= 1 else np.uint64(int(share * (2**64 - 1)))
        self.pieces: list[pa.Table] = []
        self.scores: list[np.ndarray] = []

    def add(self, table: pa.Table, offset: int, scores: np.ndarray | None) -> None:
        assert scores is not None
        if self.ceiling is None:
            kept, picked = table, scores
        else:
            rows = np.flatnonzero(scores <= self.ceiling)
            if not len(rows):
                return
            kept, picked = table.take(pa.array(rows)), scores[rows]
        self.pieces.append(_decoded(kept))
        self.scores.append(picked)

    def merge(self, other: _HashSampler) -> None:
        self.pieces += other.pieces
        self.scores += other.scores

    def finish(self, schema: pa.Schema) -> pa.Table:
        if not self.pieces:
            return _plain_schema(schema).empty_table()
        table = pa.concat_tables([p.cast(_plain_schema(schema)) for p in self.pieces])
        scores = np.concatenate(self.scores)
        order = np.lexsort((canonical_row_hashes(table), scores))[: self.sample_rows]
        return table.take(pa.array(order))


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema(
        [pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type) for f in schema]
    )


_POOL: list[ThreadPoolExecutor] = []  # the column workers, started once per process (not once per row group)
_POOL_LOCK = threading.Lock()


def _workers() -> ThreadPoolExecutor:
    """The process's column workers. Their tasks never wait on the pool, so builders in several threads share it."""
    with _POOL_LOCK:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="profile"))
        return _POOL[0]


def _forget_workers() -> None:
    """In a forked child the workers' threads are gone: it starts its own."""
    global _POOL_LOCK
    _POOL.clear()
    _POOL_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


class ProfileBuilder:
    """Accumulates exact counts, sketches, a seeded sample (and key hashes) over the tables of one batch."""

    def __init__(
        self,
        schema: pa.Schema,
        total_rows: int,
        *,
        sample_rows: int,
        seed: int,
        keys: Sequence[str] | None = None,
        strict_rows: bool = True,
    ) -> None:
        self.schema = schema
        self.total_rows = total_rows
        self.seed = seed
        self.keys = None if keys is None else tuple(keys)
        self.strict_rows = strict_rows  # False for a part of a batch (a Spark partition)
        self.sampler: _PositionSampler | _HashSampler = (
            _PositionSampler(total_rows, sample_rows, seed)
            if self.keys is None
            else _HashSampler(total_rows, sample_rows)
        )
        self.key_pieces: list[np.ndarray] = []
        self.key_ceiling = key_ceiling(total_rows)  # above EXACT_KEY_ROWS rows, a sample by key
        self.offset = 0  # rows seen so far
        self.columns = {f.name: _Column(f.name, logical_type(f.type)) for f in schema}
        for state in self.columns.values():
            if state.kind in ("string", "boolean"):
                state.counts = {}

    def add(self, table: pa.Table) -> None:
        if self.strict_rows and self.offset + table.num_rows > self.total_rows:
            raise ValueError(
                f"{self.offset + table.num_rows} rows arrived for a batch announced with "
                f"{self.total_rows}: the files changed while they were read; read them again"
            )
        hashed, pool = self._shared_key(), _workers()
        keyed = pool.submit(self._keys, table)  # the key column's own profile rides on its hashes
        list(
            pool.map(
                lambda name: self.columns[name].add(table.column(name)),
                [name for name in table.column_names if name != hashed],
            )
        )
        scores = keyed.result()
        self.sampler.add(table, self.offset, scores)
        self.offset += table.num_rows

    def _shared_key(self) -> str | None:
        """The one key column whose value hashes serve the key, the sample and its distinct count."""
        if not self.keys or len(self.keys) != 1 or self.keys[0] not in self.columns:
            return None
        return self.keys[0] if self.columns[self.keys[0]].kind in _HASHED else None

    def _keys(self, table: pa.Table) -> np.ndarray | None:
        """Sample scores of the table's rows; keeps their key hashes (and profiles a shared key column)."""
        if self.keys is None:
            return None
        hashed = self._shared_key()
        key_hashes: np.ndarray | None
        if hashed is not None:
            values = hash_array(_plain(table.column(hashed)))
            key_hashes = _mix(values.copy())  # = hash_rows of the one key column
            scores = _mix(key_hashes ^ _salt(self.seed))
            self.columns[hashed].add(table.column(hashed), values)
        else:
            scores, key_hashes = sample_scores(table, self.keys, self.seed)
        if key_hashes is None:
            return scores
        complete = np.ones(table.num_rows, dtype=bool) if self.key_ceiling is None else key_hashes <= self.key_ceiling
        for name in self.keys:
            if table.column(name).null_count:
                complete &= pc.is_valid(table.column(name)).to_numpy(zero_copy_only=False)
        self.key_pieces.append(key_hashes[complete])
        return scores

    def merge(self, other: ProfileBuilder) -> None:
        """Fold the builder of another part of the same batch (same schema, keys and seed) into this one."""
        if not isinstance(self.sampler, _HashSampler) or not isinstance(other.sampler, _HashSampler):
            raise ValueError("only builders sampling by hash (given keys) merge: pass keys=() at least")
        for name, state in other.columns.items():
            self.columns[name].merge(state)
        self.sampler.merge(other.sampler)
        self.key_pieces += other.key_pieces
        self.offset += other.offset

    def key_hashes(self) -> KeyHashes | None:
        if not self.keys:
            return None
        hashes = KeyHashes.taken(self.keys, self.key_pieces, exact=self.key_ceiling is None)
        self.key_pieces = [hashes.hashes]
        return hashes

    def finish(self) -> tuple[DatasetProfile, pd.DataFrame]:
        if self.offset != self.total_rows:
            raise ValueError(
                f"{self.offset} rows arrived for a batch announced with {self.total_rows}: the "
                "files changed while they were read; read them again"
            )
        sample = frame_of(self.sampler.finish(self.schema))
        columns = {f.name: self.columns[f.name].profile(self.total_rows, sample[f.name]) for f in self.schema}
        relations = learn_relations(sample, {name: state.kind for name, state in self.columns.items()})
        return DatasetProfile(row_count=self.total_rows, columns=columns, relations=relations), sample
