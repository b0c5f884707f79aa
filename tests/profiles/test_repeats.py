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
