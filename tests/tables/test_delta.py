"""A Delta Lake table where it lives: the pin is a version, the heal one conditional commit, undo time travel.

Every table here is a real Delta table written and read back with `deltalake` (delta-rs); nothing is mocked."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from tables import delta, locations
from tables.objectstore import LocationError, TableChanged


def _rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "distance_km": pa.array([1.5 * i for i in ids], pa.float64()),
            "zone": pa.array([i % 3 for i in ids], pa.int32()),
        }
    )


def _content(path: Path) -> list[dict]:
    """A table's rows, by content and in a fixed order."""
    return sorted(DeltaTable(str(path)).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A partitioned Delta table at version 2 whose folder still holds the files version 1 removed."""
    path = tmp_path / "features"
    write_deltalake(str(path), _rows(1, 6), partition_by=["zone"])
    write_deltalake(str(path), _rows(100, 3), partition_by=["zone"], mode="overwrite")
    write_deltalake(str(path), _rows(7, 3), mode="append")
    return path


def _healed(tmp_path: Path, rows: pa.Table) -> Path:
    out = tmp_path / "healed.parquet"
    pq.write_table(rows, out)
    return out


def test_a_folder_with_a_delta_log_is_read_as_the_version_it_is_at_not_as_its_files(table, tmp_path):
    location = locations.parse_location("features", table.parent)
    assert isinstance(location, delta.DeltaLocation)
    pinned = location.pin(tmp_path / "pin")
    read = pq.read_table(pinned.table_path)
    assert sorted(read.column("id").to_pylist()) == [7, 8, 9, 100, 101, 102]  # not the 6 rows version 1 removed
    assert read.schema.field("zone").type == pa.int32()  # the partition value in the table's own type
    assert pinned.snapshot == "delta version 2"
    assert pinned.content_hash == location.current_hash()
    assert sorted(p.name for p in (tmp_path / "pin").iterdir()) == ["pin.json", "table.parquet"]  # no copies
    again = location.pin(tmp_path / "pin-again")
    assert again.table_sha256 == pinned.table_sha256  # the same version gives the same bytes: files in name order


def test_the_heal_is_one_commit_and_undo_is_time_travel_to_the_rows_before(table, tmp_path):
    location = locations.parse_location("features", table.parent)
    pinned = location.pin(tmp_path / "pin")
    before_rows = _content(table)
    healed = pq.read_table(pinned.table_path)
    healed = healed.set_column(1, "distance_km", pa.array([d / 1000 for d in healed.column(1).to_pylist()]))
    published = location.publish(_healed(tmp_path, healed), pinned.content_hash, tmp_path / "backup")
    assert DeltaTable(str(table)).version() == 3  # one commit
    assert published.backup.versions == (2, 3)
    assert not (tmp_path / "backup" / "files").exists()  # no bytes kept: the version before is the backup
    assert {r["id"]: r["distance_km"] for r in _content(table)}[100] == pytest.approx(0.15)
    restored = locations.restore(tmp_path / "backup", base=table.parent)
    assert restored == published.before_hash == location.current_hash()
    assert _content(table) == before_rows
    assert DeltaTable(str(table)).version() == 4  # the restore is itself a commit; the history keeps the heal


def test_a_commit_between_the_pin_and_the_publish_ends_it_with_nothing_written(table, tmp_path):
    location = locations.parse_location("features", table.parent)
    pinned = location.pin(tmp_path / "pin")
    write_deltalake(str(table), _rows(50, 1), mode="append")  # a foreign writer
    with pytest.raises(TableChanged, match="changed since it was pinned"):
        location.publish(pinned.table_path, pinned.content_hash, tmp_path / "backup")
    assert DeltaTable(str(table)).version() == 3
    assert 50 in [r["id"] for r in _content(table)]


def test_a_commit_that_lands_after_the_check_makes_the_heal_commit_fail_not_retry(table, tmp_path):
    location = locations.parse_location("features", table.parent)
    assert isinstance(location, delta.DeltaLocation)
    seen = DeltaTable(str(table))  # the version the publish checked
    write_deltalake(str(table), _rows(50, 1), mode="append")  # lands between the check and the commit
    with pytest.raises(TableChanged, match="committed to the Delta table"):
        location._commit_rows(seen, _rows(1, 2), location._snapshot(seen), "overwrite")
    assert DeltaTable(str(table)).version() == 3
    assert len(_content(table)) == 7


def test_undo_after_a_foreign_commit_refuses_and_changes_nothing(table, tmp_path):
    location = locations.parse_location("features", table.parent)
    pinned = location.pin(tmp_path / "pin")
    location.publish(pinned.table_path, pinned.content_hash, tmp_path / "backup")
    write_deltalake(str(table), _rows(50, 1), mode="append")
    with pytest.raises(TableChanged, match="changed since the publish being undone"):
        locations.restore(tmp_path / "backup", base=table.parent)
    assert DeltaTable(str(table)).version() == 4


def test_a_vacuumed_version_cannot_be_restored_and_the_error_names_the_retention(table, tmp_path):
    location = locations.parse_location("features", table.parent)
    pinned = location.pin(tmp_path / "pin")
    location.publish(_healed(tmp_path, _rows(1, 2)), pinned.content_hash, tmp_path / "backup")
    DeltaTable(str(table)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    vacuumed = DeltaTable(str(table)).version()  # vacuum records itself in the log
    with pytest.raises(TableChanged, match="deletedFileRetentionDuration"):
        locations.restore(tmp_path / "backup", base=table.parent)
    assert DeltaTable(str(table)).version() == vacuumed
    assert [r["id"] for r in _content(table)] == [1, 2]


def test_land_is_one_commit_and_the_same_batch_twice_is_one(tmp_path):
    location = locations.parse_location("delta:features", tmp_path)
    assert isinstance(location, delta.DeltaLocation)
    first, second = tmp_path / "b1.parquet", tmp_path / "b2.parquet"
    pq.write_table(_rows(1, 4), first)
    pq.write_table(_rows(5, 2), second)
    assert location.append(first).created
    assert location.append(second).names == ("delta version 1",)
    again = location.append(second)
    assert not again.created and again.names == ("delta version 1",)
    assert DeltaTable(str(tmp_path / "features")).version() == 1
    assert [r["id"] for r in _content(tmp_path / "features")] == [1, 2, 3, 4, 5, 6]


def test_a_batch_whose_column_changed_type_is_refused_and_nothing_is_written(table, tmp_path):
    location = locations.parse_location("features", table.parent)
    batch = tmp_path / "b.parquet"
    pq.write_table(_rows(20, 2).set_column(0, "id", pa.array(["a", "b"])), batch)
    with pytest.raises(LocationError, match="id: string"):
        location.append(batch)
    assert DeltaTable(str(table)).version() == 2


def test_a_delta_location_that_is_not_there_is_one_clear_error(tmp_path):
    with pytest.raises(LocationError, match="no Delta table"):
        locations.parse_location("delta:nowhere", tmp_path).pin(tmp_path / "pin")
    assert not (tmp_path / "pin").exists()


def test_an_unreadable_batch_is_one_clear_error_and_nothing_is_written(table, tmp_path):
    batch = tmp_path / "broken.parquet"
    batch.write_bytes(b"PAR1 not really")
    with pytest.raises(LocationError, match="not a readable parquet file"):
        locations.parse_location("features", table.parent).append(batch)
    assert DeltaTable(str(table)).version() == 2
