"""The demo's feature tables in the format a team keeps them: one parquet file, a Delta Lake table, or an Iceberg
table in the workspace's own catalog.

The demo's producer writes and reads the table as a team's own jobs would, outside Kintsugi: a parquet file is
rewritten whole; a Delta or Iceberg table gains each batch as one append commit. Kintsugi reads each through its
one door (`controlplane.stages.pin`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from controlplane.spec import PipelineSpec
from controlplane.workspace import Workspace
from tables.iceberg import workspace_catalog

__all__ = ["FORMATS", "data_text", "platform_of", "write_table", "write_rows", "read_table", "append_rows"]

FORMATS = ("parquet", "delta", "iceberg")
_NAMESPACE = "delivery"


def data_text(name: str, table_format: str) -> str:
    """The spec's `data:` for a table named `name`: `data/name.parquet`, the folder `data/name`, or
    `iceberg:delivery.name`."""
    return {"parquet": f"data/{name}.parquet", "delta": f"data/{name}", "iceberg": f"iceberg:{_NAMESPACE}.{name}"}[
        table_format
    ]


def platform_of(table_format: str) -> str:
    """DataHub's platform for the table: `file` for a parquet file, else the format's own."""
    return {"parquet": "file", "delta": "delta-lake", "iceberg": "iceberg"}[table_format]


def write_table(ws: Workspace, data: str, frame: pd.DataFrame) -> None:
    """A new table at `data` (as `data_text` says it) holding `frame`."""
    write_rows(ws.root, data, pa.Table.from_pandas(frame, preserve_index=False), append=False)


def write_rows(base: Path, data: str, rows: pa.Table, *, append: bool) -> None:
    """`rows` written as a team's own job writes them into the table `data` names (relative to `base`, where an
    Iceberg table's catalog is too): a new parquet file, or one commit to a Delta or Iceberg table, which
    `append=False` creates (it must not exist) and `append=True` adds to (created by its first rows). The one
    writer of the demo's producer and of the benches' tables."""
    if data.startswith("iceberg:"):
        identifier = data.removeprefix("iceberg:")
        catalog = workspace_catalog(base)
        catalog.create_namespace_if_not_exists(identifier.rsplit(".", 1)[0])
        rows = _microseconds(rows)
        create = catalog.create_table_if_not_exists if append else catalog.create_table
        create(identifier, schema=rows.schema).append(rows)
        return
    path = base / data
    path.parent.mkdir(parents=True, exist_ok=True)
    if data.endswith(".parquet"):
        if append:
            raise ValueError(f"{data} is one parquet file: a producer rewrites it whole")
        pq.write_table(rows, path, row_group_size=100_000)
        return
    from deltalake import write_deltalake

    write_deltalake(str(path), rows, mode="append" if append else "error")


def read_table(ws: Workspace, spec: PipelineSpec) -> pd.DataFrame:
    """The table's rows as its producer sees them now, in the order Kintsugi's pin reads them (a Delta or Iceberg
    table: its files in the order they were committed; the demo's tables have no partition columns)."""
    data = spec.data_text
    if data.startswith("iceberg:"):
        table = workspace_catalog(ws.root).load_table(data.removeprefix("iceberg:"))
        entries = table.inspect.entries().to_pylist()
        order = sorted((e["sequence_number"], e["data_file"]["file_path"]) for e in entries if e["status"] != 2)
        schema = pa.schema([pa.field(f.name, f.type) for f in table.schema().as_arrow()])
        pieces = [pq.read_table(table.io.new_input(path).open()).select(schema.names).cast(schema) for _, path in order]
        return pa.concat_tables(pieces).to_pandas()
    path = ws.path(data)
    if not path.is_dir():
        return pd.read_parquet(path)
    from deltalake import DeltaTable

    delta = DeltaTable(str(path))
    schema = pa.schema(delta.schema().to_arrow())  # each file in the table's types (a writer's may differ)
    actions = pa.table(delta.get_add_actions(flatten=True))
    order = sorted(zip(actions.column("modification_time").to_pylist(), actions.column("path").to_pylist()))
    return pa.concat_tables([pq.read_table(path / name).cast(schema) for _, name in order]).to_pandas()


def append_rows(ws: Workspace, spec: PipelineSpec, table: pd.DataFrame, batch: pd.DataFrame) -> None:
    """The producer's load: a parquet file rewritten with the batch after its rows; a Delta or Iceberg table, one
    append commit."""
    data, batch = spec.data_text, batch.astype(table.dtypes.to_dict())
    if data.endswith(".parquet"):
        pd.concat([table, batch], ignore_index=True).to_parquet(ws.path(data), index=False, row_group_size=100_000)
        return
    write_rows(ws.root, data, pa.Table.from_pandas(batch, preserve_index=False), append=True)


def _microseconds(rows: pa.Table) -> pa.Table:
    """pandas' nanosecond times truncated to microseconds, Iceberg's precision (what pyiceberg's own
    `downcast-ns-timestamp-to-us-on-write` does for a team's writer)."""
    schema = pa.schema(
        [pa.field(f.name, pa.timestamp("us", f.type.tz)) if pa.types.is_timestamp(f.type) else f for f in rows.schema]
    )
    return rows.cast(schema, safe=False)
