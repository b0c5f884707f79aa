"""profiles/fingerprints.py: windows' fingerprints in one pass, rows placed by one binary search over the windows'
bounds; with a cache keyed by the row groups' footers, a second pass reads only the row groups that are new or
whose footer changed, and finds what the first would."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from profiles.fingerprints import Fingerprint, FingerprintCache, fingerprint_rows, fingerprint_windows
from profiles.profile import TimeWindow
from tests.profiles.batches_support import DAY_MS, table

START_MS = int(np.datetime64("2024-01-01", "ms").astype("int64"))


def _days(first: int, last: int) -> list[TimeWindow]:
    """A window per day of days [first, last), then the rows after them."""
    days = [TimeWindow("ts", START_MS + d * DAY_MS, START_MS + (d + 1) * DAY_MS) for d in range(first, last)]
    return [*days, TimeWindow("ts", START_MS + last * DAY_MS, None)]


def _write(path: Path, rows: pa.Table, groups: int) -> None:
    """The rows in `groups` row groups of one file, each written as its own (as an appended table grows)."""
    with pq.ParquetWriter(path, rows.schema) as writer:
        for part in np.array_split(np.arange(rows.num_rows), groups):
            writer.write_table(rows.take(part))


def _same(found: list[Fingerprint], expected: list[Fingerprint]) -> bool:
    return len(found) == len(expected) and all(f.matches(e) and e.matches(f) for f, e in zip(found, expected))


def _ms(rows: pa.Table) -> np.ndarray:
    return rows["ts"].cast(pa.int64()).to_numpy()


def _rows() -> pa.Table:
    """Twenty days of rows, in time order."""
    rows = pa.Table.from_pandas(table(rows=6_000), preserve_index=False)
    return rows.filter(pa.array(_ms(rows) < START_MS + 20 * DAY_MS))


def test_rows_go_to_the_window_whose_bounds_hold_them_and_null_times_to_none(tmp_path: Path) -> None:
    rows = _rows()
    times = _ms(rows)
    nulled = pa.array(rows["ts"].to_pylist(), rows["ts"].type, mask=np.arange(rows.num_rows) % 97 == 0)
    rows = rows.set_column(rows.schema.get_field_index("ts"), "ts", nulled)
    _write(tmp_path / "t.parquet", rows, 4)
    windows = _days(0, 15)[::-1]  # in any order
    prints, outside = fingerprint_windows(tmp_path / "t.parquet", windows)
    for window, found in zip(windows, prints):
        after = -np.inf if window.after_ms is None else window.after_ms
        through = np.inf if window.through_ms is None else window.through_ms
        inside = (times > after) & (times <= through) & (np.arange(rows.num_rows) % 97 != 0)
        assert found.matches(fingerprint_rows(rows.filter(pa.array(inside))))
    assert outside == int(np.count_nonzero(np.arange(rows.num_rows) % 97 == 0))


def test_windows_that_overlap_give_each_row_to_the_first_that_holds_it(tmp_path: Path) -> None:
    rows = _rows()
    _write(tmp_path / "t.parquet", rows, 3)
    wide, narrow = TimeWindow("ts", None, START_MS + 10 * DAY_MS), TimeWindow("ts", START_MS + 5 * DAY_MS, None)
    (first, second), outside = fingerprint_windows(tmp_path / "t.parquet", [wide, narrow])
    (alone,), _ = fingerprint_windows(tmp_path / "t.parquet", [wide])
    assert first.matches(alone) and first.rows + second.rows == rows.num_rows and outside == 0


def test_a_second_pass_over_an_appended_table_reads_only_its_new_row_groups(tmp_path: Path) -> None:
    rows = _rows()
    early = rows.filter(pa.array(_ms(rows) <= START_MS + 15 * DAY_MS))
    later = rows.slice(early.num_rows)
    _write(tmp_path / "t.parquet", early, 5)
    cache = FingerprintCache()
    fingerprint_windows(tmp_path / "t.parquet", _days(0, 15), cache)
    assert (cache.reads, cache.hits) == (5, 0)
    cache.save(tmp_path / "cache.json")
    with pq.ParquetWriter(tmp_path / "grown.parquet", rows.schema) as writer:  # the same groups, then 2 more
        source = pq.ParquetFile(tmp_path / "t.parquet")
        for group in range(source.num_row_groups):
            writer.write_table(source.read_row_group(group))
        for part in np.array_split(np.arange(later.num_rows), 2):
            writer.write_table(later.take(part))
    again = FingerprintCache.load(tmp_path / "cache.json")
    found = fingerprint_windows(tmp_path / "grown.parquet", _days(0, 15), again)
    assert (again.reads, again.hits) == (2, 5)
    assert _same(found[0], fingerprint_windows(tmp_path / "grown.parquet", _days(0, 15))[0])


def test_a_row_group_rewritten_is_read_again_and_its_change_is_seen(tmp_path: Path) -> None:
    rows = _rows()
    _write(tmp_path / "t.parquet", rows, 4)
    cache = FingerprintCache()
    before, _ = fingerprint_windows(tmp_path / "t.parquet", _days(0, 20), cache)
    at = rows.schema.get_field_index("temp")
    first_day = _ms(rows) <= START_MS + DAY_MS  # rows of the first row group, and of the first window alone
    scaled = pa.compute.multiply(rows["temp"], pa.array(np.where(first_day, 1.8, 1.0)))
    _write(tmp_path / "t.parquet", rows.set_column(at, "temp", scaled), 4)  # the first day, in other units
    after, _ = fingerprint_windows(tmp_path / "t.parquet", _days(0, 20), cache)
    assert (cache.reads, cache.hits) == (4 + 1, 3)
    assert not after[0].matches(before[0]) and _same(after[1:], before[1:])


def test_a_row_group_meeting_other_windows_is_read_again(tmp_path: Path) -> None:
    """A new batch kept over the rows that were the new ones: their row groups meet the kept window now."""
    rows = _rows()
    _write(tmp_path / "t.parquet", rows, 4)
    cache = FingerprintCache()
    fingerprint_windows(tmp_path / "t.parquet", _days(0, 15), cache)
    found = fingerprint_windows(tmp_path / "t.parquet", _days(0, 16), cache)
    assert cache.hits >= 1 and cache.reads > 4
    assert _same(found[0], fingerprint_windows(tmp_path / "t.parquet", _days(0, 16))[0])


def test_row_groups_wholly_among_the_new_rows_by_their_footer_are_not_read(tmp_path: Path) -> None:
    """Fifteen kept days in five row groups, then five days of new rows in three: the kept days' prints and the rows
    outside every window are what a full read finds, and none of the new rows' row groups is read."""
    rows = _rows()
    kept_rows = rows.filter(pa.array(_ms(rows) <= START_MS + 15 * DAY_MS))
    _write(tmp_path / "kept.parquet", kept_rows, 5)
    with pq.ParquetWriter(tmp_path / "t.parquet", rows.schema) as writer:
        for group in range(5):
            writer.write_table(pq.ParquetFile(tmp_path / "kept.parquet").read_row_group(group))
        for part in np.array_split(np.arange(kept_rows.num_rows, rows.num_rows), 3):
            writer.write_table(rows.take(part))
    *days, new_rows = _days(0, 15)
    cache = FingerprintCache()
    prints, outside = fingerprint_windows(tmp_path / "t.parquet", days, cache, rest=new_rows)
    every, everything_outside = fingerprint_windows(tmp_path / "t.parquet", [*days, new_rows])
    assert _same(prints, every[:-1]) and outside == everything_outside == 0
    assert (cache.reads, cache.hits, cache.footers) == (5, 0, 3)


