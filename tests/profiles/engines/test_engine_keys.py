"""profiles/engines/keys.py: key hashes kept in the profile's pass and the stored key index find a key by the key
alone, however the rows were chunked when they were hashed; saved hashes of another hash format are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profiles.engines import snapshot
from profiles.engines.keys import KeyHashes, KeyIndex

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


def test_keys_saved_before_hash_formats_were_kept_are_refused_with_the_fix(tmp_path: Path) -> None:
    """Saved hashes of another format cannot be compared with fresh ones nor recomputed from the hashes alone."""
    from profiles.hashing import HASH_FORMAT, HashFormatError

    keys = snapshot("arrow", write(tmp_path / "t.parquet", 998_000, 2_000), keys=KEYS).keys
    index = KeyIndex.empty(KEYS).add(keys)
    index.save(tmp_path / "index.npy")
    keys.save(tmp_path / "keys.npy")
    assert (tmp_path / "index.hash-format").read_text() == f"{HASH_FORMAT}\n"
    assert KeyIndex.load(tmp_path / "index.npy", KEYS).size == 2_000
    assert np.array_equal(KeyHashes.load(tmp_path / "keys.npy", KEYS).hashes, keys.hashes)
    (tmp_path / "index.hash-format").unlink()  # as a version before formats saved it: format 1
    with pytest.raises(HashFormatError) as refused:
        KeyIndex.load(tmp_path / "index.npy", KEYS)
    assert str(refused.value) == (
        f"{tmp_path / 'index.npy'} holds a key index of hash format 1; this version hashes with 2; "
        "build it again from the accepted batches' keys (KeyIndex.empty, then add each batch)"
    )
    (tmp_path / "keys.hash-format").write_text("1\n")
    with pytest.raises(HashFormatError, match="key hashes of hash format 1; .* hash the batch's key columns again"):
        KeyHashes.load(tmp_path / "keys.npy", KEYS)
    with pytest.raises(FileNotFoundError):  # nothing saved: the load says so, not the format
        KeyIndex.load(tmp_path / "absent.npy", KEYS)


def test_a_window_no_row_reaches_has_no_key_hashes_and_no_repeats(tmp_path: Path) -> None:
    from profiles.profile import TimeWindow

    path = tmp_path / "t.parquet"
    stamps = pa.array(np.arange(3) * 1000, pa.timestamp("ms", "UTC"))
    pq.write_table(pa.table({"k": pa.array(["a", "b", "a"]), "ts": stamps}), path)
    keys = snapshot("arrow", path, keys=KEYS, window=TimeWindow("ts", 10_000, None)).keys
    assert keys is not None and keys.rows == 0 and keys.duplicates().duplicate_rows == 0
