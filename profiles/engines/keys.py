"""Key hashes of a batch, computed in the profile's pass, so duplicate keys never need a second read.

`KeyHashes` holds the 64-bit hashes (`profiles.hashing.hash_rows` over the key columns, the hash
`profiles.repeats` counts duplicates by) of every row of a batch whose key has no null, sorted: 8 bytes
a row, exact up to 64-bit collisions (n²/2⁶⁵ expected false repeats: 3e-6 at 10M rows). Above EXACT_KEY_ROWS rows, as
`profiles.repeats` does, only the keys hashing into the lowest EXACT_KEY_ROWS / n of the hash range
are kept (a sample by key: every copy of a kept key is kept; `exact` is False), so memory stays at
128 MB whatever the batch. Both engines compute it with the same function, so a batch profiled by
Spark and one profiled by pyarrow compare.

`KeyIndex` is the history: the sorted union of accepted batches' distinct key hashes and a fixed-size
filter in front of it, kept on disk (`save` / `load`, .npy files memory-mapped on load) and extended one
batch at a time (`add`, when a batch is accepted). Checking a batch against it reads the batch's hashes,
one filter byte per key and a binary search for the few keys the filter lets through: the history's
keys are never reread from the table, and the cost barely grows with the history.

Saved hashes carry their hash format (`profiles.hashing.HASH_FORMAT`, in `<name>.hash-format` beside the
.npy; none: format 1). Hashes of another format cannot be compared with fresh ones, nor recomputed from the
hashes alone: loading them is refused (`HashFormatError`, saying to build them again from the key columns).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from profiles.hashing import HASH_FORMAT, HashFormatError

__all__ = ["KeyHashes", "KeyIndex", "DuplicateCount", "EXACT_KEY_ROWS", "key_ceiling"]

EXACT_KEY_ROWS = 16_000_000  # as profiles.repeats: up to this many rows every key hash is kept


def key_ceiling(total_rows: int, exact_rows: int = EXACT_KEY_ROWS) -> np.uint64 | None:
    """Keep key hashes at or below this value: None (all of them) up to `exact_rows` rows."""
    if total_rows <= exact_rows:
        return None
    return np.uint64(int((2**64 - 1) * (exact_rows / total_rows)))


@dataclass(frozen=True)
class DuplicateCount:
    rows_compared: int  # rows with a complete key
    duplicate_rows: int  # rows whose key an earlier row of the batch, or the history, has
    across_rows: int = 0  # of those, rows whose key the history has (every copy counts)
    exact: bool = True

    @property
    def rate(self) -> float:
        return self.duplicate_rows / self.rows_compared if self.rows_compared else 0.0


@dataclass(frozen=True, eq=False)
class KeyHashes:
    columns: tuple[str, ...]
    hashes: np.ndarray  # sorted uint64, one per row with a complete key (repeats kept)
    exact: bool = True  # False: the hashes are a sample by key (see key_ceiling)

    @classmethod
    def of(cls, columns: Sequence[str], pieces: Sequence[np.ndarray], *, exact: bool = True) -> KeyHashes:
        if not len(pieces):  # a batch with no rows (a window nothing reaches)
            return cls(tuple(columns), np.empty(0, dtype=np.uint64), exact)
        hashes = np.concatenate(list(pieces)) if len(pieces) != 1 else pieces[0]
        hashes.sort()
        return cls(tuple(columns), hashes, exact)

    @classmethod
    def taken(cls, columns: Sequence[str], pieces: list[np.ndarray], *, exact: bool = True) -> KeyHashes:
        """`of` the pieces, emptying the list as each is copied: memory holds every hash once, not twice."""
        hashes, at = np.empty(sum(len(p) for p in pieces), dtype=np.uint64), 0
        pieces.reverse()
        while pieces:
            piece = pieces.pop()
            hashes[at : at + len(piece)] = piece
            at += len(piece)
        hashes.sort()
        return cls(tuple(columns), hashes, exact)

    @property
    def rows(self) -> int:
        return len(self.hashes)

    def unique(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct hashes and how many rows have each."""
        h = self.hashes
        if not len(h):
            return h, np.empty(0, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, h[1:] != h[:-1]])
        return h[starts], np.diff(np.r_[starts, len(h)])

    def duplicates(self, history: KeyIndex | None = None) -> DuplicateCount:
        """Rows repeating an earlier row's key; with `history`, also every row whose key the history has."""
        h = self.hashes
        repeats = int(np.count_nonzero(h[1:] == h[:-1])) if len(h) else 0
        across = 0
        if history is not None and history.size:
            if repeats:
                unique, counts = self.unique()
                seen = history.contains(unique)
                across = int(counts[seen].sum())
                repeats += int(seen.sum())
            else:  # every key once (a clean batch): the hashes are their own distinct values, one row each
                across = int(np.count_nonzero(history.contains(h)))
                repeats += across
        return DuplicateCount(rows_compared=len(h), duplicate_rows=repeats, across_rows=across, exact=self.exact)

    def save(self, path: str | Path) -> None:
        np.save(path, self.hashes, allow_pickle=False)
        _save_format(path)

    @classmethod
    def load(cls, path: str | Path, columns: Sequence[str]) -> KeyHashes:
        _expect_format(path, "key hashes", "hash the batch's key columns again (its snapshot's `keys`) and save them")
        return cls(tuple(columns), np.load(path, allow_pickle=False))


