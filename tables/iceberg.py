"""An Apache Iceberg table as a pipeline's `data:` (the `pyiceberg` package).

    data: iceberg:NAMESPACE.TABLE   the table in the workspace's own catalog (a SQL catalog on sqlite,
                                    `iceberg/catalog.db`, its data under `iceberg/warehouse/`), or in the catalog
                                    pyiceberg's own configuration names `kintsugi` (a REST catalog, for example:
                                    PYICEBERG_CATALOG__KINTSUGI__URI=https://...)

An Iceberg snapshot names exactly the data files it holds, and the files are never rewritten. So:

  pin       the current snapshot as the run's ONE parquet file: each data file read once through the table's
            FileIO, its bytes hashed as they come into memory and decoded from there (no copy of a file is kept),
            in the order the files were committed (sequence number, then path), each column found by its Iceberg
            field id (a renamed column is read as it is named now). `content_hash` is the folder's definition
            over the snapshot's data files, named relative to the table's location.
  publish   ONE catalog commit (an overwrite with the healed rows: pyiceberg writes it as a delete snapshot and an
            append snapshot; a column the heal adds or widens is added to the schema in the same commit), made on
            the snapshot whose files hash to the expected content, with the catalog's requirement that the branch
            still points at it and NO retry: pyiceberg would otherwise retry on a fresh snapshot, and an overwrite
            retried over a writer's commit would undo that commit.
  restore   the branch set back to the snapshot before (`manage_snapshots().set_current_snapshot`), one catalog
            commit, conditioned the same way; no bytes are copied.
  append    ONE commit (`kintsugi land`) whose summary carries the batch's sha256: the same batch landed twice is
            found in the snapshots' summaries and not written again. The first batch creates the table.

A snapshot that was expired cannot be read or restored: one clear error naming `history.expire.*`. Tables whose
snapshot holds delete files (merge-on-read deletes) are refused: the rows a pin reads would not be the table's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tables.batches import batch_rows, fitted, joined, one_line
from tables.objectstore import LocationError, TableChanged, content_hash, sha256_file, sha256_stream
from tables.results import Appended, BackupManifest, FileEntry, PinnedTable, Published
from tables.tablefiles import read_healed
from tables.versioned import (
    VersionFile,
    check_recorded,
    check_restored,
    commit_lost,
    commit_raced,
    commit_refused,
    pin_version,
    publish_version,
    travel_refused,
    unchanged_since,
    version_before,
    version_name,
    version_read,
)

__all__ = ["PREFIX", "IcebergLocation", "CATALOG", "RETENTION", "workspace_catalog", "parse_identifier"]

PREFIX = "iceberg:"
CATALOG = "kintsugi"  # the catalog name pyiceberg's configuration may define; else the workspace's own
BATCH_PROPERTY = "kintsugi.batch-sha256"
RETENTION = "history.expire.max-snapshot-age-ms and history.expire.min-snapshots-to-keep"
_FIELD_ID = b"PARQUET:field_id"


@dataclass(frozen=True)
class _DataFile:
    name: str  # relative to the table's location
    uri: str  # as the snapshot names it
    size: int
    sequence: int  # the commit's sequence number: the rows' order is the order they were committed


@dataclass(frozen=True)
class _Snapshot:
    snapshot_id: int
    files: tuple[_DataFile, ...]
    schema: pa.Schema  # with each field's Iceberg id in its metadata


@dataclass(frozen=True)
class IcebergLocation:
    text: str  # as written in the spec
    base: str  # the workspace folder that holds the embedded catalog
    identifier: str  # NAMESPACE.TABLE
    time_columns: tuple[str, ...] = ()  # a CSV batch's columns that must be ISO-8601 times

    @property
    def display(self) -> str:
        return f"the Iceberg table {self.identifier}"

    # ----------------------------------------------------------------------------------- the catalog

    def _catalog(self) -> Any:
        return workspace_catalog(Path(self.base))

    def _table(self) -> Any:
        from pyiceberg.exceptions import NoSuchTableError

        try:
            return self._catalog().load_table(self.identifier)
        except NoSuchTableError as exc:
            raise LocationError(f"no Iceberg table {self.identifier}", "land a first batch, or fix data:") from exc

    def _snapshot(self, table: Any, snapshot_id: int | None = None) -> _Snapshot:
        snapshot = table.current_snapshot() if snapshot_id is None else table.snapshot_by_id(snapshot_id)
        if snapshot is None and snapshot_id is not None:
            raise TableChanged(
                f"snapshot {snapshot_id} of {self.display} is gone (expired)",
                f"keep snapshots a run may read or restore longer ({RETENTION})",
            )
        schema = table.schema().as_arrow()
        if snapshot is None:
            raise LocationError(f"{self.display} has no snapshot yet", "land a first batch there")
        entries = table.inspect.entries(snapshot_id=snapshot.snapshot_id).to_pylist()
        live = [e for e in entries if e["status"] != 2]  # 2: DELETED in this snapshot
        if any(e["data_file"]["content"] != 0 for e in live):
            raise LocationError(
                f"{self.display} holds delete files (merge-on-read) in snapshot {snapshot.snapshot_id}",
                "compact the table (rewrite its data files) so its rows are its data files",
            )
        prefix = table.location().rstrip("/") + "/"
        files = sorted(
            (
                _DataFile(
                    e["data_file"]["file_path"].removeprefix(prefix),
                    e["data_file"]["file_path"],
                    e["data_file"]["file_size_in_bytes"],
                    e["sequence_number"],
                )
                for e in live
            ),
            key=lambda f: (f.sequence, f.name),
        )
        return _Snapshot(snapshot.snapshot_id, tuple(files), schema)

    def _read(self, table: Any, entry: _DataFile, snapshot_id: int) -> Any:
        try:
            return table.io.new_input(entry.uri).open()
        except (OSError, ValueError) as exc:
            raise TableChanged(
                f"{entry.name} of snapshot {snapshot_id} of {self.display} is gone or unreadable ({one_line(exc)})",
                f"it was removed: keep snapshots a run may read or restore longer ({RETENTION})",
            ) from exc

    def _hashes(self, table: Any, snapshot: _Snapshot) -> dict[str, str]:
        shas = {}
        for entry in snapshot.files:
            with self._read(table, entry, snapshot.snapshot_id) as stream:
                shas[entry.name] = sha256_stream(stream)
        return shas

    def files(self) -> list[FileEntry]:
        table = self._table()
        snapshot = self._snapshot(table)
        version = f"iceberg-snapshot={snapshot.snapshot_id}"
        return [FileEntry(f.name, f.uri, f.size, version) for f in snapshot.files]

    def current_hash(self) -> str:
        table = self._table()
        return content_hash(self._hashes(table, self._snapshot(table)).items())

    # ----------------------------------------------------------------------------------- pinning

    def pin(self, dest: Path) -> PinnedTable:
        """The current snapshot, as the run's one parquet file `dest/table.parquet`: each of its data files read once,
        hashed and decoded (`versioned.pin_version`; see the module's words)."""
        table = self._table()
        snapshot = self._snapshot(table)
        files = [
            VersionFile(f.name, f.size, functools.partial(self._read, table, f, snapshot.snapshot_id))
            for f in snapshot.files
        ]
        return pin_version(
            (self.text, self.base),
            dest,
            _plain(snapshot.schema),
            files,
            lambda _, rows: _by_field_id(rows, snapshot),
            (f"iceberg-snapshot={snapshot.snapshot_id}", version_name("iceberg", snapshot.snapshot_id)),
        )

    # ----------------------------------------------------------------------------------- publishing

    def publish(self, healed: Path, expected_hash: str, backup_dir: Path) -> Published:
        """The healed rows as ONE commit on the snapshot that holds `expected_hash`, or nothing at all. The record of
        the snapshot before is `backup_dir/manifest.json` (no bytes are copied: restore moves the branch back)."""
        table = self._table()
        before = self._snapshot(table)
        shas = self._hashes(table, before)
        files = [(f.name, f.size, shas[f.name]) for f in before.files]
        backup = version_read(backup_dir, (self.text, self.base), "iceberg", before.snapshot_id, files)

        def commit() -> tuple[int, str, str]:
            rows = _iceberg_types(fitted(read_healed(healed), _plain(before.schema)))
            after = self._commit_rows(table, rows, before, overwrite=True)
            after_hash = content_hash(self._hashes(self._table(), after).items())
            return after.snapshot_id, after_hash, version_name("iceberg", after.snapshot_id)

        return publish_version(backup, expected_hash, f"snapshot {before.snapshot_id} of {self.display}", commit)

    def _commit_rows(
        self, table: Any, rows: pa.Table, before: _Snapshot | None, *, overwrite: bool, **summary: str
    ) -> _Snapshot:
        """One commit of `rows` on the snapshot `table` was loaded at, conditioned on it and never retried."""
        from pyiceberg.exceptions import CommitFailedException, ValidationError

        strict = _without_retries(table)
        try:
            transaction = strict.transaction()
            if _plain(strict.schema().as_arrow()) != rows.schema:
                with transaction.update_schema() as update:
                    update.union_by_name(rows.schema)
            if overwrite:
                transaction.overwrite(rows, snapshot_properties=summary)
            else:
                transaction.append(rows, snapshot_properties=summary)
            transaction.commit_transaction()
        except (CommitFailedException, ValidationError) as exc:
            raise commit_lost(self.display, f"snapshot {before.snapshot_id}" if before else "it was read") from exc
        except (ValueError, TypeError) as exc:
            raise commit_refused(self.display, exc) from exc
        fresh = self._table()
        after = self._snapshot(fresh)
        if before is not None and before.snapshot_id not in _ancestors(fresh, after.snapshot_id):
            raise commit_raced(
                self.display, f"snapshot {after.snapshot_id}", f"{before.snapshot_id}, not a child of it"
            )
        return after

    def restore(self, manifest: BackupManifest, *, check_live: bool = True) -> str:
        """The branch set back to the snapshot before the publish; returns its content hash."""
        from pyiceberg.exceptions import CommitFailedException

        before_id = version_before(manifest)
        self.verify(manifest)
        table = self._table()
        live = self._snapshot(table)
        live_hash = content_hash(self._hashes(table, live).items())
        what = f"snapshot {live.snapshot_id} of {self.display}"
        if unchanged_since(what, live_hash, manifest, check_live=check_live):
            return live_hash
        try:
            table.manage_snapshots().set_current_snapshot(snapshot_id=before_id).commit()
        except CommitFailedException as exc:
            raise travel_refused(self.display) from exc
        return check_restored(self.display, self.current_hash(), manifest)

    def verify(self, manifest: BackupManifest) -> None:
        """The snapshot before the publish can still be read whole: it exists, and every file has its bytes."""
        table = self._table()
        old = self._snapshot(table, version_before(manifest))
        check_recorded(f"snapshot {old.snapshot_id} of {self.display}", self._hashes(table, old), manifest)

    # ----------------------------------------------------------------------------------- appending

    def append(self, batch: Path) -> Appended:
        """The batch's rows as ONE commit (the table, and its namespace, are created by its first batch)."""
        from pyiceberg.exceptions import NoSuchTableError

        sha = sha256_file(Path(batch))
        rows = _iceberg_types(batch_rows(Path(batch), self.time_columns))
        catalog = self._catalog()
        try:
            table = catalog.load_table(self.identifier)
        except NoSuchTableError:
            catalog.create_namespace_if_not_exists(self.identifier.rsplit(".", 1)[0])
            table = catalog.create_table(self.identifier, schema=rows.schema)
        for snapshot in table.snapshots():
            if snapshot.summary is not None and snapshot.summary.get(BATCH_PROPERTY) == sha:
                return Appended((version_name("iceberg", snapshot.snapshot_id),), rows.num_rows, (sha,), False)
        before = self._snapshot(table) if table.current_snapshot() is not None else None
        if before is not None:
            rows = joined(rows, _plain(before.schema), batch.name, "Iceberg table")
        after = self._commit_rows(table, rows, before, overwrite=False, **{BATCH_PROPERTY: sha})
        return Appended((version_name("iceberg", after.snapshot_id),), rows.num_rows, (sha,), True)

    def batch_as_parquet(self, batch: Path, out: Path) -> Path:
        """A batch file in the table's column types, as `append` would take it, at `out`; nothing is written."""
        rows = _iceberg_types(batch_rows(Path(batch), self.time_columns))
        table = self._table()
        if table.current_snapshot() is not None:
            rows = joined(rows, _plain(self._snapshot(table).schema), batch.name, "Iceberg table")
        pq.write_table(rows, out)
        return out


# --------------------------------------------------------------------------------------------- helpers


def workspace_catalog(base: Path) -> Any:
    """The catalog `iceberg:` names from the workspace at `base`: the one pyiceberg's configuration calls `kintsugi`,
    else the workspace's own SQL catalog on sqlite (`iceberg/catalog.db`, data under `iceberg/warehouse/`)."""
    from pyiceberg.catalog import load_catalog
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.utils.config import Config

    # read now and passed on: load_catalog alone keeps the environment pyiceberg saw when it was imported
    configured = Config().get_catalog_config(CATALOG)
    if configured is not None:
        return load_catalog(CATALOG, **{key: value for key, value in configured.items() if isinstance(value, str)})
    folder = Path(base) / "iceberg"
    (folder / "warehouse").mkdir(parents=True, exist_ok=True)
    return SqlCatalog(
        CATALOG, uri=f"sqlite:///{folder / 'catalog.db'}", warehouse=(folder / "warehouse").resolve().as_uri()
    )


def parse_identifier(text: str) -> str:
    """NAMESPACE.TABLE from `iceberg:NAMESPACE.TABLE`; one clear error for anything else."""
    identifier = text.removeprefix(PREFIX).strip()
    parts = identifier.split(".")
    if len(parts) < 2 or not all(p and p.replace("_", "").replace("-", "").isalnum() for p in parts):
        raise LocationError(
            f"data: {text} does not name an Iceberg table", "write it as iceberg:NAMESPACE.TABLE (letters, digits, _)"
        )
    return identifier


def _ancestors(table: Any, snapshot_id: int) -> list[int]:
    """The snapshot's parents, newest first (an overwrite commits a delete snapshot and an append snapshot at once)."""
    found, parent = [], table.snapshot_by_id(snapshot_id).parent_snapshot_id
    while parent is not None:
        found.append(parent)
        snapshot = table.snapshot_by_id(parent)
        parent = snapshot.parent_snapshot_id if snapshot is not None else None
    return found


def _plain(schema: pa.Schema) -> pa.Schema:
    """The schema without Iceberg's field ids and nullability: the types a batch or the healed rows are held to."""
    return pa.schema([pa.field(f.name, f.type) for f in schema])


def _iceberg_types(rows: pa.Table) -> pa.Table:
    """Nanosecond times as microseconds (Iceberg's precision before format v3), where no value changes."""
    columns = []
    for field, column in zip(rows.schema, rows.columns):
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns":
            try:
                column = column.cast(pa.timestamp("us", field.type.tz), safe=True)
            except pa.ArrowInvalid as exc:
                raise LocationError(
                    f"column {field.name} holds times finer than a microsecond", "Iceberg keeps microseconds"
                ) from exc
        columns.append(column)
    return pa.Table.from_arrays(columns, names=rows.column_names)


def _without_retries(table: Any) -> Any:
    """The same table whose commits are not retried: the retry setting is read from the loaded metadata, and this
    copy of it is never written (a commit sends only its own updates)."""
    from pyiceberg.table import Table, TableProperties

    properties = {**table.metadata.properties, TableProperties.COMMIT_NUM_RETRIES: "0"}
    metadata = table.metadata.model_copy(update={"properties": properties})
    return Table(table.name(), metadata, table.metadata_location, table.io, table.catalog)


def _by_field_id(rows: pa.Table, snapshot: _Snapshot) -> pa.Table:
    """A data file's rows in the table's columns, each found by its Iceberg field id (null where the file predates
    the column)."""
    schema = _plain(snapshot.schema)
    by_id = {int(f.metadata[_FIELD_ID]): i for i, f in enumerate(rows.schema) if f.metadata and _FIELD_ID in f.metadata}
    columns = []
    for field in snapshot.schema:
        index = by_id.get(int(field.metadata[_FIELD_ID]))
        columns.append(pa.nulls(rows.num_rows, field.type) if index is None else rows.column(index))
    return pa.Table.from_arrays(columns, names=schema.names).cast(schema)
