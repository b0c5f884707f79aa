"""profiles/repeats.py: duplicate keys are counted by key alone, however the keys fall into the hashing slices (row
groups, files, the history and the batch), keys of different lengths beside them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from profiles.repeats import count_duplicate_keys

PLANTED = 5


def keys(first: int, count: int) -> list[str]:
    return [f"o-{n}" for n in range(first, first + count)]


def write(path: Path, values: list[str], row_group: int = 1_000) -> str:
    pq.write_table(pa.table({"k": pa.array(values)}), path, row_group_size=row_group)
    return str(path)


def test_keys_seen_before_are_counted_when_the_new_batch_holds_longer_keys(tmp_path: Path) -> None:
    """The history's keys end at o-999999 (8 bytes); the batch counts on from o-1000000 (9) and replays 5 of them."""
    history = keys(998_000, 2_000)
    batch = keys(1_000_000, 1_000) + history[-PLANTED:] + keys(1_001_000, 1_000)  # in a row group of longer keys
    old, new = write(tmp_path / "history.parquet", history), write(tmp_path / "batch.parquet", batch)
    count = count_duplicate_keys([new], ["k"], history=[old, new])
    assert (count.duplicate_rows, count.across_rows, count.rows_compared) == (PLANTED, PLANTED, len(batch))


def test_keys_repeated_in_a_later_row_group_of_longer_keys_are_counted(tmp_path: Path) -> None:
    """One batch: the first row groups hold 8-byte keys, the last holds 9-byte keys and 5 of the first again."""
    short = keys(998_000, 2_000)
    values = short + keys(1_000_000, 995) + short[:PLANTED]
    count = count_duplicate_keys(write(tmp_path / "batch.parquet", values), ["k"])
    assert (count.duplicate_rows, count.rows_compared) == (PLANTED, len(values))


def test_keys_the_rest_of_the_table_has_are_counted_alike_from_its_key_index(tmp_path: Path) -> None:
    """The batch (rows after the watermark) replays keys of the kept rows and repeats one of its own: counted
    from a key index of the rest of the table as from the rest's rows, and its hashed keys handed back whole."""
    import numpy as np

    from profiles.engines.keys import KeyIndex
    from profiles.repeats import count_repeats, count_repeats_indexed, hash_keys
    from profiles.repeats_types import RepeatsAsked
    from profiles.snapshot import TimeWindow

    kept, batch = keys(0, 3_000), keys(3_000, 997) + keys(10, PLANTED) + keys(3_000, 1) + [None]
    rows = pa.table({"k": pa.array(kept + batch), "t": pa.array(np.arange(len(kept) + len(batch)), pa.int64())})
    path = str(tmp_path / "table.parquet")
    pq.write_table(rows.cast(pa.schema([("k", pa.string()), ("t", pa.timestamp("ms"))])), path, row_group_size=500)
    new_rows = TimeWindow("t", len(kept) - 1, None)
    asked = RepeatsAsked(("k",), (path,), new_rows, len(batch), history=(path,))
    rest, read = hash_keys(path, ["k"], new_rows, outside=True)
    assert read == len(kept) and rest.rows == len(kept)
    indexed, hashed = count_repeats_indexed(asked, KeyIndex.empty(("k",)).add(rest))
    assert indexed.count == count_repeats(asked).count
    assert indexed.count is not None and (indexed.count.duplicate_rows, indexed.count.across_rows) == (
        PLANTED + 1,
        PLANTED,
    )
    assert hashed is not None and hashed.rows == len(batch) - 1  # the null key is not compared


def test_row_groups_wholly_outside_a_window_are_not_read(tmp_path: Path) -> None:
    """Their footer's times say so: a table whose early row groups' pages are garbage is still read for its last."""
    import numpy as np
    import pytest

    from profiles.repeats import hash_keys
    from profiles.snapshot import SnapshotError, TimeWindow

    times = pa.array(np.arange(2_000), pa.int64()).cast(pa.timestamp("ms"))
    path = tmp_path / "table.parquet"
    pq.write_table(pa.table({"k": pa.array(keys(0, 2_000)), "t": times}), path, row_group_size=500)
    footer = pq.ParquetFile(path).metadata
    body = bytearray(path.read_bytes())
    for group in range(3):  # every page of the first three row groups overwritten, the footer left as it was
        for column in range(2):
            chunk = footer.row_group(group).column(column)
            start = chunk.dictionary_page_offset or chunk.data_page_offset
            body[start : start + chunk.total_compressed_size] = b"\xff" * chunk.total_compressed_size
    path.write_bytes(bytes(body))
    hashed, read = hash_keys(str(path), ["k"], TimeWindow("t", 1_499, None))
    assert (hashed.rows, read) == (500, 500)
    with pytest.raises(SnapshotError):
        hash_keys(str(path), ["k"], TimeWindow("t", 1_499, None), outside=True)


