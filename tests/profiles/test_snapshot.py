"""profiles/snapshot.py: a window reads exactly a filtered file's rows and skips row groups outside it; several files
read as one batch; a corrupted page with a checksum is unreadable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profiles.profile import TimeWindow
from profiles.snapshot import SnapshotError, read_snapshot
from tests.profiles.batches_support import exact_parts, month_window, table, write


def test_a_corrupted_page_with_a_checksum_is_unreadable(tmp_path):
    table = pa.table({"x": np.arange(50_000, dtype=float)})
    path = tmp_path / "checked.parquet"
    pq.write_table(table, path, write_page_checksum=True, compression="none")
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(SnapshotError, match="CRC"):
        read_snapshot(path)


def test_a_window_reads_exactly_the_rows_a_filtered_file_holds(tmp_path: Path) -> None:
    frame = table()
    path = write(tmp_path, frame, "table")
    window = month_window("2024-02")
    inside = frame[
        (frame.ts > pd.Timestamp(window.after_ms, unit="ms", tz="UTC"))
        & (frame.ts <= pd.Timestamp(window.through_ms, unit="ms", tz="UTC"))
    ]
    batch = read_snapshot(path, window=window, sample_rows=500, seed=4)
    alone = read_snapshot(write(tmp_path, inside, "february"), sample_rows=500, seed=4)
    assert batch.profile.row_count == len(inside) == alone.profile.row_count
    for name in frame.columns:
        ours, theirs = batch.profile.columns[name], alone.profile.columns[name]
        assert exact_parts(ours) == exact_parts(theirs), name
    pd.testing.assert_frame_equal(batch.sample.reset_index(drop=True), alone.sample.reset_index(drop=True))
    assert batch.batch is not None and batch.batch.window == window and batch.files == (str(path),)
    assert batch.batch.start_ms == alone.profile.columns["ts"].minimum


def test_a_window_skips_row_groups_outside_it_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, table(), "table", row_group=500)
    read: list[tuple[int, tuple[str, ...] | None]] = []
    original = pq.ParquetFile.read_row_group

    def spy(self: pq.ParquetFile, index: int, columns=None, **kwargs):  # type: ignore[no-untyped-def]
        read.append((index, tuple(columns) if columns else None))
        return original(self, index, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    snapshot = read_snapshot(path, window=month_window("2024-03"))
    groups = pq.ParquetFile(path).num_row_groups
    whole = {index for index, columns in read if columns is None}
    assert 0 < len(whole) < groups / 2  # March is about a third of the rows; January and February unread
    assert all(columns == ("ts",) for _, columns in read if columns is not None)  # straddlers: time first
    assert snapshot.profile.row_count == int((table().ts >= pd.Timestamp("2024-03-01", tz="UTC")).sum())


def test_several_files_read_as_one_batch_and_mismatched_schemas_fail(tmp_path: Path) -> None:
    frame = table()
    first, second = write(tmp_path, frame.iloc[:4_000], "a"), write(tmp_path, frame.iloc[4_000:], "b")
    both = read_snapshot([first, second], sample_rows=300)
    whole = read_snapshot(write(tmp_path, frame, "whole"), sample_rows=300)
    assert both.profile.row_count == len(frame) and both.files == (str(first), str(second))
    assert both.profile.columns["kind"].value_counts == whole.profile.columns["kind"].value_counts
    other = write(tmp_path, frame.iloc[:10].rename(columns={"temp": "t"}), "other")
    with pytest.raises(SnapshotError, match="another schema"):
        read_snapshot([first, other])
    with pytest.raises(SnapshotError, match="not a timestamp"):
        read_snapshot(first, window=TimeWindow("temp", 0, 1))
