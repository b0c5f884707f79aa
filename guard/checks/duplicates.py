"""Duplicate keys: rows repeating a primary key, counted from the snapshot's key columns.

The row sample cannot see a duplicated load: an original and its copy both land in a uniform
sample of fraction p with probability p², so a 0.1% duplicate rate in 10M rows leaves about 0.25
colliding keys in a 50k-row sample. So this check reads only the key column(s) of the parquet
snapshot, row group by row group (READERS at a time), hashes each key to 64 bits and counts repeated
hashes after one sort: 8 bytes of memory per row, the key columns decoded once more.

Exact up to 64-bit hash collisions (expected false repeats n²/2⁶⁵: 3e-6 at 10M rows). Above
`EXACT_KEY_ROWS` rows, only the keys whose hash falls in the lowest `EXACT_KEY_ROWS / n` of the hash
range are kept: a sample by key, not by row, so every copy of a kept key is kept too, and the
duplicate fraction among the kept rows estimates the table's with a binomial standard error of
sqrt(f / EXACT_KEY_ROWS) (under 1e-5 at the 0.1% limit). Rows with a null in any key column are not
compared: null keys are the nulls check's business.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register
from guard.snapshot import SnapshotError

__all__ = ["check_duplicates", "count_duplicate_keys", "hash_rows", "KeyCount", "DUPLICATE_RATE_LIMIT",
           "EXACT_KEY_ROWS", "READERS"]

DUPLICATE_RATE_LIMIT = 0.001  # share of keyed rows that repeat an earlier row's key
EXACT_KEY_ROWS = 16_000_000  # up to this many rows the count is exact (128 MB of hashes)
READERS = 2  # row groups read and hashed concurrently: memory holds this many groups' key columns
_HASH_ROWS = 1 << 18  # rows hashed at once, so the hashing temporaries stay a few MB

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_LOW_BYTES = np.array([(1 << (8 * m)) - 1 for m in range(9)], dtype=np.uint64)  # mask of the first m bytes


@dataclass(frozen=True)
class KeyCount:
    rows_compared: int  # rows with a complete key that were compared
    duplicate_rows: int  # of those, rows whose key an earlier row already had
    exact: bool  # False when the rows compared are a sample by key hash

    @property
    def rate(self) -> float:
        return self.duplicate_rows / self.rows_compared if self.rows_compared else 0.0


@register("duplicates", per_column=False)
def check_duplicates(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot
    keys = ctx.contract.key_columns
    if not keys or any(k not in ctx.snapshot.profile.columns for k in keys):
        return  # no key declared, or a key column missing: the schema check reports that
    count = count_duplicate_keys(ctx.snapshot.path, keys, expected_rows=ctx.snapshot.profile.row_count)
    if count.rate <= DUPLICATE_RATE_LIMIT:
        return
    label = keys[0] if len(keys) == 1 else None
    yield make_finding(
        FindingKind.DUPLICATE_KEYS, ctx.dataset_urn, label, observed=round(count.rate, 6),
        expected=DUPLICATE_RATE_LIMIT, playbook="dedupe_keys", key_columns=list(keys),
        duplicate_rows=count.duplicate_rows, rows_compared=count.rows_compared, exact=count.exact,
        message=f"{count.rate:.2%} of rows ({count.duplicate_rows} of {count.rows_compared}"
                f"{'' if count.exact else ', a sample by key'}) repeat a key of {list(keys)}; "
                f"the limit is {DUPLICATE_RATE_LIMIT:.1%}: a duplicated load?")


def count_duplicate_keys(path: str, keys: Sequence[str], *, expected_rows: int | None = None,
                         exact_rows: int = EXACT_KEY_ROWS) -> KeyCount:
    """Stream the key columns of a parquet file and count rows whose key repeats an earlier one."""
    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SnapshotError(f"cannot open snapshot {path} to count duplicate keys: {exc}") from exc
    total = parquet.metadata.num_rows
    if expected_rows is not None and total != expected_rows:
        raise SnapshotError(f"snapshot {path} has {total} rows, but {expected_rows} were profiled: "
                            "it changed after it was read; run the guard again")
    ceiling = _hash_ceiling(total, exact_rows)
    capacity = total if ceiling is None else int(exact_rows * 1.05) + 4096  # kept rows: binomial, mean exact_rows
    try:
        hashes = _collect(_hashes_by_row_group(path, list(keys), parquet.num_row_groups, ceiling), capacity)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SnapshotError(f"cannot read key columns {list(keys)} of snapshot {path}: {exc}") from exc
    hashes.sort()
    repeats = int(np.count_nonzero(hashes[1:] == hashes[:-1]))
    return KeyCount(rows_compared=len(hashes), duplicate_rows=repeats, exact=ceiling is None)


def _hash_ceiling(total_rows: int, exact_rows: int) -> np.uint64 | None:
    """Keep keys hashing at or below this value: None (all of them) up to `exact_rows` rows."""
    if total_rows <= exact_rows:
        return None
    return np.uint64(int((2**64 - 1) * (exact_rows / total_rows)))


def _hashes_by_row_group(path: str, keys: list[str], groups: int, ceiling: np.uint64 | None) -> Iterator[np.ndarray]:
    """Read and hash the key columns, READERS row groups at a time (arrow and numpy release the GIL)."""

    def one(index: int) -> np.ndarray:
        group = pq.ParquetFile(path).read_row_group(index, columns=keys, use_threads=False)
        pieces = [_kept_hashes(group.slice(start, _HASH_ROWS), ceiling)
                  for start in range(0, group.num_rows, _HASH_ROWS)]
        return np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)

    with ThreadPoolExecutor(max_workers=READERS) as pool:
        yield from pool.map(one, range(groups))


def _collect(pieces: Iterable[np.ndarray], capacity: int) -> np.ndarray:
    """Copy the pieces into one array allocated once (grown only if `capacity` was too small)."""
    hashes, filled = np.empty(capacity, dtype=np.uint64), 0
    for piece in pieces:
        if filled + len(piece) > len(hashes):
            hashes = np.concatenate([hashes[:filled], np.empty(max(len(piece), filled), dtype=np.uint64)])
        hashes[filled:filled + len(piece)] = piece
        filled += len(piece)
    return hashes[:filled]


def _kept_hashes(group: pa.Table, ceiling: np.uint64 | None) -> np.ndarray:
    hashes = hash_rows(group)
    keep = np.ones(group.num_rows, dtype=bool)
    for column in group.columns:
        if column.null_count:
            keep &= pc.is_valid(column).to_numpy(zero_copy_only=False)
    if ceiling is not None:
        keep &= hashes <= ceiling
    return hashes[keep]


def hash_rows(table: pa.Table) -> np.ndarray:
    """A 64-bit hash of each row's values across all columns: equal rows, equal hashes."""
    hashes = np.zeros(table.num_rows, dtype=np.uint64)
    for column in table.columns:
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        hashes = _mix(hashes * _GOLDEN ^ _hash_array(array))
    return hashes


