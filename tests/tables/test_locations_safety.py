"""What must never happen to a team's table: a pin that silently follows a writer, a bad location that
half-writes, a damaged backup that overwrites the live table, a CSV that does not come back as it was."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tables.csvtable import infer_schema, read_raw, render, to_table
from tables.locations import MARKER, LocationError, TableChanged, parse_location, restore
from tests.support import as_nobody

from locations_support import LocalBackend, csv_bytes, parquet_bytes, table_rows


def _one_line_with_fix(error: Exception) -> None:
    text = str(error)
    assert "\n" not in text and "; " in text, text


# ------------------------------------------------------------------------------------------- pins


def test_a_pin_is_a_private_copy_that_survives_an_atomic_replacement_of_the_source(
    local_backend: LocalBackend, tmp_path
):
    local_backend.write("table.parquet", parquet_bytes(table_rows()))
    location = parse_location("table.parquet", local_backend.base)
    pinned = location.pin(tmp_path / "pin")
    assert os.stat(pinned.table_path).st_ino != os.stat(local_backend.base / "table.parquet").st_ino  # no link
    old_rows = pq.read_table(pinned.table_path).to_pylist()

    local_backend.write("table.parquet", parquet_bytes(table_rows().iloc[:3]))  # write temp, then rename over

    pinned.verify()  # the pin is its own file: still the bytes the guard read
    assert pq.read_table(pinned.table_path).to_pylist() == old_rows
    assert location.current_hash() != pinned.content_hash  # ...and the location has moved on


@pytest.mark.parametrize("data", ["table.parquet", "t", "t/*.parquet", "t.csv"])
def test_an_in_place_rewrite_of_the_source_leaves_the_pin_on_the_bytes_it_hashed(
    local_backend: LocalBackend, tmp_path, data
):
    name = {"table.parquet": "table.parquet", "t": "t/a.parquet", "t/*.parquet": "t/a.parquet", "t.csv": "t.csv"}
    source = local_backend.base / name[data]
    local_backend.write(name[data], csv_bytes(table_rows()) if data.endswith(".csv") else parquet_bytes(table_rows()))
    pinned = parse_location(data, local_backend.base).pin(tmp_path / "pin")
    old_rows = pq.read_table(pinned.table_path).to_pylist()
    inode = source.stat().st_ino
    shorter = csv_bytes(table_rows().iloc[:3]) if data.endswith(".csv") else parquet_bytes(table_rows().iloc[:3])
    with open(source, "r+b") as handle:  # a writer that rewrites in place: same path, same inode
        handle.write(shorter)
        handle.truncate()
    assert source.stat().st_ino == inode

    pinned.verify()  # the pinned bytes did not move with the live file
    assert pq.read_table(pinned.table_path).to_pylist() == old_rows
    assert all(os.stat(f).st_ino != inode for f in pinned.files)


def test_a_tampered_materialised_table_is_caught_by_verify(local_backend: LocalBackend, tmp_path):
    local_backend.write("t/a.csv", csv_bytes(table_rows()))
    pinned = parse_location("t", local_backend.base).pin(tmp_path / "pin")
    pq.write_table(pq.read_table(pinned.table_path).slice(0, 2), pinned.table_path)
    with pytest.raises(TableChanged):
        pinned.verify()


# ------------------------------------------------------------------------------------- bad locations


def _write_tree(base: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_bytes(data)


BAD = {
    "missing file": ({}, "nope.parquet", "no table at"),
    "missing folder": ({}, "nope/", "no table at"),
    "glob without match": ({"data/x.parquet": b"PAR1"}, "data/part-*.parquet", "no parquet or CSV files"),
    "empty folder": ({"t/_SUCCESS": b""}, "t", "no parquet or CSV files"),
    "text named .parquet": ({"t.parquet": b"id,value\n1,2\n"}, "t.parquet", "not a readable parquet file"),
    "ragged CSV row": ({"t.csv": b"id,value\n1,2\n3\n"}, "t.csv", "not a well-formed CSV file"),
    "binary named .csv": ({"t.csv": b"\xff\xfe\x00PAR1\x00\x9c"}, "t.csv", "not a UTF-8 CSV file"),
    "one column, two types": (
        {
            "t/a.parquet": parquet_bytes(table_rows()),
            "t/b.parquet": parquet_bytes(table_rows().assign(id=[str(i) for i in range(8)])),
        },
        "t",
        "column 'id' is int64 in a.parquet but ",
    ),
    "mixed CSV headers": ({"t/a.csv": b"id,v\n1,2\n", "t/b.csv": b"id,w\n1,2\n"}, "t", "different columns"),
    "mixed formats": (
        {"t/a.parquet": parquet_bytes(table_rows()), "t/b.csv": b"id\n1\n"},
        "t",
        "mixes parquet and CSV",
    ),
    "stray file in folder": ({"t/a.parquet": parquet_bytes(table_rows()), "t/README.md": b"hi"}, "t", "README.md"),
    "unknown extension": ({"t.txt": b"id\n1\n"}, "t.txt", "neither .parquet nor .csv"),
    "other scheme": ({}, "gs://bucket/t.parquet", "unsupported scheme"),
    "double star": ({}, "data/**/x.parquet", "uses **"),
    "inconsistent partitions": (
        {"t/year=2023/a.parquet": parquet_bytes(table_rows()), "t/b.parquet": parquet_bytes(table_rows())},
        "t",
        "inconsistent partition folders",
    ),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_a_bad_location_gets_one_line_naming_the_fix_and_changes_nothing(case, local_backend, tmp_path):
    files, text, expected = BAD[case]
    _write_tree(local_backend.base, files)
    before = local_backend.read_all(".")
    healed = tmp_path / "healed.parquet"
    healed.write_bytes(parquet_bytes(table_rows()))
    landing_ok = case in ("missing file", "missing folder", "glob without match", "empty folder")  # land creates
    for attempt in ("pin", "publish") if landing_ok else ("pin", "publish", "append"):
        with pytest.raises(LocationError) as failed:
            location = parse_location(text, local_backend.base)
            if attempt == "pin":
                location.pin(tmp_path / "pin")
            elif attempt == "publish":  # with the location's true hash, so the compare-and-swap is not what refuses
                location.publish(healed, location.current_hash(), tmp_path / "backup")
            else:
                location.append(healed)
        assert expected in str(failed.value), str(failed.value)
        _one_line_with_fix(failed.value)
    assert local_backend.read_all(".") == before
    assert not (tmp_path / "pin").exists() and not (tmp_path / "backup").exists()


def _unreadable_attempt(text: str, base: Path, dest: Path) -> str:
    try:
        parse_location(text, base).pin(dest)
    except LocationError as exc:
        return f"LocationError: {exc}"
    except BaseException as exc:  # noqa: BLE001 - reported to the test as text
        return f"{type(exc).__name__}: {exc}"
    return "pinned"


@pytest.mark.parametrize("what", ["file", "folder"])
def test_no_permission_is_one_line_naming_the_fix(what: str):
    base = Path(tempfile.mkdtemp(prefix="kintsugi-perm-"))  # not under pytest's 0700 tmp: nobody must reach it
    try:
        os.chmod(base, 0o755)
        (base / "t").mkdir()
        (base / "t" / "a.parquet").write_bytes(parquet_bytes(table_rows()))
        dest = base / "pins"
        dest.mkdir(mode=0o777)
        os.chmod(dest, 0o777)
        target = base / "t" / "a.parquet" if what == "file" else base / "t"
        os.chmod(target, 0)
        text = "t/a.parquet" if what == "file" else "t"
        message = as_nobody(lambda: _unreadable_attempt(text, base, dest / "pin"))
        assert message.startswith("LocationError: ") and "permission denied" in message, message
        assert "\n" not in message and "give the user running kintsugi read" in message
        assert not (dest / "pin").exists()
    finally:
        for folder, _, _ in os.walk(base):
            os.chmod(folder, 0o755)
        os.chmod(base / "t" / "a.parquet", 0o644)
        shutil.rmtree(base)


# ------------------------------------------------------------------------------------------ restore


def _published(local_backend: LocalBackend, tmp_path: Path, text: str):
    location = parse_location(text, local_backend.base)
    pinned = location.pin(tmp_path / "pin")
    frame = pd.read_parquet(pinned.table_path)
    frame.loc[0, "distance_km"] = 42.0
    frame.to_parquet(tmp_path / "healed.parquet", index=False)
    return location, pinned, location.publish(tmp_path / "healed.parquet", pinned.content_hash, tmp_path / "backup")


def test_a_damaged_backup_changes_nothing_and_raises(local_backend: LocalBackend, tmp_path):
    local_backend.write("t/year=2023/a.parquet", parquet_bytes(table_rows()))
    local_backend.write("t/year=2024/a.parquet", parquet_bytes(table_rows()))
    location, _, published = _published(local_backend, tmp_path, "t")
    healed_bytes = local_backend.read_all("t")
    (published.backup.root / "files" / "year=2023" / "a.parquet").write_bytes(b"18 bytes of damage")
    with pytest.raises(TableChanged) as damaged:
        restore(published.backup.root)
    assert "damaged" in str(damaged.value) and "nothing was restored" in str(damaged.value)
    _one_line_with_fix(damaged.value)
    assert local_backend.read_all("t") == healed_bytes
    (published.backup.root / "manifest.json").write_text("{not json")
    with pytest.raises(TableChanged):
        restore(published.backup.root)
    assert local_backend.read_all("t") == healed_bytes


def test_restore_refuses_a_table_that_moved_on_unless_told(local_backend: LocalBackend, tmp_path):
    local_backend.write("table.parquet", parquet_bytes(table_rows()))
    location, pinned, published = _published(local_backend, tmp_path, "table.parquet")
    local_backend.write("table.parquet", parquet_bytes(table_rows().iloc[:5]))  # a later land
    moved = local_backend.read_all("table.parquet")
    with pytest.raises(TableChanged):
        restore(published.backup)
    assert local_backend.read_all("table.parquet") == moved
    assert restore(published.backup, check_live=False) == pinned.content_hash
    assert location.current_hash() == pinned.content_hash


def test_an_interrupted_glob_publish_is_refused_then_rolled_back(local_backend: LocalBackend, tmp_path):
    rows = table_rows()
    local_backend.write("data/part-0.parquet", parquet_bytes(rows.iloc[:4]))
    local_backend.write("data/part-1.parquet", parquet_bytes(rows.iloc[4:]))
    original = local_backend.read_all("data")
    location, pinned, published = _published(local_backend, tmp_path, "data/part-*.parquet")
    # as if killed mid-commit: the marker is there and one file is back to old bytes, the other new
    local_backend.write(MARKER.join(["data/", ""]), b"{}")
    local_backend.write("data/part-1.parquet", original["part-1.parquet"])
    local_backend.write("data/part-0.parquet", parquet_bytes(rows.iloc[:1]))
    with pytest.raises(LocationError) as busy:
        location.files()
    assert "in progress or was interrupted" in str(busy.value)
    assert restore(published.backup, check_live=False) == pinned.content_hash
    assert local_backend.read_all("data") == original  # marker gone too


def test_folder_publish_swaps_in_one_step_and_keeps_unchanged_files(local_backend: LocalBackend, tmp_path):
    local_backend.write("t/year=2023/a.parquet", parquet_bytes(table_rows()))
    local_backend.write("t/year=2024/a.parquet", parquet_bytes(table_rows()))
    untouched = local_backend.base / "t" / "year=2024" / "a.parquet"
    inode = untouched.stat().st_ino
    with open(local_backend.base / "t" / "year=2023" / "a.parquet", "rb") as reader:  # a reader mid-read
        _, _, published = _published(local_backend, tmp_path, "t")
        assert reader.read() == (published.backup.root / "files" / "year=2023" / "a.parquet").read_bytes()
    assert published.backup.written == ("year=2023/a.parquet",)
    assert untouched.stat().st_ino == inode  # hard-linked into the new version, not rewritten
    assert not [p for p in (local_backend.base).iterdir() if p.name.startswith(".t.kintsugi")]


def test_pin_and_publish_want_empty_folders(local_backend: LocalBackend, tmp_path):
    local_backend.write("table.parquet", parquet_bytes(table_rows()))
    location = parse_location("table.parquet", local_backend.base)
    (tmp_path / "pin").mkdir()
    (tmp_path / "pin" / "old").write_text("x")
    with pytest.raises(LocationError):
        location.pin(tmp_path / "pin")
    assert (tmp_path / "pin" / "old").read_text() == "x"


# ---------------------------------------------------------------------------------------------- CSV

CSV_STYLES = {
    "pandas": b"id,distance_km,city,when\n1,1.5,Lyon,2024-03-01 01:30:00\n2,3.0,,2024-03-02 02:30:00\n",
    "R write.csv": b'"id","dist","name","flag","day"\n1,3,"Lyon",TRUE,2024-01-01\n2,1.5,NA,FALSE,NA\n'
    b'3,NA,"NA",TRUE,2024-01-03\n',
    "CRLF, semicolons, fixed decimals, no final newline": b'id;price;note\r\n1;12.50;"a ""quoted"" word"\r\n'
    b'2;3.00;"semi;colon"\r\n3;0.10;x',
    "ISO UTC timestamps": b"id,at\n1,2024-01-01T00:00:00Z\n2,2024-06-30T23:59:59Z\n",
}


@pytest.mark.parametrize("style", list(CSV_STYLES), ids=list(CSV_STYLES))
def test_csv_round_trips_to_the_same_bytes(style: str, tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(CSV_STYLES[style])
    raw = read_raw(path, "t.csv")
    schema = infer_schema([raw])
    assert render(to_table(raw, schema), schema, raw.dialect) == CSV_STYLES[style]
    kinds = {c.name: c.kind for c in schema.columns}
    assert kinds.get("id") == "int" and "string" not in {kinds.get(n) for n in ("distance_km", "dist", "price", "at")}


def test_r_style_na_is_null_but_quoted_na_is_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(CSV_STYLES["R write.csv"])
    raw = read_raw(path, "t.csv")
    table = to_table(raw, infer_schema([raw]))
    assert table.column("name").to_pylist() == ["Lyon", None, "NA"]
    assert table.column("dist").to_pylist() == [3.0, 1.5, None]
    assert str(table.schema.field("day").type) == "date32[day]"


def test_csv_heal_rewrites_only_the_changed_line(local_backend: LocalBackend, tmp_path):
    rows = table_rows()
    local_backend.write("t/a.csv", csv_bytes(rows.iloc[:4]))
    local_backend.write("t/b.csv", csv_bytes(rows.iloc[4:]))
    before = local_backend.read_all("t")
    _, pinned, published = _published(local_backend, tmp_path, "t")
    after = local_backend.read_all("t")
    assert after["b.csv"] == before["b.csv"]
    old_lines, new_lines = before["a.csv"].split(b"\n"), after["a.csv"].split(b"\n")
    assert [(o, n) for o, n in zip(old_lines, new_lines) if o != n] == [
        (b"1,1.5,Lyon,2024-03-01 01:30:00", b"1,42.0,Lyon,2024-03-01 01:30:00")
    ]
    assert restore(published.backup) == pinned.content_hash and local_backend.read_all("t") == before


def test_hive_folder_values_keep_their_spelling(local_backend: LocalBackend, tmp_path):
    local_backend.write("t/month=01/a.parquet", parquet_bytes(table_rows().iloc[:4]))
    local_backend.write("t/month=02/a.parquet", parquet_bytes(table_rows().iloc[4:]))
    location = parse_location("t", local_backend.base)
    pinned = location.pin(tmp_path / "pin")
    assert pinned.partition_columns == (("month", "string"),)  # "01" is not a canonical integer
    frame = pd.read_parquet(pinned.table_path)
    frame.loc[7, "distance_km"] = 1.0
    frame = pd.concat([frame, frame.iloc[[0]].assign(month="03", id=99)], ignore_index=True)
    frame.to_parquet(tmp_path / "healed.parquet", index=False)
    published = location.publish(tmp_path / "healed.parquet", pinned.content_hash, tmp_path / "backup")
    assert published.backup.written[0] == "month=02/a.parquet"
    assert published.backup.written[1].startswith("month=03/part-")
    assert sorted(p.name for p in (local_backend.base / "t").iterdir()) == ["month=01", "month=02", "month=03"]


def test_a_batch_spanning_partitions_lands_one_file_in_each(local_backend: LocalBackend, tmp_path):
    local_backend.write("t/year=2023/a.parquet", parquet_bytes(table_rows()))
    location = parse_location("t", local_backend.base)
    batch = table_rows().iloc[:3].assign(year=[2023, 2025, 2025])
    pq.write_table(pa.Table.from_pandas(batch, preserve_index=False), tmp_path / "batch.parquet")
    landed = location.append(tmp_path / "batch.parquet")
    assert [n.split("/")[0] for n in landed.names] == ["year=2023", "year=2025"] and landed.created
    assert not (local_backend.base / "t" / MARKER).exists()
    whole = pq.read_table(location.pin(tmp_path / "pin").table_path)
    assert whole.num_rows == 11 and sorted(set(whole.column("year").to_pylist())) == [2023, 2025]
