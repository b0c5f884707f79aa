"""profiles/engines/keys.py: key hashes kept in the profile's pass and the stored key index find a key by the key
alone, however the rows were chunked when they were hashed."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from profiles.engines import snapshot
from profiles.engines.keys import KeyIndex

KEYS = ("k",)
PLANTED = 5


def write(path: Path, first: int, count: int, *, replayed: tuple[str, ...] = ()) -> Path:
    values = [f"o-{n}" for n in range(first, first + count)] + list(replayed)
    pq.write_table(pa.table({"k": pa.array(values), "n": pa.array(range(len(values)))}), path, row_group_size=700)
    return path


def test_the_stored_index_finds_old_keys_replayed_among_longer_ones(tmp_path: Path) -> None:
    """The accepted batch's keys end at o-999999 (8 bytes); the next counts on from o-1000000 and replays 5."""
    old = write(tmp_path / "old.parquet", 998_000, 2_000)
    replayed = tuple(f"o-{n}" for n in range(999_995, 1_000_000))
    new = write(tmp_path / "new.parquet", 1_000_000, 2_000, replayed=replayed)
    KeyIndex.empty(KEYS).add(snapshot("arrow", old, keys=KEYS).keys).save(tmp_path / "index.npy")
    counted = snapshot("arrow", new, keys=KEYS).keys.duplicates(KeyIndex.load(tmp_path / "index.npy", KEYS))
    assert (counted.duplicate_rows, counted.across_rows, counted.rows_compared) == (PLANTED, PLANTED, 2_005)
