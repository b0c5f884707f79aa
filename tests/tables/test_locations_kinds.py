"""Every kind of table location, on a real disk and a real (loopback) S3 server: pin, hash, publish with
compare-and-swap, restore exact bytes, append."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tables.locations import LocationError, TableChanged, parse_location, restore

from locations_support import Backend, csv_bytes, parquet_bytes, table_rows


@dataclass(frozen=True)
class Case:
    store: str  # local | s3
    layout: str  # file | hive | folder | glob
    fmt: str  # parquet | csv

    @property
    def id(self) -> str:
        return f"{self.store}-{self.fmt}-{self.layout}"


CASES = [
    Case("local", "file", "parquet"),
    Case("local", "hive", "parquet"),
    Case("local", "glob", "parquet"),
    Case("local", "file", "csv"),
    Case("local", "folder", "csv"),
    Case("s3", "file", "parquet"),
    Case("s3", "hive", "parquet"),
    Case("s3", "glob", "parquet"),
    Case("s3", "folder", "csv"),
]


@pytest.fixture(params=CASES, ids=[c.id for c in CASES])
def case(request):
    return request.param


@pytest.fixture
def backend(case: Case, request) -> Backend:
    return request.getfixturevalue("s3_backend" if case.store == "s3" else "local_backend")


def _encode(frame: pd.DataFrame, fmt: str) -> bytes:
    return parquet_bytes(frame) if fmt == "parquet" else csv_bytes(frame)


def build(case: Case, backend: Backend) -> tuple[str, str, pd.DataFrame]:
    """Write the table as `case` says; returns (data: location, root to read back, the whole table as read)."""
    location, root, rows = _write_case(case, backend)
    return location, root, _as_read(rows, case.fmt)


def _as_read(rows: pd.DataFrame, fmt: str) -> pd.DataFrame:
    """The rows as the table reads them back: CSV times written without an offset are read as UTC."""
    return rows.assign(when=rows["when"].dt.tz_localize("UTC")) if fmt == "csv" else rows


def _write_case(case: Case, backend: Backend) -> tuple[str, str, pd.DataFrame]:
    rows, ext = table_rows(), case.fmt
    halves = (rows.iloc[:4].reset_index(drop=True), rows.iloc[4:].reset_index(drop=True))
    if case.layout == "file":
        backend.write(f"table.{ext}", _encode(rows, case.fmt))
        return backend.location(f"table.{ext}"), f"table.{ext}", rows
    if case.layout == "hive":
        for year, half in zip((2023, 2024), halves):
            backend.write(f"table/year={year}/part-0.{ext}", _encode(half, case.fmt))
        backend.write("table/_SUCCESS", b"")
        return backend.location("table/"), "table", rows.assign(year=[2023] * 4 + [2024] * 4)
    if case.layout == "folder":
        for name, half in zip(("a", "b"), halves):
            backend.write(f"table/{name}.{ext}", _encode(half, case.fmt))
        return backend.location("table"), "table", rows
    for index, half in enumerate(halves):
        backend.write(f"data/part-{index}.{ext}", _encode(half, case.fmt))
    backend.write(f"data/other.{ext}", _encode(rows.iloc[:1], case.fmt))  # beside the glob, not in it
    return backend.location(f"data/part-*.{ext}"), "data", rows


def records(table: pa.Table | pd.DataFrame) -> list[dict]:
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    return table.to_pylist()


def heal_last_row(pinned_table: Path, out: Path) -> pd.DataFrame:
    frame = pd.read_parquet(pinned_table)
    frame.loc[len(frame) - 1, "distance_km"] = 85.0
    frame.to_parquet(out, index=False)
    return frame


def test_pin_reads_the_whole_table_and_hashes_like_the_location(case, backend, tmp_path):
    text, _, expected = build(case, backend)
    location = parse_location(text, getattr(backend, "base", tmp_path))
    pinned = location.pin(tmp_path / "pin")
    assert records(pq.read_table(pinned.table_path)) == records(expected)
    assert pinned.content_hash == location.current_hash()
    assert list(pinned.manifest) == [f.name for f in location.files()]
    pinned.verify()
    if case.layout == "hive":
        assert pinned.partition_columns == (("year", "int64"),)
        assert [f.partitions for f in location.files()] == [(("year", "2023"),), (("year", "2024"),)]
    if case.fmt == "csv":
        assert all(d.round_trips for d in pinned.csv_dialects.values())


def test_publish_is_a_compare_and_swap_and_restore_puts_the_exact_bytes_back(case, backend, tmp_path):
    text, root, _ = build(case, backend)
    location = parse_location(text, getattr(backend, "base", tmp_path))
    pinned = location.pin(tmp_path / "pin")
    healed = heal_last_row(pinned.table_path, tmp_path / "healed.parquet")
    before = backend.read_all(root)

    with pytest.raises(TableChanged) as refused:
        location.publish(tmp_path / "healed.parquet", "sha256:" + "0" * 64, tmp_path / "refused")
    assert "\n" not in str(refused.value) and "nothing was published" in str(refused.value)
    assert backend.read_all(root) == before
    assert not (tmp_path / "refused").exists()

    published = location.publish(tmp_path / "healed.parquet", pinned.content_hash, tmp_path / "backup")
    after = backend.read_all(root)
    assert published.before_hash == pinned.content_hash
    assert published.after_hash == location.current_hash() != published.before_hash
    changed = {name for name in before if after.get(name) != before[name]}
    assert changed == {location.files()[-1].name} and set(after) == set(before)  # only the healed file
    assert records(pq.read_table(location.pin(tmp_path / "pin2").table_path)) == records(healed)

    assert restore(published.backup) == pinned.content_hash
    assert backend.read_all(root) == before


def test_publish_refuses_when_the_location_changed_after_the_pin(case, backend, tmp_path):
    text, root, _ = build(case, backend)
    location = parse_location(text, getattr(backend, "base", tmp_path))
    pinned = location.pin(tmp_path / "pin")
    heal_last_row(pinned.table_path, tmp_path / "healed.parquet")
    first = location.files()[0]
    moved = table_rows().iloc[:2]
    if case.layout == "hive":
        moved = moved  # partition folders hold the rows without the year column
    backend.write(f"{root}/{first.name}" if case.layout != "file" else root, _encode(moved, case.fmt))
    changed = backend.read_all(root)
    with pytest.raises(TableChanged):
        location.publish(tmp_path / "healed.parquet", pinned.content_hash, tmp_path / "backup")
    assert backend.read_all(root) == changed


def test_unhealed_publish_reproduces_identical_bytes(case, backend, tmp_path):
    text, root, _ = build(case, backend)
    location = parse_location(text, getattr(backend, "base", tmp_path))
    pinned = location.pin(tmp_path / "pin")
    before = backend.read_all(root)
    roundtrip = tmp_path / "same.parquet"
    pd.read_parquet(pinned.table_path).to_parquet(roundtrip, index=False)  # through pandas, as a heal does
    published = location.publish(roundtrip, pinned.content_hash, tmp_path / "backup")
    assert published.after_hash == published.before_hash == pinned.content_hash
    assert published.backup.written == () and published.backup.deleted == ()
    assert backend.read_all(root) == before


def test_append_lands_a_batch_where_the_table_lives(case, backend, tmp_path):
    text, root, expected = build(case, backend)
    location = parse_location(text, getattr(backend, "base", tmp_path))
    batch = table_rows().iloc[:2].assign(id=[9, 10])
    if case.layout == "hive":
        batch = batch.assign(year=[2025, 2025])
    batch_path = tmp_path / f"batch.{case.fmt}"
    batch_path.write_bytes(_encode(batch, case.fmt))

    landed = location.append(batch_path)
    assert landed.rows == 2 and landed.created
    whole = records(pq.read_table(location.pin(tmp_path / "pin").table_path))
    assert len(whole) == 10 and whole[-2:] == records(_as_read(batch, case.fmt))
    if case.layout == "hive":
        assert landed.names[0].startswith("year=2025/part-")
    if case.layout != "file":  # a folder-backed table: a new, content-named file; landing it twice is a no-op
        assert all(name.endswith(f".{case.fmt}") for name in landed.names)
        settled = backend.read_all(root)
        again = location.append(batch_path)
        assert not again.created and again.names == landed.names
        assert backend.read_all(root) == settled

    retyped = tmp_path / "retyped.parquet"
    retyped.write_bytes(parquet_bytes(batch.assign(id=["9", "10"])))
    before = backend.read_all(root)
    with pytest.raises(LocationError) as refused:
        location.append(retyped)
    assert "id" in str(refused.value) and "\n" not in str(refused.value)
    assert backend.read_all(root) == before


def test_a_batch_with_a_renamed_column_lands_and_the_table_reads_by_name(case, backend, tmp_path):
    """The producer renamed distance_km: a parquet table takes the batch and reads as the union of columns (the
    guard then sees the rename); a CSV table keeps one header and refuses it, changing nothing."""
    text, root, expected = build(case, backend)
    location = parse_location(text, getattr(backend, "base", tmp_path))
    batch = table_rows().iloc[:2].assign(id=[9, 10]).rename(columns={"distance_km": "distance_mi"})
    if case.layout == "hive":
        batch = batch.assign(year=[2025, 2025])
    renamed = tmp_path / "renamed.parquet"
    renamed.write_bytes(parquet_bytes(batch))
    before = backend.read_all(root)
    if case.fmt == "csv":
        with pytest.raises(LocationError) as refused:
            location.append(renamed)
        assert "header" in str(refused.value) and "\n" not in str(refused.value)
        assert backend.read_all(root) == before
        return
    assert location.append(renamed).created
    whole = pq.read_table(location.pin(tmp_path / "pin").table_path)
    assert "distance_mi" in whole.column_names and whole.num_rows == 10
    rows = whole.to_pylist()
    assert sorted(r["distance_mi"] for r in rows if r["distance_km"] is None) == [1.5, 2.25]
    assert all(r["distance_mi"] is None for r in rows if r["distance_km"] is not None)


@pytest.mark.parametrize("store", ["local", "s3"])
@pytest.mark.parametrize("where", ["landing/", "landing/part-*.parquet", "landing/table.parquet", "landing/table.csv"])
def test_the_first_batch_creates_the_table(store, where, request, tmp_path):
    backend = request.getfixturevalue(f"{store}_backend")
    location = parse_location(backend.location(where), getattr(backend, "base", tmp_path))
    with pytest.raises(LocationError):
        location.files()
    batch = tmp_path / "batch.csv"
    batch.write_bytes(csv_bytes(table_rows()))
    landed = location.append(batch)
    assert landed.created and landed.rows == 8
    assert records(pq.read_table(location.pin(tmp_path / "pin").table_path)) == records(_as_read(table_rows(), "csv"))
    if where.endswith(".csv"):  # same format: the batch's own bytes
        assert backend.read_all("landing/table.csv") == {"table.csv": csv_bytes(table_rows())}
    elif where.endswith("*.parquet"):
        (name,) = [f.name for f in location.files()]
        assert name == landed.names[0] and name.startswith("part-") and len(name) == len("part-.parquet") + 16
