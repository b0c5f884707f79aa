"""The table of a run: pinned, hash-checked at every use, published by compare-and-swap, restored exactly.

The control plane's one door to `tables.locations` (a parquet file, a folder of partitions, a glob, CSV
files, an s3:// prefix, a Delta table), where its errors become the project's. At detect the table is pinned into
the run folder as ONE parquet file every later stage reads — the guard, the heal, training — never the live
location.
The pin is a private copy, never a link: each file is read once from the live location and hashed from the very
bytes written into the copy (a Delta or Iceberg version: from the bytes decoded into the run's file, no copy kept), and no producer writes the run folder, so whatever a writer then does to the live
table (replace its files atomically, or rewrite them in place) the stages read the bytes that were hashed. A stage
reads a pinned file through `reading_pinned` (`tables.readonce`): every byte it decodes is hashed as it is read
and compared with the pin's, so a rewrite of the run folder itself, at any moment, ends the run BLOCKED ("the
table changed during the run") and is never decoded. A Spark session reads files by path, outside that door: its
reads are checked after they are made (`verify_file`).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from controlplane.errors import DataError, TableChanged
from controlplane.runs.facts import Pinned  # a value of the run record; this module makes and checks one
from controlplane.spec import PipelineSpec
from controlplane.workspace import Workspace
from tables import delta, iceberg, locations, readonce, versioned
from tables.objectstore import LocationError, file_hash
from tables.objectstore import TableChanged as LocationChanged

__all__ = [
    "Pinned",
    "pin_table",
    "pin_location",
    "append_batch",
    "batch_row_count",
    "verify_file",
    "reading_pinned",
    "live_hash",
    "publish_table",
    "restore_table",
    "check_backup",
    "file_hash",
    "locations_mapped",
    "location_mapped",
    "table_format",
    "version_replaced",
    "DELTA_PREFIX",
    "ICEBERG_PREFIX",
]

DELTA_PREFIX, ICEBERG_PREFIX = delta.PREFIX, iceberg.PREFIX  # `data:` naming a table format outright


@contextmanager
def locations_mapped(spec: PipelineSpec) -> Iterator[None]:
    """Where the file system's and object store's errors become the project's."""
    try:
        yield
    except LocationChanged as exc:
        raise TableChanged(exc.message, exc.fix) from exc
    except LocationError as exc:
        raise DataError(f"pipeline {spec.name!r}: {exc.message}", f"{exc.fix} (`data:` in {spec.source})") from exc


@contextmanager
def location_mapped(where: str) -> Iterator[None]:
    """As `locations_mapped`, for a location not in a spec yet (`kintsugi init --data`); `where` names the option.
    The file system's own refusals (no permission) become the same one line."""
    try:
        yield
    except LocationChanged as exc:
        raise TableChanged(exc.message, exc.fix) from exc
    except LocationError as exc:
        fix = exc.fix.replace("fix the data: path", "check the path (a relative one is taken from the current folder)")
        raise DataError(f"{where}: {exc.message}", fix.replace("data:", "the location")) from exc
    except PermissionError as exc:
        raise DataError(
            f"{where}: permission denied on {exc.filename or 'the table'}",
            "give this user read access to the table's files and folders",
        ) from exc


def pin_location(
    ws: Workspace, data_text: str, into: Path, where: str, *, time_columns: tuple[str, ...] = ()
) -> tuple[Pinned, dict[str, str]]:
    """Pin a location named outside any spec (onboarding); errors name `where` (e.g. `--data LOCATION`). Also
    returns how a CSV table's columns were read from text (name -> int, float, bool, date, datetime, string;
    empty for parquet); `time_columns` must be ISO-8601 text."""
    with location_mapped(where):
        pinned = locations.parse_location(data_text, ws.root, time_columns=time_columns).pin(into)
    kinds = {c.name: c.kind for c in pinned.csv_schema.columns} if pinned.csv_schema else {}
    return _pinned(ws, pinned, data_text), kinds


def table_format(ws: Workspace, data_text: str) -> str:
    """The table format `data:` names: `iceberg` (`iceberg:NAMESPACE.TABLE`), `delta` (`delta:` said outright, or a
    local folder holding a Delta log), or "" (files)."""
    try:
        location = locations.parse_location(data_text, ws.root)  # the one place a location's kind is decided
    except LocationError:
        return ""  # a malformed location: the pin names what is wrong with it
    if isinstance(location, iceberg.IcebergLocation):
        return "iceberg"
    return "delta" if isinstance(location, delta.DeltaLocation) else ""


def append_batch(ws: Workspace, spec: PipelineSpec, batch: Path) -> locations.Appended:
    """Append a batch file to the pipeline's table where it lives (`kintsugi land`)."""
    with locations_mapped(spec):
        try:
            return _location(ws, spec).append(batch)
        except PermissionError as exc:
            raise LocationError(
                f"permission denied on {exc.filename or 'the table'}",
                "give this user write access to the table's files and folders",
            ) from exc


