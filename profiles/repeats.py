"""Repeated keys of a batch, counted from the snapshot's key columns (a batch: its rows in the window; with the
whole table's files, also the batch rows whose key the rest of the table has): `count_repeats` answers what the
duplicates check asks (`guard.checks.duplicates.repeats_asked`) with a `profiles.repeats_types.Repeats`, which
the check judges.

The row sample cannot see a duplicated load: an original and its copy both land in a uniform
sample of fraction p with probability p², so a 0.1% duplicate rate in 10M rows leaves about 0.25
colliding keys in a 50k-row sample. So this reads only the key column(s) of the parquet
snapshot, row group by row group (READERS at a time), hashes each key to 64 bits and counts repeated
hashes after one sort: 8 bytes of memory per row, the key columns decoded once more.

Exact up to 64-bit hash collisions (expected false repeats n²/2⁶⁵: 3e-6 at 10M rows). Above
`EXACT_KEY_ROWS` rows, only the keys whose hash falls in the lowest `EXACT_KEY_ROWS / n` of the hash
range are kept: a sample by key, not by row, so every copy of a kept key is kept too, and the
duplicate fraction among the kept rows estimates the table's with a binomial standard error of
sqrt(f / EXACT_KEY_ROWS) (under 1e-5 at the 0.1% limit). Rows with a null in any key column are not
compared: null keys are the nulls check's business.

A batch's own repeats need no read at all when its snapshot hashed the asked key in the profile's pass
(`Snapshot.keys`, `profiles.engines.keys`: the same hashes, the same ceiling): `count_repeats(asked, hashed)`
counts those.

Against a table's history, the rest of the table need not be read again: given a `profiles.engines.keys.KeyIndex`
of the rest's keys (every complete key of the rows outside the batch's window, as the control plane keeps it
beside the reference), `count_repeats_indexed` hashes only the batch's keys and looks them up, with the same count
(the index holds every key, the batch's are sampled by the same ceiling), and hands the batch's hashes back so the
index can take them when the batch is kept. Row groups whose footer statistics put their times wholly on the
other side of a window are not read.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profiles.engines.keys import DuplicateCount, KeyHashes, KeyIndex
from profiles.hashing import hash_rows
from profiles.repeats_types import KeyCount, Repeats, RepeatsAsked
from profiles.snapshot import SnapshotError, TimeWindow, footer_bounds, window_mask
from tables import readonce

__all__ = [
    "count_repeats",
    "count_repeats_indexed",
    "count_duplicate_keys",
    "hash_keys",
    "EXACT_KEY_ROWS",
    "READERS",
]

EXACT_KEY_ROWS = 16_000_000  # up to this many rows the count is exact (128 MB of hashes)
READERS = 2  # row groups read and hashed concurrently: memory holds this many groups' key columns
_HASH_ROWS = 1 << 18  # rows hashed at once, so the hashing temporaries stay a few MB


def count_repeats(asked: RepeatsAsked | None, hashed: KeyHashes | None = None) -> Repeats | None:
    """Count what the duplicates check asked for (`guard.checks.duplicates.repeats_asked`; None: nothing asked). A
    snapshot that cannot be read, or that changed since it was profiled, is answered with the error, which the
    check raises: the guard blocks on it, never passes. `hashed`: the asked snapshot's key hashes from its
    profile's pass (`Snapshot.keys`); when they are of the asked key and only the batch's own rows are asked
    about, they are counted, with no read."""
    if asked is None:
        return None
    if hashed is not None and not asked.history and _hashes_answer(asked, hashed):
        return Repeats(asked, _key_count(hashed.duplicates()))
    try:
        count = count_duplicate_keys(
            asked.files, asked.columns, window=asked.window, expected_rows=asked.expected_rows, history=asked.history
        )
    except SnapshotError as exc:
        return Repeats(asked, error=str(exc))
    return Repeats(asked, count)


def count_repeats_indexed(
    asked: RepeatsAsked, history: KeyIndex, hashed: KeyHashes | None = None
) -> tuple[Repeats, KeyHashes | None]:
    """`count_repeats` of a batch (`asked.window`) against its table's history, from `history`, the key index of
    the rest of the table (rows outside the window) instead of the rest's rows; and every complete key of the
    batch, hashed (None when they could not be read). An unreadable batch, or one whose rows are not the ones
    profiled, is answered with the error, as `count_repeats` does. `hashed`: the batch's key hashes from its
    profile's pass, used instead of reading its key columns when they hold every complete key (`exact`); above
    EXACT_KEY_ROWS rows they are the sample by key the count takes, counted as they are, and no keys go back (the
    index catches the batch up from the table when it is kept: `controlplane.stages.key_history`)."""
    if asked.window is None or asked.whole_rows or tuple(asked.columns) != history.columns:
        raise ValueError("an index answers a batch's declared key against the rest of its table, by that key")
    ceiling = _hash_ceiling(asked.expected_rows, EXACT_KEY_ROWS)
    if hashed is not None and _hashes_answer(asked, hashed) and not hashed.exact and _under(hashed, ceiling):
        # above EXACT_KEY_ROWS the profile kept the sample by key the count takes: counted from it, and no keys for
        # the index (it catches this batch up from the table once kept), rather than every key read again
        return Repeats(asked, _key_count(hashed.duplicates(history))), None
    if hashed is not None and hashed.exact and _hashes_answer(asked, hashed):
        batch, rows = hashed, asked.expected_rows  # every complete key of exactly the rows profiled
    else:
        try:
            batch, rows = hash_keys(asked.files, asked.columns, asked.window)
        except SnapshotError as exc:
            return Repeats(asked, error=str(exc)), None
    if rows != asked.expected_rows:
        error = (
            f"the batch {asked.window.to_dict()} of {', '.join(asked.files)} has {rows} rows, but "
            f"{asked.expected_rows} were profiled: it changed after it was read; run the guard again"
        )
        return Repeats(asked, error=error), None
    sample = batch if ceiling is None else KeyHashes(batch.columns, batch.hashes[batch.hashes <= ceiling], False)
    return Repeats(asked, _key_count(sample.duplicates(history))), batch


def _under(hashed: KeyHashes, ceiling: np.uint64 | None) -> bool:
    """The hashes are a sample by key at this ceiling: none above it (they are sorted)."""
    return ceiling is not None and (not hashed.rows or bool(hashed.hashes[-1] <= ceiling))


def _hashes_answer(asked: RepeatsAsked, hashed: KeyHashes) -> bool:
    """The profile's key hashes are those of the asked key (the rows are the asked snapshot's by construction)."""
    return not asked.whole_rows and tuple(asked.columns) == tuple(hashed.columns)


def _key_count(count: DuplicateCount) -> KeyCount:
    return KeyCount(count.rows_compared, count.duplicate_rows, count.exact, count.across_rows)


def hash_keys(
    paths: str | Sequence[str], keys: Sequence[str], window: TimeWindow | None, *, outside: bool = False
) -> tuple[KeyHashes, int]:
    """Every complete key of the rows of the files inside `window` (outside it when `outside`; every row without
    one), hashed and sorted, and how many rows that is (incomplete keys too). A file that cannot be read is a
    SnapshotError."""
    files = [paths] if isinstance(paths, str) else list(paths)
    try:
        sources = {f: readonce.open_parquet(f) for f in files}
        hashes, rows = _hashes_of(sources, [(f, window, outside) for f in files], list(keys), None)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SnapshotError(f"cannot read key columns {list(keys)} of {', '.join(files)}: {exc}") from exc
    return KeyHashes.of(keys, [hashes]), rows


def count_duplicate_keys(
    paths: str | Sequence[str],
    keys: Sequence[str],
    *,
    window: TimeWindow | None = None,
    expected_rows: int | None = None,
    exact_rows: int = EXACT_KEY_ROWS,
    history: Sequence[str] = (),
) -> KeyCount:
    """Stream the key columns of a batch (files, rows in `window`) and count rows whose key repeats an
    earlier row's, or, given `history` (the whole table's files), a key the rest of the table has."""
    files = [paths] if isinstance(paths, str) else list(paths)
    rest = [(f, None if f not in files else window) for f in history if f not in files or window is not None]
    try:
        sources = {f: readonce.open_parquet(f) for f in [*files, *(f for f, _ in rest)]}
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SnapshotError(f"cannot open snapshot {', '.join(files)} to count duplicate keys: {exc}") from exc
    total = sum(sources[f].metadata.num_rows for f in files)
    if expected_rows is not None and window is None and total != expected_rows:
        raise SnapshotError(
            f"snapshot {', '.join(files)} has {total} rows, but {expected_rows} were profiled: "
            "it changed after it was read; run the guard again"
        )
    ceiling = _hash_ceiling(expected_rows if window is not None and expected_rows is not None else total, exact_rows)
    try:
        batch, rows = _hashes_of(sources, [(f, window, False) for f in files], list(keys), ceiling)
        history_hashes, _ = _hashes_of(sources, [(f, w, w is not None) for f, w in rest], list(keys), ceiling)
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SnapshotError(f"cannot read key columns {list(keys)} of snapshot {', '.join(files)}: {exc}") from exc
    if window is not None and expected_rows is not None and rows != expected_rows:
        raise SnapshotError(
            f"the batch {window.to_dict()} of {', '.join(files)} has {rows} rows, but "
            f"{expected_rows} were profiled: it changed after it was read; run the guard again"
        )
    batch.sort()
    repeats = int(np.count_nonzero(batch[1:] == batch[:-1]))
    across = 0
    if len(history_hashes):  # every copy of a key the rest of the table has is a duplicate, the first too
        unique, counts = np.unique(batch, return_counts=True)
        seen = np.isin(unique, history_hashes)
        across = int(counts[seen].sum())
        repeats += int(seen.sum())
    return KeyCount(rows_compared=len(batch), duplicate_rows=repeats, exact=ceiling is None, across_rows=across)


def _hash_ceiling(total_rows: int, exact_rows: int) -> np.uint64 | None:
    """Keep keys hashing at or below this value: None (all of them) up to `exact_rows` rows."""
    if total_rows <= exact_rows:
        return None
    return np.uint64(int((2**64 - 1) * (exact_rows / total_rows)))


def _hashes_of(
    sources: dict[str, pq.ParquetFile],
    parts: list[tuple[str, TimeWindow | None, bool]],
    keys: list[str],
    ceiling: np.uint64 | None,
) -> tuple[np.ndarray, int]:
    """The kept key hashes of the rows of each (file, window, outside) part, and how many rows were read:
    the rows inside the window, or outside it when `outside`, or all rows when there is no window."""
    tasks = [
        (f, w, outside, g)
        for f, w, outside in parts
        for g in range(sources[f].num_row_groups)
        if not _passed_over(sources[f], g, w, outside)
    ]
    capacity = sum(sources[f].metadata.num_rows for f, _, _ in parts)
    if ceiling is not None:
        capacity = min(capacity, int(EXACT_KEY_ROWS * 1.05) + 4096)  # kept rows: binomial, mean exact_rows

    def one(task: tuple[str, TimeWindow | None, bool, int]) -> tuple[np.ndarray, int]:
        file, window, outside, index = task
        columns = keys if window is None or window.column in keys else [*keys, window.column]
        group = readonce.open_parquet(file).read_row_group(index, columns=columns, use_threads=False)
        if window is not None:
            mask = window_mask(group.column(window.column), window)
            group = group.filter(pa.array(~mask if outside else mask)).select(keys)
        pieces = [
            _kept_hashes(group.slice(start, _HASH_ROWS), ceiling) for start in range(0, group.num_rows, _HASH_ROWS)
        ]
        return (np.concatenate(pieces) if pieces else np.empty(0, dtype=np.uint64)), group.num_rows

    rows = 0

    def counted(results: Iterator[tuple[np.ndarray, int]]) -> Iterator[np.ndarray]:
        nonlocal rows
        for hashes, read in results:
            rows += read
            yield hashes

    with ThreadPoolExecutor(max_workers=READERS) as pool:
        collected = _collect(counted(pool.map(one, tasks)), capacity)
    return collected, rows


def _passed_over(source: pq.ParquetFile, group: int, window: TimeWindow | None, outside: bool) -> bool:
    """The row group's footer puts every time of it where none of its rows is wanted: wholly outside the window
    (or, when the rows outside it are wanted, wholly inside). A group without statistics, or with a null time,
    is read."""
    if window is None:
        return False
    leaves = source.metadata.schema
    column = next((i for i in range(len(leaves)) if leaves.column(i).path == window.column), None)
    bounds = footer_bounds(source, group, column) if column is not None else None
    if bounds is None:
        return False
    return window.contains_range(*bounds) if outside else window.misses_range(*bounds)


def _collect(pieces: Iterable[np.ndarray], capacity: int) -> np.ndarray:
    """Copy the pieces into one array allocated once (grown only if `capacity` was too small)."""
    hashes, filled = np.empty(capacity, dtype=np.uint64), 0
    for piece in pieces:
        if filled + len(piece) > len(hashes):
            hashes = np.concatenate([hashes[:filled], np.empty(max(len(piece), filled), dtype=np.uint64)])
        hashes[filled : filled + len(piece)] = piece
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
