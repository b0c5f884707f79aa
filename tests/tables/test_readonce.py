"""The read-once door: a file read through `verified` is decoded only from blocks whose digest matched, and a file
changed after its digests were taken is never decoded, even by a reader that swallows the error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tables import readonce
from tables.objectstore import file_hash


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"x": rng.normal(size=rows), "k": rng.integers(0, 100, rows), "s": [str(i) for i in range(rows)]})


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "t.parquet"
    pq.write_table(_table(200_000, 0), path, row_group_size=50_000)  # several blocks, several row groups
    return path


def test_a_verified_read_decodes_the_same_rows_as_a_plain_one(parquet: Path) -> None:
    digests = readonce.digests_of(parquet, file_hash(parquet))
    assert len(digests.blocks) > 4
    with readonce.verified(parquet, digests):
        through_door = readonce.open_parquet(parquet)
        assert through_door.read().equals(pq.read_table(parquet))
        assert readonce.read_table(parquet, ["k"]).equals(pq.read_table(parquet, columns=["k"]))


def test_a_file_not_hashing_to_the_expected_hash_is_refused_before_any_read(parquet: Path) -> None:
    with pytest.raises(readonce.ReadChanged, match="no longer hashes"):
        readonce.digests_of(parquet, "sha256:" + "0" * 64)


@pytest.mark.parametrize("change", ["rewritten", "truncated", "grown"])
def test_bytes_changed_after_the_digests_are_never_decoded(parquet: Path, change: str) -> None:
    digests = readonce.digests_of(parquet, file_hash(parquet))
    original = parquet.read_bytes()
    if change == "rewritten":
        pq.write_table(_table(200_000, 1), parquet, row_group_size=50_000)
    elif change == "truncated":
        parquet.write_bytes(original[: len(original) // 2] + original[-70_000:])  # the footer still there
    else:
        parquet.write_bytes(original[:-8] + b"\0" * 300_000 + original[-8:])
    with pytest.raises(readonce.ReadChanged):
        with readonce.verified(parquet, digests):
            readonce.open_parquet(parquet).read()


def test_a_reader_that_swallows_the_error_does_not_hide_the_change(parquet: Path) -> None:
    digests = readonce.digests_of(parquet, file_hash(parquet))
    pq.write_table(_table(200_000, 2), parquet, row_group_size=50_000)
    with pytest.raises(readonce.ReadChanged, match="changed at bytes"):
        with readonce.verified(parquet, digests):
            try:
                readonce.open_parquet(parquet).read()
            except Exception:  # a reader turning every error into "unreadable"
                pass


def test_a_copy_through_the_door_is_the_verified_bytes_and_says_their_hash(parquet: Path, tmp_path: Path) -> None:
    expected = file_hash(parquet)
    with readonce.verified(parquet, readonce.digests_of(parquet, expected)):
        assert readonce.copy_file(parquet, tmp_path / "copy.parquet") == expected
    assert (tmp_path / "copy.parquet").read_bytes() == parquet.read_bytes()


def test_outside_a_verified_block_the_door_reads_the_file_as_it_is(parquet: Path) -> None:
    assert readonce.open_parquet(parquet).read().equals(pq.read_table(parquet))
