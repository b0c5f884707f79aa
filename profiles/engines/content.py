"""Canonical row hashes and the content hash of a table: equal logical rows hash equal in every engine.

A row's hash folds, over its columns in name order, the hash of the column's name and of the value in
its canonical form: integers and booleans as int64, floats as float64 bits (-0.0 as 0.0, every NaN as
one NaN), strings and binaries by their bytes, timestamps as UTC epoch microseconds, dates as epoch
days, dictionaries through their values, null as its own constant (never equal to 0 or ""). Column
order, chunking, row order, string offsets width (string/large_string) and timestamp unit (s/ms/us/ns,
truncated to microseconds, Spark's precision) do not change a row's hash.

The content hash of a table (`content_hash`) is order-independent: `kintsugi-content/2:` followed by
the row count and two 64-bit lanes, each the sum modulo 2^64 of a mix of every row's hash (a multiset
hash: duplicated rows count twice; reordering or repartitioning changes nothing). Both engines compute
it with these functions (Spark per partition, summed on the driver), so a table healed by Spark and
the same rows written by pandas have one content hash. The prefix names the format: /1 hashed a string
by the longest value in its chunk (`profiles.hashing.HASH_FORMAT` 1), so a /1 hash never equals a /2 one
(compare a recorded /1 hash by recomputing it from the table; Spark executors still hashing /1 fail
`probe_spark`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profiles.hashing import _mix, hash_array

__all__ = ["canonical_row_hashes", "ContentDigest", "content_hash_of_tables", "CONTENT_FORMAT"]

CONTENT_FORMAT = "kintsugi-content/2"  # /2: value hashes of HASH_FORMAT 2
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_NULL = np.uint64(0x6A09E667F3BCC909)
_LANE = np.uint64(0xBB67AE8584CAA73B)
_NAN_BITS = np.float64(np.nan).view(np.uint64)


def _name_hash(name: str) -> np.uint64:
    return hash_array(pa.array([name], pa.string()))[0]


def canonical_values(array: pa.Array) -> np.ndarray:
    """The 64-bit hash of each value in its canonical form (nulls as the null constant)."""
    kind = array.type
    if pa.types.is_dictionary(kind):  # each distinct value hashed once, then gathered by the indices
        values = canonical_values(array.dictionary)
        indices = pc.fill_null(array.indices, 0).to_numpy(zero_copy_only=False).astype(np.intp)
        hashes = values[indices] if len(values) else np.full(len(array), _NULL, dtype=np.uint64)
        if array.null_count:
            hashes = np.where(pc.is_valid(array).to_numpy(zero_copy_only=False), hashes, _NULL)
        return hashes
    if pa.types.is_timestamp(kind):
        raw = pc.fill_null(array.view(pa.int64()), 0).to_numpy(zero_copy_only=False)
        scale = {"s": -1_000_000, "ms": -1000, "us": 1, "ns": 1000}[kind.unit]  # negative: multiply
        micros = raw * -scale if scale < 0 else np.floor_divide(raw, scale) if scale > 1 else raw
        hashes = _mix(micros.astype(np.int64).view(np.uint64).copy())  # = hash_array of the int64 micros
    elif pa.types.is_date(kind):
        hashes = hash_array(array.cast(pa.date32()).view(pa.int32()).cast(pa.int64()))
    elif pa.types.is_floating(kind):
        values = pc.fill_null(array.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False) + 0.0
        bits = values.view(np.uint64).copy()
        bits[np.isnan(values)] = _NAN_BITS
        hashes = _mix(bits)
    elif pa.types.is_boolean(kind):
        hashes = hash_array(array.cast(pa.int64()))
    else:
        hashes = hash_array(array)
    if array.null_count:
        hashes = np.where(pc.is_valid(array).to_numpy(zero_copy_only=False), hashes, _NULL)
    return hashes


def canonical_row_hashes(table: pa.Table | pa.RecordBatch) -> np.ndarray:
    """One 64-bit hash per row, over every column in name order."""
    hashes = np.zeros(table.num_rows, dtype=np.uint64)
    for name in sorted(table.schema.names):
        column = table.column(name)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        hashes = _mix(hashes * _GOLDEN ^ _mix(canonical_values(column) ^ _name_hash(name)))
    return hashes


@dataclass(frozen=True)
class ContentDigest:
    """A mergeable, order-independent digest of rows: their count and two sums of mixed row hashes."""

    rows: int = 0
    lane_a: int = 0
    lane_b: int = 0

    @classmethod
    def of(cls, table: pa.Table | pa.RecordBatch) -> ContentDigest:
        hashes = canonical_row_hashes(table)
        a = int(_mix(hashes.copy()).sum(dtype=np.uint64))
        b = int(_mix(hashes ^ _LANE).sum(dtype=np.uint64))
        return cls(table.num_rows, a, b)

    def merge(self, other: ContentDigest) -> ContentDigest:
        mask = (1 << 64) - 1
        return ContentDigest(
            self.rows + other.rows, (self.lane_a + other.lane_a) & mask, (self.lane_b + other.lane_b) & mask
        )

    @property
    def hash(self) -> str:
        return f"{CONTENT_FORMAT}:{self.rows}:{self.lane_a:016x}{self.lane_b:016x}"


def content_hash_of_tables(tables: Iterable[pa.Table | pa.RecordBatch]) -> str:
    digest = ContentDigest()
    for table in tables:
        digest = digest.merge(ContentDigest.of(table))
    return digest.hash
