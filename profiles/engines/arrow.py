"""The arrow engine: one pass over local parquet files, row group by row group, in this process.

Each row group is decoded (the next one in a reader thread while this one is profiled), its columns
profiled two at a time, the key hashes and the sample scores computed from one hash of the key column,
and the candidate sample rows kept; footers give the row counts and skip row groups outside a window,
and small-dictionary string columns are counted from their indices. See `profiles.profiler`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from profiles.profile import TimeWindow
from profiles.snapshot import DEFAULT_SAMPLE_ROWS, Snapshot, read_snapshot

__all__ = ["arrow_snapshot"]


def arrow_snapshot(
    paths: str | Path | Sequence[str | Path],
    *,
    keys: Sequence[str] | None = (),
    window: TimeWindow | None = None,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    seed: int = 0,
    time_column: str | None = None,
    batch_id: str | None = None,
) -> Snapshot:
    """The snapshot of the rows of `paths` (in `window`): profile, sample by key hash, key hashes. `keys=None`:
    `read_snapshot`'s historical sample by row position and no key hashes."""
    return read_snapshot(
        paths,
        window=window,
        sample_rows=sample_rows,
        seed=seed,
        time_column=time_column,
        batch_id=batch_id,
        keys=None if keys is None else tuple(keys),
    )