_PROBE_SLICE = 1 << 20  # keys looked up in the filter at once
_FILTER_BITS = 28  # the history filter: one bit per value of a hash's top 28 bits (32 MB, whatever the history)


@dataclass(frozen=True, eq=False)
class KeyIndex:
    """The sorted distinct key hashes of the accepted batches, with a fixed-size filter in front.

    `filter` has one bit per value of a hash's top 28 bits (2^28 bits, 32 MB): a batch's keys are looked
    up in it first (one byte read each), and only the keys whose bit is set, a share about the history's
    size / 2^28 (11% at 30M keys), are searched in the sorted hashes. So the work per batch barely grows
    with the history, and the answer stays exact.
    """

    columns: tuple[str, ...]
    hashes: np.ndarray
    filter: np.ndarray  # uint8, 2^28 / 8 bytes

    @classmethod
    def empty(cls, columns: Sequence[str]) -> KeyIndex:
        return cls(tuple(columns), np.empty(0, dtype=np.uint64), np.zeros(1 << (_FILTER_BITS - 3), dtype=np.uint8))

    @property
    def size(self) -> int:
        return len(self.hashes)

    def contains(self, sorted_needles: np.ndarray) -> np.ndarray:
        """For each (sorted) hash, whether the history has it: the filter, then a binary search for the few."""
        found = np.zeros(len(sorted_needles), dtype=bool)
        if not self.size or not len(sorted_needles):
            return found
        maybe = np.concatenate(  # a slice at a time: the probe's temporaries stay a few MB whatever the batch
            [
                np.flatnonzero(_probe(self.filter, sorted_needles[at : at + _PROBE_SLICE])) + at
                for at in range(0, len(sorted_needles), _PROBE_SLICE)
            ]
        )
        needles = sorted_needles[maybe]
        at = np.searchsorted(self.hashes, needles)
        inside = at < self.size
        found[maybe[inside]] = np.asarray(self.hashes[at[inside]]) == needles[inside]
        return found

    def add(self, batch: KeyHashes) -> KeyIndex:
        """The index with a newly accepted batch's keys (inserted at their sorted places)."""
        if batch.columns != self.columns:
            raise ValueError(
                f"the batch's keys {list(batch.columns)} are not the index's {list(self.columns)}: "
                "index one table's key"
            )
        unique, _ = batch.unique()
        fresh = unique[~self.contains(unique)]
        history = np.asarray(self.hashes)
        merged = np.insert(history, np.searchsorted(history, fresh), fresh)
        marks = np.array(self.filter, copy=True)
        top = (fresh >> np.uint64(64 - _FILTER_BITS)).astype(np.int64)
        np.bitwise_or.at(marks, top >> 3, (1 << (top & 7)).astype(np.uint8))
        return KeyIndex(self.columns, merged, marks)

    def save(self, path: str | Path) -> None:
        """The sorted hashes at `path` (.npy) and the filter beside it (`<path>.filter.npy`)."""
        np.save(path, np.asarray(self.hashes), allow_pickle=False)
        np.save(_filter_path(path), np.asarray(self.filter), allow_pickle=False)
        _save_format(path)

    @classmethod
    def load(cls, path: str | Path, columns: Sequence[str]) -> KeyIndex:
        """Memory-mapped: only the pages a lookup touches are read. Refused when saved with another hash format."""
        _expect_format(
            path, "a key index", "build it again from the accepted batches' keys (KeyIndex.empty, then add each batch)"
        )
        return cls(
            tuple(columns),
            np.load(path, mmap_mode="r", allow_pickle=False),
            np.load(_filter_path(path), mmap_mode="r", allow_pickle=False),
        )


def _format_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name.removesuffix(".npy") + ".hash-format")


def _save_format(path: str | Path) -> None:
    _format_path(path).write_text(f"{HASH_FORMAT}\n")


def _expect_format(path: str | Path, what: str, fix: str) -> None:
    """Refuse hashes saved with another hash format (none recorded: format 1, saved before formats were kept)."""
    marker = _format_path(path)
    if not marker.is_file() and not Path(path).is_file():
        return  # nothing saved: the load says so
    text = marker.read_text().strip() if marker.is_file() else "1"
    if text != str(HASH_FORMAT):
        raise HashFormatError(f"{path} holds {what} of hash format {text}; this version hashes with {HASH_FORMAT}", fix)


def _filter_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name.removesuffix(".npy") + ".filter.npy")


def _probe(marks: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    top = (hashes >> np.uint64(64 - _FILTER_BITS)).astype(np.int64)
    return (np.asarray(marks[top >> 3]) >> (top & 7).astype(np.uint8)) & 1 == 1
