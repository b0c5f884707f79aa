"""Key hashes of a batch, computed in the profile's pass, so duplicate keys never need a second read.

`KeyHashes` holds the 64-bit hashes (`guard.hashing.hash_rows` over the key columns, the hash the
duplicates check uses) of every row of a batch whose key has no null, sorted: 8 bytes a row, exact up
to 64-bit collisions (n²/2⁶⁵ expected false repeats: 3e-6 at 10M rows). Above EXACT_KEY_ROWS rows, as
the duplicates check does, only the keys hashing into the lowest EXACT_KEY_ROWS / n of the hash range
are kept (a sample by key: every copy of a kept key is kept; `exact` is False), so memory stays at
128 MB whatever the batch. Both engines compute it with the same function, so a batch profiled by
Spark and one profiled by pyarrow compare.

`KeyIndex` is the history: the sorted union of accepted batches' distinct key hashes, kept on disk
(`save` / `load`, a .npy file memory-mapped on load) and extended one batch at a time (`add`: one merge
of sorted arrays when a batch is accepted). Checking a batch against it reads only the batch's hashes
and a binary search per distinct key of the batch: the history's keys are never reread from the table.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

__all__ = ["KeyHashes", "KeyIndex", "DuplicateCount", "EXACT_KEY_ROWS", "key_ceiling"]

EXACT_KEY_ROWS = 16_000_000  # as guard.checks.duplicates: up to this many rows every key hash is kept


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
        hashes = np.concatenate(list(pieces)) if len(pieces) != 1 else pieces[0]
        hashes = hashes if len(pieces) else np.empty(0, dtype=np.uint64)
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
            unique, counts = self.unique()
            seen = history.contains(unique)
            across = int(counts[seen].sum())
            repeats += int(seen.sum())
        return DuplicateCount(rows_compared=len(h), duplicate_rows=repeats, across_rows=across, exact=self.exact)

    def save(self, path: str | Path) -> None:
        np.save(path, self.hashes, allow_pickle=False)

    @classmethod
    def load(cls, path: str | Path, columns: Sequence[str]) -> KeyHashes:
        return cls(tuple(columns), np.load(path, allow_pickle=False))


@dataclass(frozen=True, eq=False)
class KeyIndex:
    """The sorted distinct key hashes of the accepted batches."""

    columns: tuple[str, ...]
    hashes: np.ndarray

    @classmethod
    def empty(cls, columns: Sequence[str]) -> KeyIndex:
        return cls(tuple(columns), np.empty(0, dtype=np.uint64))

    @property
    def size(self) -> int:
        return len(self.hashes)

    def contains(self, sorted_needles: np.ndarray) -> np.ndarray:
        """For each (sorted) hash, whether the history has it: one binary search each, no history scan."""
        if not self.size or not len(sorted_needles):
            return np.zeros(len(sorted_needles), dtype=bool)
        at = np.searchsorted(self.hashes, sorted_needles)
        inside = at < self.size
        found = np.zeros(len(sorted_needles), dtype=bool)
        found[inside] = self.hashes[at[inside]] == sorted_needles[inside]
        return found

    def add(self, batch: KeyHashes) -> KeyIndex:
        """The index with a newly accepted batch's keys (a merge of two sorted arrays)."""
        if batch.columns != self.columns:
            raise ValueError(f"the batch's keys {list(batch.columns)} are not the index's {list(self.columns)}: "
                             "index one table's key")
        unique, _ = batch.unique()
        fresh = unique[~self.contains(unique)]
        history = np.asarray(self.hashes)
        return KeyIndex(self.columns, np.insert(history, np.searchsorted(history, fresh), fresh))

    def save(self, path: str | Path) -> None:
        np.save(path, np.asarray(self.hashes), allow_pickle=False)

    @classmethod
    def load(cls, path: str | Path, columns: Sequence[str]) -> KeyIndex:
        return cls(tuple(columns), np.load(path, mmap_mode="r", allow_pickle=False))
