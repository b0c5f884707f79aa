"""64-bit hashes of arrow values and rows: a value's hash depends on the value alone.

Shared by the duplicate-key count, the key index, the content hash and the distinct-count sketch.
splitmix64's finaliser mixes each value's bits: numbers, timestamps and booleans by their 64-bit value
(-0.0 as 0.0); strings and binaries by their byte length and their bytes, 8 at a time straight from the
arrow buffers, one round per word of the value's own (a value's hash never depends on the values hashed
beside it, nor on how they are sliced, ordered or chunked); dictionaries through their dictionary. So
equal values hash equal whatever their encoding (string or large_string, plain or dictionary, one chunk
or many) and whichever engine hashes them. A row's hash folds its columns' value hashes in column order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["hash_rows", "hash_array", "HASH_FORMAT", "HashFormatError"]

# Stored beside every persisted hash (a key index, saved key hashes, a profile's distinct sketches; a content hash
# names it in its prefix). 1: a string's hash depended on the longest value hashed beside it. 2: on the value alone.
HASH_FORMAT = 2

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_SHIFT_1, _SHIFT_2, _SHIFT_3 = np.uint64(30), np.uint64(27), np.uint64(31)
_MIX_BLOCK = 1 << 15  # 256 KiB of values and as much scratch: both stay in a core's cache
_LOW_BYTES = np.array([(1 << (8 * m)) - 1 for m in range(9)], dtype=np.uint64)  # mask of the first m bytes


class HashFormatError(ValueError):
    """Stored hashes of another hash format than this version's: they cannot be compared with fresh ones.
    `message` says what was found, `fix` what to do (the control plane maps it into its error tree)."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}"

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return type(self), (self.message, self.fix)


def hash_rows(table: pa.Table) -> np.ndarray:
    """A 64-bit hash of each row's values across all columns: equal rows, equal hashes."""
    hashes = np.zeros(table.num_rows, dtype=np.uint64)
    for column in table.columns:
        array = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        hashes = _mix(hashes * _GOLDEN ^ hash_array(array))
    return hashes


def hash_array(array: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A 64-bit hash of each value (a null hashes as its type's zero: mask nulls out where they matter)."""
    if isinstance(array, pa.ChunkedArray):
        pieces = [hash_array(chunk) for chunk in array.chunks]
        return np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)
    kind = array.type
    if pa.types.is_dictionary(kind):
        indices = pc.fill_null(array.indices, 0).to_numpy(zero_copy_only=False).astype(np.intp)
        return hash_array(array.dictionary)[indices] if len(array.dictionary) else np.zeros(len(array), np.uint64)
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
    """Hash variable-length values 8 bytes at a time, straight from the arrow offsets and data buffers, a block of
    `_MIX_BLOCK` values at a time (`_hash_words`: a block's bytes and its rounds stay in the cache)."""
    n = len(array)
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    width = np.dtype(offset_type).itemsize
    offsets = np.frombuffer(array.buffers()[1], dtype=offset_type, count=n + 1, offset=array.offset * width)
    offsets = offsets.astype(np.int64)
    data = array.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.empty(0, np.uint8)
    hashes = np.empty(n, dtype=np.uint64)
    for first in range(0, n, _MIX_BLOCK):
        bounds = offsets[first : first + _MIX_BLOCK + 1]
        hashes[first : first + _MIX_BLOCK] = _hash_words(raw[bounds[0] : bounds[-1]], bounds - bounds[0])
    return hashes


def _hash_words(raw: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The hashes of the values `offsets` (from 0) delimit in the bytes `raw`. Round w mixes word w into the values
    longer than 8w bytes only: a value's rounds are its own words, whatever else the array holds."""
    n, end = len(offsets) - 1, len(raw)
    lengths, starts = np.diff(offsets), offsets[:-1]
    padded = np.zeros(end + 16, dtype=np.uint8)
    padded[:end] = raw
    # the 8 bytes (little-endian) starting at every byte offset: an unaligned view, one gather per word
    at_byte = np.ndarray(buffer=padded, dtype="<u8", shape=(end + 9,), strides=(1,))
    width = int(lengths[0]) if n and int(lengths.min()) == int(lengths.max()) else None  # identifiers often have one
    hashes = lengths.astype(np.uint64) * _GOLDEN
    rows: np.ndarray | None = None  # the rows still mixing, once few: None while every row is computed on
    for word in range(-(-int(lengths.max(initial=0)) // 8)):
        if rows is None:
            remaining = lengths - 8 * word
            if width is not None:  # the values' words sit `width` bytes apart: a strided copy, not a gather
                mixed = np.ndarray(buffer=padded, dtype="<u8", shape=(n,), offset=8 * word, strides=(width,)).copy()
            else:  # a fresh array: loaded, then mixed in place (a word 0 starts inside the data)
                mixed = at_byte[starts if word == 0 else np.minimum(starts + 8 * word, end)]
            if int(remaining.min()) < 8:  # keep only each value's own bytes (none past its end)
                mixed &= _LOW_BYTES[np.clip(remaining, 0, 8)]
            mixed ^= hashes
            _mix(mixed)
            # a value's rounds are its own words: a value without word `word` keeps its hash
            if int(remaining.min()) > 0:
                hashes = mixed
            else:
                np.copyto(hashes, mixed, where=remaining > 0)
            going = remaining > 8
            if np.count_nonzero(going) * 4 < n:  # few rows have another word: index them from here
                rows = np.flatnonzero(going)
        else:
            remaining = lengths[rows] - 8 * word
            loaded = at_byte[starts[rows] + 8 * word] & _LOW_BYTES[np.minimum(remaining, 8)]
            hashes[rows] = _mix(hashes[rows] ^ loaded)
            rows = rows[remaining > 8]
            if not len(rows):
                break
    return hashes


def _mix(values: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place: a bijection that spreads every input bit over the output.

    Block by block (`_MIX_BLOCK` values): the eight passes of a block run while it sits in the cache, where eight
    passes over a whole 10M-row array would each go out to memory (a quarter of the CPU, the same digits)."""
    scratch = np.empty(min(len(values), _MIX_BLOCK), dtype=np.uint64)  # for the three shifts
    for start in range(0, len(values), _MIX_BLOCK):
        block = values[start : start + _MIX_BLOCK]
        shifted = scratch[: len(block)]
        np.right_shift(block, _SHIFT_1, out=shifted)
        block ^= shifted
        block *= _MIX_1
        np.right_shift(block, _SHIFT_2, out=shifted)
        block ^= shifted
        block *= _MIX_2
        np.right_shift(block, _SHIFT_3, out=shifted)
        block ^= shifted
    return values
