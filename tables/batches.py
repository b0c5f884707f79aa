"""Rows that come to a table format's table (Delta, Iceberg): a batch file to land, the healed rows to publish,
each in the table's own column types where no value changes."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from tables.csvtable import infer_schema, read_raw, to_table
from tables.objectstore import LocationError
from tables.tablefiles import Part, conform

__all__ = ["batch_rows", "joined", "fitted", "one_line"]


def batch_rows(batch: Path, time_columns: tuple[str, ...]) -> pa.Table:
    """A batch file's rows (parquet, or CSV with `time_columns` read as ISO-8601 times); a file of neither kind, or
    one that does not read, is one LocationError."""
    name = batch.name.lower()
    if not batch.is_file() or not name.endswith((".parquet", ".parq", ".pq", ".csv")):
        raise LocationError(f"batch {batch} is not a .parquet or .csv file", "land a parquet or CSV file")
    if name.endswith(".csv"):
        raw = read_raw(batch, str(batch))
        return to_table(raw, infer_schema([raw], time_columns))
    return Part(str(batch), (), batch).read(None).replace_schema_metadata(None)


def joined(rows: pa.Table, schema: pa.Schema, name: str, table: str) -> pa.Table:
    """The batch in the table's types: the same columns conformed; other names kept (the table's schema takes them,
    and the guard judges a renamed column); a shared column whose type changed is refused (`table` names the kind)."""
    by_name = pa.schema([schema.field(n) if n in schema.names else rows.schema.field(n) for n in rows.column_names])
    conformed = conform(rows, by_name)
    changed = [
        f"{f.name}: {f.type} (the table's is {schema.field(f.name).type})"
        for f in conformed.schema
        if f.name in schema.names and f.type != schema.field(f.name).type
    ]
    if changed:
        raise LocationError(
            f"batch {name} cannot join the {table} ({'; '.join(changed)})", "give the batch the table's column types"
        )
    return conformed


def fitted(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """The healed rows in the table's types where no value changes (a heal's real cast is kept)."""
    return conform(rows.replace_schema_metadata(None), schema) if rows.schema.names == schema.names else rows


def one_line(exc: BaseException) -> str:
    """A library's error, on one short line, for a message of ours."""
    return " ".join(str(exc).split())[:300]
