"""An Apache Iceberg table in the workspace's own catalog: the pin is a snapshot, the heal one conditional commit,
undo the branch set back.

Every table here is a real Iceberg table in a real SQL catalog on sqlite, written and read back with `pyiceberg`;
nothing is mocked."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tables import iceberg, locations
from tables.objectstore import LocationError, TableChanged

NAME = "iceberg:features.trips"


def _rows(start: int, count: int) -> pa.Table:
    ids = list(range(start, start + count))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "distance_km": pa.array([1.5 * i for i in ids], pa.float64()),
            "zone": pa.array([f"z{i % 3}" for i in ids], pa.string()),
        }
    )


def _location(base: Path) -> iceberg.IcebergLocation:
    location = locations.parse_location(NAME, base)
    assert isinstance(location, iceberg.IcebergLocation)
    return location


def _live(base: Path):
    """The table as pyiceberg reads it from the catalog now, apart from the code under test's reads."""
    return _location(base)._catalog().load_table("features.trips")


def _content(base: Path) -> list[dict]:
    return sorted(_live(base).scan().to_arrow().to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """A table of three snapshots: created, overwritten (its first files removed, still on disk), then appended."""
    catalog = _location(tmp_path)._catalog()
    catalog.create_namespace("features")
    table = catalog.create_table("features.trips", schema=_rows(0, 0).schema)
    table.append(_rows(1, 6))
    table.overwrite(_rows(100, 3))
    table.append(_rows(7, 3))
    return tmp_path


def _healed(tmp_path: Path, rows: pa.Table) -> Path:
    out = tmp_path / "healed.parquet"
    pq.write_table(rows, out)
    return out


def test_the_pin_reads_the_current_snapshot_in_commit_order(base, tmp_path):
    location = _location(base)
    pinned = location.pin(tmp_path / "pin")
    read = pq.read_table(pinned.table_path)
    assert read.column("id").to_pylist() == [100, 101, 102, 7, 8, 9]  # the overwrite's rows, then the append's
    assert pinned.snapshot == f"iceberg snapshot {_live(base).current_snapshot().snapshot_id}"
    assert pinned.content_hash == location.current_hash()
    assert sorted(p.name for p in (tmp_path / "pin").iterdir()) == ["pin.json", "table.parquet"]  # no copies


def test_a_renamed_column_is_read_by_its_field_id(base, tmp_path):
    with _live(base).update_schema() as update:
        update.rename_column("distance_km", "distance")
    read = pq.read_table(_location(base).pin(tmp_path / "pin").table_path)
    assert read.column_names == ["id", "distance", "zone"] and read.column("distance").to_pylist()[0] == 150.0


def test_the_heal_is_one_commit_and_undo_sets_the_branch_back(base, tmp_path):
    location = _location(base)
    pinned = location.pin(tmp_path / "pin")
    before_rows, before_snapshot = _content(base), _live(base).current_snapshot().snapshot_id
    healed = pq.read_table(pinned.table_path)
    healed = healed.set_column(1, "distance_km", pa.array([d / 1000 for d in healed.column(1).to_pylist()]))
    published = location.publish(_healed(tmp_path, healed), pinned.content_hash, tmp_path / "backup")
    live = _live(base)
    made = live.snapshots()[[s.snapshot_id for s in live.snapshots()].index(before_snapshot) + 1 :]
    assert [s.summary.operation.value for s in made] == ["delete", "append"]  # one commit: an overwrite, on the pin
    assert made[0].parent_snapshot_id == before_snapshot
    assert published.backup.versions == (before_snapshot, live.current_snapshot().snapshot_id)
    assert "commit.retry.num-retries" not in live.properties  # the no-retry copy of the metadata is never written
    assert {r["id"]: r["distance_km"] for r in _content(base)}[100] == pytest.approx(0.15)
    assert locations.restore(tmp_path / "backup", base=base) == published.before_hash
    assert _live(base).current_snapshot().snapshot_id == before_snapshot and _content(base) == before_rows


def test_a_commit_between_the_pin_and_the_publish_ends_it_with_nothing_written(base, tmp_path):
    location = _location(base)
    pinned = location.pin(tmp_path / "pin")
    _live(base).append(_rows(50, 1))  # a foreign writer
    with pytest.raises(TableChanged, match="changed since it was pinned"):
        location.publish(pinned.table_path, pinned.content_hash, tmp_path / "backup")
    assert 50 in [r["id"] for r in _content(base)] and len(_content(base)) == 7


def test_a_commit_that_lands_after_the_check_makes_the_heal_commit_fail_not_retry(base, tmp_path):
    location = _location(base)
    seen = _live(base)  # the snapshot the publish checked
    _live(base).append(_rows(50, 1))  # lands between the check and the commit
    with pytest.raises(TableChanged, match="committed to the Iceberg table"):
        location._commit_rows(seen, _rows(1, 2), location._snapshot(seen), overwrite=True)
    assert len(_content(base)) == 7


def test_undo_after_a_foreign_commit_refuses_and_changes_nothing(base, tmp_path):
    location = _location(base)
    pinned = location.pin(tmp_path / "pin")
    location.publish(pinned.table_path, pinned.content_hash, tmp_path / "backup")
    _live(base).append(_rows(50, 1))
    with pytest.raises(TableChanged, match="changed since the publish being undone"):
        locations.restore(tmp_path / "backup", base=base)
    assert 50 in [r["id"] for r in _content(base)]


def test_an_expired_snapshot_cannot_be_restored_and_the_error_names_the_retention(base, tmp_path):
    location = _location(base)
    pinned = location.pin(tmp_path / "pin")
    before = _live(base).current_snapshot().snapshot_id
    location.publish(_healed(tmp_path, _rows(1, 2)), pinned.content_hash, tmp_path / "backup")
    _live(base).maintenance.expire_snapshots().by_id(before).commit()
    with pytest.raises(TableChanged, match="history.expire"):
        locations.restore(tmp_path / "backup", base=base)
    assert [r["id"] for r in _content(base)] == [1, 2]


def test_land_creates_the_table_and_the_same_batch_twice_is_one_commit(tmp_path):
    location = _location(tmp_path)
    first, second = tmp_path / "b1.parquet", tmp_path / "b2.parquet"
    pq.write_table(_rows(1, 4), first)
    pq.write_table(_rows(5, 2), second)
    assert location.append(first).created and location.append(second).created
    again = location.append(second)
    assert not again.created and again.names == (f"iceberg snapshot {_live(tmp_path).current_snapshot().snapshot_id}",)
    assert len(_live(tmp_path).snapshots()) == 2
    assert [r["id"] for r in _content(tmp_path)] == [1, 2, 3, 4, 5, 6]


def test_a_batch_whose_column_changed_type_is_refused_and_nothing_is_written(base, tmp_path):
    location = _location(base)
    snapshots = len(_live(base).snapshots())
    batch = tmp_path / "b.parquet"
    pq.write_table(_rows(20, 2).set_column(0, "id", pa.array(["a", "b"])), batch)
    with pytest.raises(LocationError, match="id: string"):
        location.append(batch)
    assert len(_live(base).snapshots()) == snapshots


@pytest.mark.parametrize("text", ["iceberg:trips", "iceberg:a b.c", "iceberg:"])
def test_a_name_that_is_no_table_is_one_clear_error(text, tmp_path):
    with pytest.raises(LocationError, match="iceberg:NAMESPACE.TABLE"):
        locations.parse_location(text, tmp_path)


def test_a_catalog_named_kintsugi_in_pyicebergs_configuration_is_used_instead_of_the_workspaces(tmp_path, monkeypatch):
    """A team's own catalog (a REST catalog, say) configured as `kintsugi` the way pyiceberg reads its
    configuration (here from the environment, a SQL catalog elsewhere on disk, set after pyiceberg was imported):
    `iceberg:` names its tables, and the workspace keeps no catalog of its own."""
    elsewhere = tmp_path / "team-catalog"
    (elsewhere / "warehouse").mkdir(parents=True)
    monkeypatch.setenv("PYICEBERG_CATALOG__KINTSUGI__TYPE", "sql")
    monkeypatch.setenv("PYICEBERG_CATALOG__KINTSUGI__URI", f"sqlite:///{elsewhere / 'catalog.db'}")
    monkeypatch.setenv("PYICEBERG_CATALOG__KINTSUGI__WAREHOUSE", (elsewhere / "warehouse").as_uri())
    from pyiceberg.catalog.sql import SqlCatalog

    team = SqlCatalog(
        "kintsugi", uri=f"sqlite:///{elsewhere / 'catalog.db'}", warehouse=(elsewhere / "warehouse").as_uri()
    )
    team.create_namespace("features")
    team.create_table("features.trips", schema=_rows(0, 0).schema).append(_rows(1, 4))
    workspace = tmp_path / "ws"
    pinned = _location(workspace).pin(tmp_path / "pin")
    assert pq.read_table(pinned.table_path).column("id").to_pylist() == [1, 2, 3, 4]
    assert pinned.snapshot == f"iceberg snapshot {team.load_table('features.trips').current_snapshot().snapshot_id}"
    assert not (workspace / "iceberg").exists()
