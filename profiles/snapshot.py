"""Read a batch of a table from parquet: one or more files, optionally only the rows of a time window.

One pass over the files, row group by row group; a row group whose footer statistics put its time
column wholly outside the window is skipped unread, one wholly inside is read whole, and only a row
group that straddles a bound has its time column decoded first to count and mask its rows (so the
seeded sample can be drawn over exactly the batch's rows, as for a whole file). Memory holds one row
group plus the sample and the sketches whatever the table's size. See `profiles.profiler` for what the
profile holds; the snapshot also carries the batch's identity (`Snapshot.batch`), ready to be stored
and merged into a reference.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profiles.engines.keys import KeyHashes
from profiles.profile import MAX_CATEGORIES, BatchProfile, DatasetProfile, TimeWindow
from profiles.profiler import ProfileBuilder, as_number, epoch_ms, frame_of, logical_type
from profiles.snapshot_types import Snapshot, SnapshotError
from tables import readonce

__all__ = [
    "Snapshot",
    "SnapshotError",
    "read_snapshot",
    "logical_type",
    "MAX_CATEGORIES",
    "TimeWindow",
    "DEFAULT_SAMPLE_ROWS",
    "window_mask",
    "open_files",
    "profiled_snapshot",
    "read_frame",
    "footer_bounds",
    "sampled_keys",
]

DEFAULT_SAMPLE_ROWS = 50_000
DICTIONARY_PAGE_LIMIT = 64 * 1024  # a string column whose dictionary page is smaller is read as a dictionary


@dataclass(frozen=True)
class _Part:
    """One row group to read: its file, its index, and the mask of its rows in the window (None: all)."""

    source: int
    group: int
    mask: np.ndarray | None
    rows: int


def read_snapshot(
    paths: str | Path | Sequence[str | Path],
    *,
    window: TimeWindow | None = None,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    seed: int = 0,
    time_column: str | None = None,
    batch_id: str | None = None,
    keys: Sequence[str] | None = None,
) -> Snapshot:
    """The profile and seeded sample of the rows of `paths` (inside `window`, when one is given).

    With `keys` (a tuple, empty for a table without a key), the key hashes are kept in the same pass
    (`Snapshot.keys`) and the sample is drawn by hash (see `profiles.profiler`): what the engines do. Keys naming a
    column the table lacks (the schema check reports it) sample by the whole row and hash no key (`sampled_keys`).
    """
    files = _as_files(paths)
    try:
        sources, schema = open_files(files, dictionaries=True)
        keys = sampled_keys(keys, schema.names)
        if window is not None:
            _check_time_column(schema, window.column)
        parts = list(_plan(sources, schema, window))
        builder = ProfileBuilder(schema, sum(p.rows for p in parts), sample_rows=sample_rows, seed=seed, keys=keys)
        for table in _read_ahead(sources, parts):
            builder.add(table)
        profile, sample = builder.finish()
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SnapshotError(f"cannot read parquet snapshot {', '.join(files)}: {exc}") from exc
    clock = window.column if window is not None else time_column
    return profiled_snapshot(files, schema, profile, sample, clock, window, batch_id, keys=builder.key_hashes())


def sampled_keys(keys: Sequence[str] | None, columns: Sequence[str]) -> tuple[str, ...] | None:
    """The key columns a snapshot samples by and hashes: `keys`, or none (the whole row) when one of them is not a
    column of the table (a renamed or dropped key: the schema check's finding, not an unreadable table). None: the
    historical sample by position (`profiles.profiler`)."""
    if keys is None:
        return None
    return tuple(keys) if all(k in columns for k in keys) else ()


def _read_ahead(sources: list[pq.ParquetFile], parts: list[_Part]) -> Iterator[pa.Table]:
    """The parts' rows in order, the next row group decoding (in a thread) while this one is profiled."""

    def read(part: _Part) -> pa.Table:
        table = sources[part.source].read_row_group(part.group)
        return table if part.mask is None else table.filter(pa.array(part.mask))

    if not parts:  # a window no row group reaches: no rows
        return
    with ThreadPoolExecutor(max_workers=1) as reader:
        pending: Future[pa.Table] | None = reader.submit(read, parts[0])
        for following in [*parts[1:], None]:
            assert pending is not None
            table = pending.result()
            pending = reader.submit(read, following) if following is not None else None
            yield table


def profiled_snapshot(
    files: Sequence[str],
    schema: pa.Schema,
    profile: DatasetProfile,
    sample: pd.DataFrame,
    time_column: str | None,
    window: TimeWindow | None,
    batch_id: str | None,
    *,
    keys: KeyHashes | None = None,
    engine: str = "arrow",
) -> Snapshot:
    """The snapshot an engine's finished profile and sample make, with its batch identity."""
    batch = batch_profile(files, profile, time_column, window, batch_id)
    types = {f.name: str(f.type) for f in schema}
    return Snapshot(
        files[0], profile, sample, types, paths=tuple(files), window=window, batch=batch, keys=keys, engine=engine
    )


def batch_profile(
    files: Sequence[str],
    profile: DatasetProfile,
    time_column: str | None,
    window: TimeWindow | None,
    batch_id: str | None,
) -> BatchProfile:
    stamps = profile.columns.get(time_column) if time_column else None
    start = int(stamps.minimum) if stamps is not None and stamps.minimum is not None else None
    end = int(stamps.maximum) if stamps is not None and stamps.maximum is not None else None
    return BatchProfile(
        batch_id=batch_id or _default_id(files, window),
        files=tuple(files),
        profile=profile,
        time_column=time_column,
        window=window,
        start_ms=start,
        end_ms=end,
    )


def _default_id(files: Sequence[str], window: TimeWindow | None) -> str:
    names = "+".join(Path(f).name for f in files)
    if window is None:
        return names
    return f"{names}[{window.column}:({window.after_ms},{window.through_ms}]]"


def _as_files(paths: str | Path | Sequence[str | Path]) -> tuple[str, ...]:
    files = (str(paths),) if isinstance(paths, (str, Path)) else tuple(str(p) for p in paths)
    if not files:
        raise SnapshotError("no parquet file given: pass at least one path")
    return files


def read_frame(path: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A parquet file as a DataFrame with every stored column a column (`frame_of`)."""
    return frame_of(readonce.read_table(path, columns))


def open_files(files: Sequence[str], *, dictionaries: bool = False) -> tuple[list[pq.ParquetFile], pa.Schema]:
    """Open every file; they must share one schema (names and types, in order). The schema returned is the
    files' own; with `dictionaries`, string columns stored with a small dictionary are read as dictionaries
    (their values counted from the indices, never decoded). Page checksums (CRC32, written by writers that set
    them, e.g. pyarrow's `write_page_checksum=True`) are verified as pages are read: a flipped bit in a page
    is an unreadable snapshot, not a different value."""
    first = readonce.open_parquet(files[0], page_checksum_verification=True)
    schema = first.schema_arrow
    small = _small_dictionaries(first, schema) if dictionaries else []
    sources = [readonce.open_parquet(f, read_dictionary=small or None, page_checksum_verification=True) for f in files]
    read_as = sources[0].schema_arrow.remove_metadata()
    for file, source in zip(files[1:], sources[1:]):
        if not source.schema_arrow.remove_metadata().equals(read_as):
            raise ValueError(f"{file} has another schema than {files[0]}: a batch is read from files of one schema")
    return sources, schema


def _small_dictionaries(source: pq.ParquetFile, schema: pa.Schema) -> list[str]:
    """String columns whose first row group stores a dictionary page under DICTIONARY_PAGE_LIMIT bytes."""
    if source.num_row_groups == 0:
        return []
    group = source.metadata.row_group(0)
    names = []
    for index in range(group.num_columns):
        column = group.column(index)
        name = column.path_in_schema
        if name not in schema.names or logical_type(schema.field(name).type) != "string":
            continue
        if column.has_dictionary_page and column.dictionary_page_offset is not None:
            size = column.data_page_offset - column.dictionary_page_offset
            if 0 < size <= DICTIONARY_PAGE_LIMIT:
                names.append(name)
    return names


def _check_time_column(schema: pa.Schema, column: str) -> None:
    if column not in schema.names:
        raise ValueError(
            f"the window's time column {column!r} is not in the table: name an existing timestamp or date column"
        )
    if logical_type(schema.field(column).type) not in ("timestamp", "date"):
        raise ValueError(
            f"the window's time column {column!r} is {schema.field(column).type}, not a timestamp "
            "or date: cut batches on a time column"
        )


def _plan(sources: list[pq.ParquetFile], schema: pa.Schema, window: TimeWindow | None) -> Iterator[_Part]:
    for index, source in enumerate(sources):
        for group in range(source.num_row_groups):
            rows = source.metadata.row_group(group).num_rows
            if window is None:
                yield _Part(index, group, None, rows)
                continue
            bounds = footer_bounds(source, group, schema.get_field_index(window.column))
            if bounds is not None and window.misses_range(*bounds):
                continue
            if bounds is not None and window.contains_range(*bounds):
                yield _Part(index, group, None, rows)
                continue
            times = source.read_row_group(group, columns=[window.column]).column(0)
            mask = window_mask(times, window)
            if mask.any():
                yield _Part(index, group, mask, int(mask.sum()))


def footer_bounds(source: pq.ParquetFile, group: int, column: int) -> tuple[float, float] | None:
    """[min, max] of the time column in this row group from the footer, when known and it has no nulls."""
    statistics = source.metadata.row_group(group).column(column).statistics
    if statistics is None or not statistics.has_min_max or statistics.null_count != 0:
        return None  # a null time is outside every window: the rows must be looked at
    try:
        low, high = as_number(statistics.min), as_number(statistics.max)
    except (TypeError, ValueError, OverflowError):
        return None
    return (low, high) if low is not None and high is not None else None


def window_mask(times: pa.ChunkedArray | pa.Array, window: TimeWindow) -> np.ndarray:
    """Rows whose time lies in (after_ms, through_ms]; a null time lies in no window."""
    chunks = times.chunks if isinstance(times, pa.ChunkedArray) else [times]
    masks = []
    for chunk in chunks:
        valid = pc.is_valid(chunk).to_numpy(zero_copy_only=False)
        stamps = np.zeros(len(chunk), dtype=np.int64)
        stamps[valid] = epoch_ms(chunk)
        inside = valid.copy()
        if window.after_ms is not None:
            inside &= stamps > window.after_ms
        if window.through_ms is not None:
            inside &= stamps <= window.through_ms
        masks.append(inside)
    return np.concatenate(masks) if masks else np.zeros(0, dtype=bool)