def _hash_array(array: pa.Array) -> np.ndarray:
    kind = array.type
    if pa.types.is_dictionary(kind):
        indices = pc.fill_null(array.indices, 0).to_numpy(zero_copy_only=False).astype(np.intp)
        return _hash_array(array.dictionary)[indices] if len(array.dictionary) else np.zeros(len(array), np.uint64)
    if pa.types.is_string(kind) or pa.types.is_binary(kind):
        return _hash_bytes(array, np.int32)
    if pa.types.is_large_string(kind) or pa.types.is_large_binary(kind):
        return _hash_bytes(array, np.int64)
    if pa.types.is_floating(kind):
        values = pc.fill_null(array.cast(pa.float64()), 0.0).to_numpy(zero_copy_only=False) + 0.0  # -0.0 == 0.0
        return _mix(values.view(np.uint64).copy())
    if pa.types.is_temporal(kind):
        array = array.view(pa.int64() if kind.bit_width == 64 else pa.int32())
    if pa.types.is_integer(kind) or pa.types.is_temporal(kind) or pa.types.is_boolean(kind):
        wide = pa.uint64() if pa.types.is_unsigned_integer(kind) else pa.int64()
        values = pc.fill_null(array.cast(wide), 0).to_numpy(zero_copy_only=False)
        return _mix(values.view(np.uint64).copy())
    return _hash_bytes(array.cast(pa.large_string()), np.int64)


def _hash_bytes(array: pa.Array, offset_type: type[np.signedinteger]) -> np.ndarray:
    """Hash variable-length values 8 bytes at a time, straight from the arrow offsets and data buffers."""
    n = len(array)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    width = np.dtype(offset_type).itemsize
    offsets = np.frombuffer(array.buffers()[1], dtype=offset_type, count=n + 1, offset=array.offset * width)
    offsets = offsets.astype(np.int64)
    lengths = np.diff(offsets)
    data = array.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]] if data is not None else np.empty(0, np.uint8)
    words = np.concatenate([raw, np.zeros(16 + (-len(raw)) % 8, dtype=np.uint8)]).view("<u8")
    starts, end = offsets[:-1] - offsets[0], len(raw)
    hashes = lengths.astype(np.uint64) * _GOLDEN
    for word in range(-(-int(lengths.max(initial=0)) // 8)):
        hashes = _mix(hashes ^ _load_words(words, np.minimum(starts + 8 * word, end), lengths - 8 * word))
    return hashes


def _load_words(words: np.ndarray, starts: np.ndarray, remaining: np.ndarray) -> np.ndarray:
    """The 8 bytes at each byte offset (little-endian), keeping only the first `remaining` of them."""
    index, shift = starts >> 3, (starts & 7).astype(np.uint64) * np.uint64(8)
    low = words[index] >> shift
    high = (words[index + 1] << (np.uint64(63) - shift)) << np.uint64(1)  # two shifts: never by 64
    return (low | high) & _LOW_BYTES[np.clip(remaining, 0, 8)]


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place: a bijection that spreads every input bit over the output."""
    values ^= values >> np.uint64(30)
    values *= _MIX_1
    values ^= values >> np.uint64(27)
    values *= _MIX_2
    values ^= values >> np.uint64(31)
    return values