def batch_as_parquet(ws: Workspace, spec: PipelineSpec, batch: Path, out: Path) -> Path:
    """A batch file (parquet or CSV) in the table's column types, as parquet at `out` (`kintsugi guard --data`);
    an unreadable or ill-fitting one is one line."""
    with locations_mapped(spec):
        try:
            return _location(ws, spec).batch_as_parquet(batch, out)
        except LocationError as exc:
            raise DataError(exc.message, exc.fix or "pass a readable parquet or CSV batch") from exc


def batch_row_count(batch: Path) -> int:
    """How many rows a batch file holds (`kintsugi land` refuses none); an unreadable one is one line."""
    try:
        return locations.batch_row_count(batch)
    except LocationError as exc:
        raise DataError(exc.message, "land a readable parquet or CSV file") from exc


def _location(
    ws: Workspace, spec: PipelineSpec
) -> locations.TableLocation | delta.DeltaLocation | iceberg.IcebergLocation:
    return locations.parse_location(spec.data_text, ws.root, time_columns=(spec.training.time_column,))


def pin_table(ws: Workspace, spec: PipelineSpec, into: Path) -> Pinned:
    with locations_mapped(spec):
        pinned = _location(ws, spec).pin(into)
    return _pinned(ws, pinned, spec.data_text)


def _pinned(ws: Workspace, pinned: locations.PinnedTable, data_text: str) -> Pinned:
    table_hash = "sha256:" + pinned.table_sha256
    return Pinned(ws.rel(pinned.table_path), table_hash, pinned.content_hash, data_text, pinned.snapshot or "")


def verify_file(ws: Workspace, table: str, expected: str, stage: str) -> None:
    """The bytes a stage is about to read are still the ones the guard passed; otherwise the run must end."""
    path = ws.path(table)
    if not path.is_file() or file_hash(path) != expected:
        raise _changed(table, stage, f"no longer hashes to {expected}")


@contextmanager
def reading_pinned(ws: Workspace, table: str, expected: str, stage: str, *, by_path: bool = False) -> Iterator[Path]:
    """The path of a file of the run (workspace-relative `table`, which must hash to `expected`), for a stage to read
    through `tables.readonce` while the block is open: each byte decoded is checked as it is read, and bytes that
    are not the ones hashed end the run (`TableChanged`), even where a reader swallowed the error. `by_path`: a
    reader outside the door (a Spark session) read it too; its bytes are checked again once it is done."""
    path = ws.path(table)
    try:
        with readonce.verified(path, readonce.digests_of(path, expected)):
            yield path
    except readonce.ReadChanged as exc:
        raise _changed(table, stage, exc.how) from exc
    if by_path:
        verify_file(ws, table, expected, stage)


def _changed(table: str, stage: str, how: str) -> TableChanged:
    return TableChanged(
        f"the table changed during the run (before {stage}): {table} {how}", "start a new run on the current data"
    )


def live_hash(ws: Workspace, spec: PipelineSpec) -> str:
    """The content hash of what the table's location holds now."""
    with locations_mapped(spec):
        return _location(ws, spec).current_hash()


def publish_table(
    ws: Workspace, spec: PipelineSpec, healed: Path, expected_hash: str, backup: Path
) -> locations.Published:
    """Write the healed table back to the same kind of location, if it still holds `expected_hash`; the previous
    bytes are kept under `backup` (a Delta or Iceberg table: the version before is recorded there, no bytes). Returns the before and
    after content hashes, and the version published where the table's format names one."""
    with locations_mapped(spec):
        return _location(ws, spec).publish(healed, expected_hash, backup)


def restore_table(ws: Workspace, spec: PipelineSpec, backup: Path, *, check_live: bool = True) -> str:
    """Put a publish's previous bytes back (the backup is checked before the location is touched)."""
    with locations_mapped(spec):
        return locations.restore(backup, check_live=check_live, base=ws.root)


def version_replaced(backup: Path) -> str:
    """The table format's own name of the version a publish replaced ("delta version 3"), as its backup records it;
    "" for files, or a backup that cannot be read (`check_backup` says why)."""
    try:
        manifest = locations.BackupManifest.load(backup)
    except LocationChanged:
        return ""
    if manifest.versions is None:
        return ""
    return versioned.version_name(manifest.shape, manifest.versions[0])


def check_backup(ws: Workspace, spec: PipelineSpec, backup: Path) -> None:
    """The kept bytes of a publish are whole (every file re-hashed), before anything relies on them."""
    with locations_mapped(spec):
        locations.verify_backup(backup, base=ws.root)
