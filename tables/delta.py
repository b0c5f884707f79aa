"""A Delta Lake table as a pipeline's `data:` (the `deltalake` package, delta-rs), on the local file system.

    data: data/features/            a folder holding `_delta_log/`: read as a Delta table, never as loose files
    data: delta:data/features/      the same, said outright: how to name a Delta table that a first `land` creates

A Delta table's data files are never rewritten (the protocol adds and removes whole files), and its log says
which files make each version. So:

  pin       the version read now and the files it names, as the run's ONE parquet file (`tables.versioned`):
            each file read once, its bytes hashed as they come into memory and decoded from there (no copy of a
            file is kept), in the order the files were added (the log's modification time, then the name:
            delta-rs names files by a random id), partition values from the log in the table's own types.
            `content_hash` is the folder's definition over the version's data files.
  publish   ONE commit (an overwrite with the healed rows), made only on the version whose files hash to the
            expected content, with no retry: a writer that committed after it makes delta-rs refuse the commit
            (`CommitFailedError`), and nothing is written. No copy of the old bytes is kept: the version before
            is recorded, and time travel brings it back.
  restore   `DeltaTable.restore(version before)`, a new commit, also without a retry; the restored version's
            files must hash to the content before the publish.
  append    ONE commit (`kintsugi land`), the batch's sha256 in the commit's metadata: the same batch landed
            twice is found in the history and not written again. A batch with other column names is merged
            into the schema (as a parquet folder shows them, the guard judges a renamed column); a column whose
            type changed is refused.

A version whose data files were vacuumed, or whose log entries were cleaned up, cannot be read or restored: that
is one clear error naming the table's retention settings, never a pass. Tables that need a reader feature this
module does not apply to the rows it reads (deletion vectors, column mapping) are refused.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tables.batches import batch_rows, fitted, joined, one_line
from tables.objectstore import LocalStore, LocationError, TableChanged, content_hash, sha256_file
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

__all__ = ["PREFIX", "DeltaLocation", "is_delta", "RETENTION"]

PREFIX = "delta:"
LOG = "_delta_log"
BATCH_KEY = "kintsugi.batch_sha256"
RETENTION = "delta.deletedFileRetentionDuration and delta.logRetentionDuration"
_READABLE_FEATURES = frozenset({"timestampNtz", "v2Checkpoint", "vacuumProtocolCheck"})


def is_delta(text: str, path: Path) -> bool:
    """Whether `data:` names a Delta table: said with `delta:`, or a folder that holds a Delta log."""
    return text.startswith(PREFIX) or os.path.isdir(path / LOG)  # unreadable: not a Delta table, and the scan says why


@dataclass(frozen=True)
class _DataFile:
    name: str  # relative to the table's folder, as the log names it
    size: int
    partitions: tuple[tuple[str, str | None], ...]  # (column, the log's value) for each partition column
    added_ms: int  # when it was written, as the log records it: the rows' order is the order they were added


@dataclass(frozen=True)
class _Snapshot:
    version: int
    files: tuple[_DataFile, ...]  # in the order they were added (the log's modification time), then by name
    schema: pa.Schema  # the table's columns in its own order, partition columns included
    partition_columns: tuple[str, ...]


@dataclass(frozen=True)
class DeltaLocation:
    text: str  # as written in the spec
    base: str  # the folder relative paths were taken from
    root: str  # the table's folder
    time_columns: tuple[str, ...] = ()  # a CSV batch's columns that must be ISO-8601 times

    @property
    def display(self) -> str:
        return f"the Delta table at {self.root}"

    # ----------------------------------------------------------------------------------- reading the log

    def _table(self, version: int | None = None) -> Any:
        from deltalake import DeltaTable
        from deltalake.exceptions import DeltaError, TableNotFoundError

        if not (Path(self.root) / LOG).is_dir():
            raise LocationError(f"no Delta table at {self.root}", "land a first batch there, or fix the data: path")
        try:
            table = DeltaTable(self.root, version=version)
        except TableNotFoundError as exc:
            raise LocationError(f"no Delta table at {self.root}", "land a first batch there") from exc
        except (DeltaError, OSError) as exc:
            what = f"version {version} of {self.display}" if version is not None else self.display
            raise TableChanged(
                f"{what} cannot be read ({one_line(exc)})",
                f"its log or files may have been cleaned up: check {RETENTION}",
            ) from exc
        features = set(table.protocol().reader_features or ()) - _READABLE_FEATURES
        if features or table.protocol().min_reader_version == 2:
            raise LocationError(
                f"{self.display} needs reader features Kintsugi does not apply "
                f"({sorted(features) or 'column mapping'})",
                "rewrite the table without deletion vectors or column mapping, or export it to parquet",
            )
        return table

    def _snapshot(self, table: Any) -> _Snapshot:
        actions = pa.table(table.get_add_actions(flatten=True))
        partition_columns = tuple(table.metadata().partition_columns)
        names = actions.column("path").to_pylist()
        sizes = actions.column("size_bytes").to_pylist()
        added = actions.column("modification_time").to_pylist()
        values = [actions.column(f"partition.{c}").cast(pa.string()).to_pylist() for c in partition_columns]
        files = sorted(
            (
                _DataFile(name, size, tuple(zip(partition_columns, [v[i] for v in values])), added[i])
                for i, (name, size) in enumerate(zip(names, sizes))
            ),
            key=lambda f: (f.added_ms, f.name),
        )
        return _Snapshot(table.version(), tuple(files), pa.schema(table.schema().to_arrow()), partition_columns)

    def _path(self, name: str) -> str:
        return os.path.join(self.root, *name.split("/"))

    def _open(self, name: str, version: int) -> Any:
        try:
            return LocalStore().open(self._path(name))
        except LocationError as exc:
            raise _vacuumed(self, version, exc) from exc

    def _hashes(self, snapshot: _Snapshot) -> dict[str, str]:
        try:
            return {f.name: LocalStore().sha256(self._path(f.name)) for f in snapshot.files}
        except LocationError as exc:
            raise _vacuumed(self, snapshot.version, exc) from exc

    def files(self) -> list[FileEntry]:
        snapshot = self._snapshot(self._table())
        return [
            FileEntry(f.name, self._path(f.name), f.size, f"delta-version={snapshot.version}") for f in snapshot.files
        ]

    def current_hash(self) -> str:
        """The content hash of the version the table is at now."""
        return content_hash(self._hashes(self._snapshot(self._table())).items())

    # ----------------------------------------------------------------------------------- pinning

    def pin(self, dest: Path) -> PinnedTable:
        """The version the table is at now, as the run's one parquet file `dest/table.parquet`: each of its files read
        once, hashed and decoded (`versioned.pin_version`; see the module's words)."""
        snapshot = self._snapshot(self._table())
        partitions = {f.name: f.partitions for f in snapshot.files}
        files = [
            VersionFile(f.name, f.size, functools.partial(self._open, f.name, snapshot.version)) for f in snapshot.files
        ]
        return pin_version(
            (self.text, self.base),
            dest,
            snapshot.schema,
            files,
            lambda name, rows: _in_columns(rows, partitions[name], snapshot),
            (f"delta-version={snapshot.version}", version_name("delta", snapshot.version)),
        )

    # ----------------------------------------------------------------------------------- publishing

    def publish(self, healed: Path, expected_hash: str, backup_dir: Path) -> Published:
        """The healed rows as ONE commit on the version that holds `expected_hash`, or nothing at all. The record
        of the version before is `backup_dir/manifest.json` (no bytes are copied: restore is time travel)."""
        table = self._table()
        before = self._snapshot(table)
        shas = self._hashes(before)
        files = [(f.name, f.size, shas[f.name]) for f in before.files]
        backup = version_read(backup_dir, (self.text, self.base), "delta", before.version, files)

        def commit() -> tuple[int, str, str]:
            after = self._commit_rows(table, fitted(read_healed(healed), before.schema), before, "overwrite")
            return after.version, content_hash(self._hashes(after).items()), version_name("delta", after.version)

        return publish_version(backup, expected_hash, f"version {before.version} of {self.display}", commit)

    def _commit_rows(self, table: Any, rows: pa.Table, before: _Snapshot, mode: str, **metadata: str) -> _Snapshot:
        from deltalake import CommitProperties, write_deltalake
        from deltalake.exceptions import CommitFailedError, DeltaError

        same_columns = rows.schema.names == before.schema.names
        options: dict[str, Any] = {
            "mode": mode,
            "partition_by": list(before.partition_columns) or None,
            "schema_mode": None if same_columns else ("merge" if mode == "append" else "overwrite"),
            "commit_properties": CommitProperties(max_commit_retries=0, custom_metadata=metadata or None),
        }
        try:
            write_deltalake(table, rows, **options)
        except CommitFailedError as exc:
            raise commit_lost(self.display, f"version {before.version}") from exc
        except DeltaError as exc:
            raise commit_refused(self.display, exc) from exc
        after = self._snapshot(self._table())
        if after.version != before.version + 1:
            raise commit_raced(self.display, f"version {after.version}", str(before.version))
        return after

    def restore(self, manifest: BackupManifest, *, check_live: bool = True) -> str:
        """Time travel to the version before the publish, as a new commit; returns its content hash."""
        from deltalake import CommitProperties
        from deltalake.exceptions import CommitFailedError, DeltaError

        before_version = version_before(manifest)
        self.verify(manifest)
        live = self._snapshot(self._table())
        live_hash = content_hash(self._hashes(live).items())
        if unchanged_since(f"version {live.version} of {self.display}", live_hash, manifest, check_live=check_live):
            return live_hash
        try:
            self._table().restore(before_version, commit_properties=CommitProperties(max_commit_retries=0))
        except CommitFailedError as exc:
            raise travel_refused(self.display) from exc
        except DeltaError as exc:
            raise _vacuumed(self, before_version, exc) from exc
        return check_restored(self.display, self.current_hash(), manifest)

    def verify(self, manifest: BackupManifest) -> None:
        """The version before the publish can still be read whole: its log and every file, with the bytes hashed."""
        old = self._snapshot(self._table(version_before(manifest)))
        check_recorded(f"version {old.version} of {self.display}", self._hashes(old), manifest)

    # ----------------------------------------------------------------------------------- appending

    def append(self, batch: Path) -> Appended:
        """The batch's rows as ONE commit (the table is created by its first batch)."""
        from deltalake import CommitProperties, write_deltalake

        sha = sha256_file(Path(batch))
        rows = batch_rows(Path(batch), self.time_columns)
        if not (Path(self.root) / LOG).is_dir():
            write_deltalake(
                self.root, rows, mode="error", commit_properties=CommitProperties(custom_metadata={BATCH_KEY: sha})
            )
            return Appended(("delta version 0",), rows.num_rows, (sha,), True)
        table = self._table()
        landed = [h for h in table.history() if h.get(BATCH_KEY) == sha]
        if landed:
            return Appended((version_name("delta", landed[0]["version"]),), rows.num_rows, (sha,), False)
        before = self._snapshot(table)
        after = self._commit_rows(
            table, joined(rows, before.schema, batch.name, "Delta table"), before, "append", **{BATCH_KEY: sha}
        )
        return Appended((version_name("delta", after.version),), rows.num_rows, (sha,), True)

    def batch_as_parquet(self, batch: Path, out: Path) -> Path:
        """A batch file in the table's column types, as `append` would take it, at `out`; nothing is written."""
        rows = batch_rows(Path(batch), self.time_columns)
        if (Path(self.root) / LOG).is_dir():
            rows = joined(rows, self._snapshot(self._table()).schema, batch.name, "Delta table")
        pq.write_table(rows, out)
        return out


# --------------------------------------------------------------------------------------------- helpers


def _vacuumed(location: DeltaLocation, version: int, exc: BaseException) -> TableChanged:
    return TableChanged(
        f"a file of version {version} of {location.display} is gone or unreadable ({one_line(exc)})",
        f"it was vacuumed or removed: keep versions a run may read or restore longer ({RETENTION})",
    )


def _in_columns(rows: pa.Table, partitions: tuple[tuple[str, str | None], ...], snapshot: _Snapshot) -> pa.Table:
    """A data file's rows in the table's columns: its partition values from the log, in their declared types."""
    rows = rows.replace_schema_metadata(None)
    for column, value in partitions:
        field = snapshot.schema.field(column)
        rows = rows.append_column(column, pa.array([value] * rows.num_rows, pa.string()).cast(field.type))
    return rows.select(snapshot.schema.names).cast(snapshot.schema)