def _keyed_batch(tmp_path: Path):
    """A table of kept rows then a batch (after the watermark) repeating 5 kept keys and one of its own, a null key
    too; the batch snapshot as an engine reads it (keys hashed in the profile's pass)."""
    import numpy as np

    from profiles.engines import snapshot
    from profiles.snapshot import TimeWindow

    kept, batch = keys(0, 3_000), keys(3_000, 997) + keys(10, PLANTED) + keys(3_000, 1) + [None]
    rows = pa.table({"k": pa.array(kept + batch), "t": pa.array(np.arange(len(kept) + len(batch)), pa.int64())})
    path = tmp_path / "table.parquet"
    pq.write_table(rows.cast(pa.schema([("k", pa.string()), ("t", pa.timestamp("ms"))])), path, row_group_size=500)
    new_rows = TimeWindow("t", len(kept) - 1, None)
    return path, new_rows, snapshot("arrow", path, keys=("k",), window=new_rows)


def test_a_batch_s_own_repeats_are_counted_from_its_profile_s_key_hashes_without_a_read(tmp_path: Path) -> None:
    from profiles.repeats import count_repeats
    from profiles.repeats_types import RepeatsAsked

    path, new_rows, snap = _keyed_batch(tmp_path)
    asked = RepeatsAsked(("k",), (str(path),), new_rows, snap.profile.row_count)
    read = count_repeats(asked)
    path.unlink()  # nothing left to read: the count comes from the hashes
    hashed = count_repeats(asked, snap.keys)
    assert hashed is not None and read is not None and hashed.error is None
    assert hashed.count == read.count and read.count is not None and read.count.duplicate_rows == 1
    other_key = RepeatsAsked(("t",), (str(path),), new_rows, snap.profile.row_count)
    unreadable = count_repeats(other_key, snap.keys)  # hashes of another key answer nothing: read, and fail closed
    assert unreadable is not None and unreadable.error is not None


def test_the_batch_s_keys_against_the_key_index_come_from_its_profile_when_every_key_was_kept(tmp_path: Path) -> None:
    from profiles.engines.keys import KeyHashes, KeyIndex
    from profiles.repeats import count_repeats_indexed, hash_keys
    from profiles.repeats_types import RepeatsAsked

    path, new_rows, snap = _keyed_batch(tmp_path)
    asked = RepeatsAsked(("k",), (str(path),), new_rows, snap.profile.row_count, history=(str(path),))
    rest, _ = hash_keys(str(path), ["k"], new_rows, outside=True)
    index = KeyIndex.empty(("k",)).add(rest)
    read, read_keys = count_repeats_indexed(asked, index)
    path.unlink()
    assert snap.keys is not None and snap.keys.exact
    counted, counted_keys = count_repeats_indexed(asked, index, snap.keys)
    assert counted.count == read.count and read.count is not None
    assert (read.count.duplicate_rows, read.count.across_rows) == (PLANTED + 1, PLANTED)
    assert counted_keys is not None and read_keys is not None
    assert counted_keys.hashes.tolist() == read_keys.hashes.tolist()
    sampled = KeyHashes(snap.keys.columns, snap.keys.hashes, exact=False)  # not every key: the batch is read again
    failed, _ = count_repeats_indexed(asked, index, sampled)
    assert failed.error is not None


def test_above_the_exact_limit_the_profile_s_sample_by_key_is_counted_as_it_is_and_no_keys_go_back(
    tmp_path: Path,
) -> None:
    """A batch announced with 32M rows: its profile kept the keys hashing under the count's own ceiling; the count
    comes from them with no read (the file is gone), and the index is left to catch the batch up from the table."""
    from profiles.engines.keys import EXACT_KEY_ROWS, KeyHashes, KeyIndex, key_ceiling
    from profiles.repeats import count_repeats_indexed, hash_keys
    from profiles.repeats_types import RepeatsAsked

    path, new_rows, snap = _keyed_batch(tmp_path)
    rows = 2 * EXACT_KEY_ROWS
    ceiling = key_ceiling(rows)
    assert snap.keys is not None and ceiling is not None
    sample = KeyHashes(snap.keys.columns, snap.keys.hashes[snap.keys.hashes <= ceiling], exact=False)
    rest, _ = hash_keys(str(path), ["k"], new_rows, outside=True)
    index = KeyIndex.empty(("k",)).add(rest)
    path.unlink()
    asked = RepeatsAsked(("k",), (str(path),), new_rows, rows, history=(str(path),))
    counted, keys = count_repeats_indexed(asked, index, sample)
    assert counted.error is None and keys is None
    assert counted.count is not None and counted.count.rows_compared == sample.rows and not counted.count.exact
    assert counted.count.duplicate_rows == sample.duplicates(index).duplicate_rows
