"""A table made of files: reading them as arrow tables, joining them into one parquet file with the hive
partition columns materialised, and splitting a whole healed table back into the files that changed.

Hive partition values are typed deterministically: a key whose every value is a canonical integer
("2024", "7", not "07") is int64; any other key is a string. Both write back to the same folder names.

Files are joined BY COLUMN NAME (`unify_schemas`): a file that lacks a column of another (a batch whose producer
renamed or dropped one) reads as nulls there, the way Spark's mergeSchema and pyarrow datasets read them. The
table's columns are the first file's, then each new name in the order it first appears. One name with two
types is still refused: no reading can make both true. Deciding what a changed column means is the guard's job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tables.csvtable import CsvSchema, FileDialect, RawCsv, render, to_table
from tables.objectstore import LocationError

__all__ = [
    "Part",
    "partition_fields",
    "parquet_schema",
    "parquet_rows",
    "check_same_schema",
    "unify_schemas",
    "project",
    "materialise",
    "read_healed",
    "conform",
    "plan_rewrite",
    "write_part",
    "Rewrite",
]

_CANONICAL_INT = re.compile(r"-?(0|[1-9][0-9]*)")


@dataclass(frozen=True)
class Part:
    """One file of the table, readable locally: its name in the table, its partition values, and either a
    parquet path or a parsed CSV."""

    name: str
    partitions: tuple[tuple[str, str], ...]
    path: Path
    raw: RawCsv | None = None

    def read(self, csv_schema: CsvSchema | None) -> pa.Table:
        if self.raw is not None:
            assert csv_schema is not None
            return to_table(self.raw, csv_schema)
        return _read_parquet(self.path, self.name)


def _read_parquet(path: Path, name: str) -> pa.Table:
    try:
        return pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise _not_parquet(name, exc) from exc


def _not_parquet(name: str, exc: BaseException) -> LocationError:
    detail = (str(exc).splitlines() or [type(exc).__name__])[0]
    return LocationError(
        f"{name} is not a readable parquet file ({detail})",
        "replace it with a parquet file (CSV files must be named .csv), or move it out of the table",
    )


def parquet_schema(path: Path, name: str) -> pa.Schema:
    try:
        return pq.read_schema(path).remove_metadata()
    except (pa.ArrowException, OSError) as exc:
        raise _not_parquet(name, exc) from exc


def parquet_rows(path: Path, name: str) -> int:
    """The file's row count, from its footer (no column is read)."""
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise _not_parquet(name, exc) from exc


def partition_fields(partitions: list[tuple[tuple[str, str], ...]]) -> tuple[pa.Field, ...]:
    """The hive partition columns, typed from every file's folder names."""
    if not partitions or not partitions[0]:
        return ()
    keys = [k for k, _ in partitions[0]]
    fields = []
    for index, key in enumerate(keys):
        values = {p[index][1] for p in partitions}
        typed = all(_CANONICAL_INT.fullmatch(v) and -(2**63) <= int(v) < 2**63 for v in values)
        fields.append(pa.field(key, pa.int64() if typed else pa.string()))
    return tuple(fields)


def check_same_schema(schemas: list[tuple[str, pa.Schema]], partition: tuple[pa.Field, ...]) -> pa.Schema:
    """One schema for all files (names and types, in order), none of them clashing with a partition key."""
    first_name, first = schemas[0]
    for name, schema in schemas[1:]:
        if [(f.name, f.type) for f in schema] != [(f.name, f.type) for f in first]:
            raise LocationError(
                f"the table's files have different schemas: {first_name} has {_describe(first)}, "
                f"{name} has {_describe(schema)}",
                "make every file share one schema, or move the odd file out of the table",
            )
    clash = sorted(set(first.names) & {f.name for f in partition})
    if clash:
        raise LocationError(
            f"partition column(s) {clash} are also stored inside the files ({first_name})",
            "drop them from the files (hive keeps them in the folder names) or rename the folders",
        )
    return first


def unify_schemas(schemas: list[tuple[str, pa.Schema]], partition: tuple[pa.Field, ...]) -> pa.Schema:
    """The table's schema, by column name over every file; a name with two types is refused."""
    fields: dict[str, tuple[pa.Field, str]] = {}
    for name, schema in schemas:
        for field in schema:
            seen = fields.get(field.name)
            if seen is None:
                fields[field.name] = (field, name)
            elif seen[0].type != field.type and not _both_text(seen[0].type, field.type):
                raise LocationError(
                    f"column {field.name!r} is {seen[0].type} in {seen[1]} but {field.type} in {name}",
                    "write the column with one type in every file, or move the odd file out",
                )
    unified = pa.schema([f for f, _ in fields.values()])
    return check_same_schema([(schemas[0][0], unified)], partition)