def test_a_new_row_group_with_a_null_time_is_read_and_its_null_counted_outside(tmp_path: Path) -> None:
    rows = _rows()
    late = _ms(rows) > START_MS + 15 * DAY_MS
    times = rows["ts"].to_pylist()
    times[-1] = None  # the last row, in the new rows' row group, has no time
    rows = rows.set_column(rows.schema.get_field_index("ts"), "ts", pa.array(times, rows["ts"].type))
    with pq.ParquetWriter(tmp_path / "t.parquet", rows.schema) as writer:
        writer.write_table(rows.filter(pa.array(~late)))
        writer.write_table(rows.filter(pa.array(late)))
    *days, new_rows = _days(0, 15)
    cache = FingerprintCache()
    _, outside = fingerprint_windows(tmp_path / "t.parquet", days, cache, rest=new_rows)
    assert outside == 1 and (cache.reads, cache.footers) == (2, 0)


def test_a_cache_that_cannot_be_read_is_empty(tmp_path: Path) -> None:
    (tmp_path / "cache.json").write_text("{not json")
    assert FingerprintCache.load(tmp_path / "cache.json").entries == {}
    assert FingerprintCache.load(tmp_path / "missing.json").entries == {}


def test_what_moved_is_said_column_by_column_and_nothing_for_rows_unchanged() -> None:
    kept = Fingerprint(3, {"a": {"nulls": 0.0, "min": 1.0, "max": 3.0, "sum": 6.0}, "b": {"nulls": 1.0}})
    assert Fingerprint(3, {name: dict(entry) for name, entry in kept.columns.items()}).moved(kept) == {}
    now = Fingerprint(3, {"a": {"nulls": 1.0, "min": 1.0, "max": 2.0, "sum": 3.0}})
    assert now.moved(kept) == {"a": "nulls 0 -> 1, max 3 -> 2, sum 6 -> 3", "b": "gone"}