def _both_text(a: pa.DataType, b: pa.DataType) -> bool:
    """string and large_string (pandas 3 writes the latter): one kind of value, read as the first file's type."""
    return all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in (a, b))


def project(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` with `schema`'s columns, by name: nulls where the table lacks one (a file with fewer columns)."""
    if table.schema.names == schema.names:
        return table
    columns = [
        table.column(f.name) if f.name in table.column_names else pa.nulls(table.num_rows, f.type) for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _describe(schema: pa.Schema) -> str:
    text = ", ".join(f"{f.name}:{f.type}" for f in schema)
    return "[" + (text if len(text) < 200 else text[:200] + "…") + "]"


def _with_partitions(table: pa.Table, part: Part, fields: tuple[pa.Field, ...]) -> pa.Table:
    values = dict(part.partitions)
    for f in fields:
        raw = values[f.name]
        value = int(raw) if pa.types.is_integer(f.type) else raw
        table = table.append_column(f, pa.array([value] * table.num_rows, type=f.type))
    return table


def materialise(
    parts: list[Part], schema: pa.Schema, fields: tuple[pa.Field, ...], csv_schema: CsvSchema | None, out: Path
) -> None:
    """Every part, in order, into one parquet file with the partition columns added (row group by row
    group for parquet parts, so memory stays bounded by one row group)."""
    target = pa.schema(list(schema) + list(fields))
    with pq.ParquetWriter(out, target) as writer:
        for part in parts:
            if part.raw is not None:
                writer.write_table(_with_partitions(part.read(csv_schema), part, fields))
                continue
            try:
                source = pq.ParquetFile(part.path)
                for index in range(source.num_row_groups):
                    group = project(source.read_row_group(index).replace_schema_metadata(None), schema)
                    writer.write_table(_with_partitions(group, part, fields).cast(target))
            except (pa.ArrowException, OSError) as exc:
                raise _not_parquet(part.name, exc) from exc


def read_healed(healed: Path) -> pa.Table:
    """The healed table: one parquet file, or every parquet file under a folder (sorted, same schema)."""
    healed = Path(healed)
    files = [healed] if healed.is_file() else sorted(p for p in healed.rglob("*.parquet") if p.is_file())
    if not files:
        raise LocationError(f"no healed parquet at {healed}", "pass the healed table's parquet file or folder")
    tables = [_read_parquet(p, str(p)).replace_schema_metadata(None) for p in files]
    check_same_schema([(str(p), t.schema) for p, t in zip(files, tables)], ())
    return pa.concat_tables(tables)


# ---------------------------------------------------------------------------------------- conforming


def _family(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t):
        return _family(t.value_type)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_timestamp(t):
        return f"timestamp:{t.tz}"
    if pa.types.is_date(t):
        return "timestamp:None"  # a date converts exactly to a naive timestamp at midnight
    return str(t)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Give `table` the types of `schema` where that changes no value (pandas turns int columns with nulls
    into floats, strings into large strings...). A column whose kind really changed (a heal's cast, a rename)
    keeps its new type, so the file is rewritten."""
    if table.schema.names != schema.names:
        return table
    columns = []
    for field, column in zip(schema, table.columns):
        columns.append(_conform_column(column, field.type))
    return pa.Table.from_arrays(columns, names=schema.names)


def _conform_column(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    if column.type == target:
        return column
    if column.null_count == len(column):  # no value to change: an all-null column takes any type
        return pa.chunked_array([pa.nulls(len(column), target)], type=target)
    if _family(column.type) != _family(target):
        return column
    try:
        cast = column.cast(target, safe=True)
        back = cast.cast(column.type, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return column
    return cast if back.equals(column) else column


# ----------------------------------------------------------------------------------------- rewriting


@dataclass(frozen=True)
class Rewrite:
    """Which files of the table a heal changes: new contents by name, and names to delete."""

    writes: dict[str, pa.Table]
    deletes: tuple[str, ...]


def _split_by_partition(table: pa.Table, fields: tuple[pa.Field, ...]) -> dict[tuple[tuple[str, str], ...], pa.Table]:
    """Rows grouped by their partition values (order kept within a group), partition columns dropped."""
    if not fields:
        return {(): table}
    keys = [f.name for f in fields]
    missing = [k for k in keys if k not in table.column_names]
    if missing:
        raise LocationError(
            f"the healed table lacks the partition column(s) {missing}",
            "keep the partition columns in the healed table",
        )
    combos = table.select(keys).group_by(keys, use_threads=False).aggregate([]).to_pylist()
    rest = table.drop_columns(keys)
    groups = {}
    for combo in combos:
        mask = None
        for key in keys:
            match = pc.equal(table.column(key), pa.scalar(combo[key], table.schema.field(key).type))
            mask = match if mask is None else pc.and_(mask, match)
        groups[tuple((k, _folder_value(k, combo[k])) for k in keys)] = rest.filter(mask)
    return groups


def _folder_value(key: str, value: object) -> str:
    if value is None:
        raise LocationError(
            f"the healed table has a null in partition column {key}",
            "a partition value cannot be null: fix the heal or the data",
        )
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def plan_rewrite(
    parts: list[Part], old: dict[str, pa.Table], healed: pa.Table, fields: tuple[pa.Field, ...], new_name
) -> Rewrite:
    """The files to write so the location holds `healed`: an unchanged file is not touched; a partition
    with the same row count is compared file by file (rows keep their order); a partition whose row count
    changed is written whole into its first file and its other files deleted; new partitions get new files
    named by `new_name(partition, table)`; partitions the heal emptied lose their files."""
    by_group: dict[tuple[tuple[str, str], ...], list[Part]] = {}
    for part in parts:
        by_group.setdefault(part.partitions, []).append(part)
    new_groups = _split_by_partition(healed, fields)
    writes: dict[str, pa.Table] = {}
    deletes: list[str] = []
    for key in sorted(set(by_group) | set(new_groups)):
        members, rows = by_group.get(key, []), new_groups.get(key)
        if rows is None:
            deletes.extend(p.name for p in members)
        elif not members:
            writes[new_name(key, rows)] = rows
        else:
            _plan_group(members, old, rows, writes, deletes)
    return Rewrite(writes, tuple(deletes))


def _plan_group(
    members: list[Part], old: dict[str, pa.Table], rows: pa.Table, writes: dict[str, pa.Table], deletes: list[str]
) -> None:
    olds = [old[p.name] for p in members]
    rows = conform(rows, olds[0].schema)
    if rows.num_rows != sum(t.num_rows for t in olds):
        writes[members[0].name] = rows
        deletes.extend(p.name for p in members[1:])
        return
    offset = 0
    for part, before in zip(members, olds):
        piece = _as_file(rows.slice(offset, before.num_rows), before.schema)
        offset += before.num_rows
        if not (piece.schema.equals(before.schema, check_metadata=False) and piece.equals(before)):
            writes[part.name] = piece


def _as_file(piece: pa.Table, schema: pa.Schema) -> pa.Table:
    """A file's rows of the whole table, without the columns only other files have (all null in its rows), in
    the file's types where no value changes: an untouched file of a table read by name compares equal."""
    extra = [n for n in piece.column_names if n not in schema.names]
    if not extra or any(piece.column(n).null_count != piece.num_rows for n in extra):
        return piece
    if not set(schema.names) <= set(piece.column_names):
        return piece.select([n for n in piece.column_names if n in schema.names])
    return conform(piece.select(schema.names), schema)


def write_part(table: pa.Table, target: Path, *, like: Path | None, csv: tuple[CsvSchema, FileDialect] | None) -> None:
    """Write one file of the table: CSV with the recorded format and dialect, or parquet with the
    compression (and schema metadata, if the schema is unchanged) of the file it replaces."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if csv is not None:
        target.write_bytes(render(table, *csv))
        return
    compression, metadata = "snappy", None
    if like is not None:
        compression, metadata = _parquet_style(like, table.schema)
    pq.write_table(table.replace_schema_metadata(metadata), target, compression=compression)


def _parquet_style(like: Path, schema: pa.Schema) -> tuple[str, dict | None]:
    source = pq.ParquetFile(like)
    compression = "snappy"
    meta = source.metadata
    if meta.num_row_groups and meta.num_columns:
        compression = meta.row_group(0).column(0).compression.lower()
        compression = "none" if compression == "uncompressed" else compression
    old = source.schema_arrow
    same = old.remove_metadata().equals(schema.remove_metadata())
    return compression, (old.metadata if same else None)
