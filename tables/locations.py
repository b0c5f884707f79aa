"""Where a pipeline's table lives, and how to read, pin, publish, restore and append to it there.

A pipeline's `data:` is one of:

    data/table.parquet              one parquet file
    data/table/                     a folder of parquet files, read recursively (hive `key=value/` folders
                                    become columns)
    data/part-*.parquet             a glob (`*`, `?`, `[...]` within path components; no `**`)
    data/table.csv, data/csv/, data/*.csv        the same shapes with CSV files
    s3://bucket/key.parquet, s3://bucket/prefix/, s3://bucket/prefix/part-*.csv  the same on S3
    data/features/ holding _delta_log/, or delta:data/features   a Delta Lake table: `tables.delta`, not this module
    iceberg:namespace.table         an Apache Iceberg table: `tables.iceberg`, not this module

Relative paths are relative to the `base` folder given (the workspace root). Files and folders whose name
starts with `.` or `_` are not part of the table (`_SUCCESS`, `.crc`, our own temporary files), as in
pyarrow and Spark. Any other file in a table folder must be a `.parquet`/`.parq`/`.pq` or `.csv` file.

The one definition of a table's identity is `content_hash`: sha256 over the sorted (relative name, sha256
of the file's bytes) pairs of the table's files (for CSV, the CSV bytes). A pin, `current_hash()`, a
publish's before/after hashes and a restore all use it.

Atomicity of `publish` / `restore` / `append`, as a concurrent reader sees it:

  single local file    temp file + fsync + rename(2): a reader sees the old file or the new one, whole.
  local folder         the new version is built beside it (unchanged files hard-linked) and swapped in with
                       renameat2(RENAME_EXCHANGE): one atomic step. A reader that lists the folder after it
                       sees only the new version; a reader already holding open files keeps reading the old
                       ones; a reader whose recursive listing spans the instant of the swap can see sub-folders
                       of both versions. Without renameat2 (other OS / file system) the swap is two renames,
                       and for that instant the folder is missing.
  local glob           the matched files share their folder with other files, so no folder swap: a marker
                       `_kintsugi_publishing.json` is written, then each changed file is replaced atomically
                       (rename) in name order, removed files are deleted, and the marker is removed. A reader
                       sees each file whole, but may see a mix of old and new files while the marker is there;
                       `files()`/`pin()` refuse to read while it is there (so Kintsugi never pins a mix).
  S3 object            one PUT: readers see the old object or the new one (S3 is strongly consistent).
  S3 prefix / glob     as the local glob, with a marker object: S3 has no multi-object atomicity, so a foreign
                       reader listing during a publish can see some new and some old objects. Be honest about
                       this with teams that read the table elsewhere; Kintsugi's own readers refuse the mix.

Compare-and-swap: `publish` hashes the location (copying it into the backup) and refuses if the hash is not
the expected one; just before committing it re-lists the location and refuses if any file's version token
(local: mtime_ns + inode; S3: ETag) moved. Between that last check and the commit a writer can still slip in:
this is check-then-act, not a lock. Writers must hold the pipeline's lock for a true compare-and-swap (S3 via
pyarrow offers no conditional PUT).
"""

from __future__ import annotations

import ctypes
import errno
import fnmatch
import hashlib
import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import pyarrow as pa
import pyarrow.parquet as pq

from tables import delta, iceberg
from tables.batches import batch_rows
from tables.csvtable import (
    CsvSchema,
    FileDialect,
    RawCsv,
    default_dialect,
    infer_schema,
    read_raw,
    render,
    to_table,
)
from tables.objectstore import (
    LocalStore,
    LocationError,
    S3Store,
    TableChanged,
    content_hash,
    fsync_dir,
    sha256_file,
)
from tables.results import (
    Appended,
    BackupManifest,
    FileEntry,
    ManifestEntry,
    PinnedTable,
    Published,
    require_empty,
)
from tables.tablefiles import (
    Part,
    check_same_schema,
    conform,
    materialise,
    parquet_rows,
    parquet_schema,
    partition_fields,
    plan_rewrite,
    project,
    read_healed,
    unify_schemas,
    write_part,
)

__all__ = [
    "LocationError",
    "TableChanged",
    "FileEntry",
    "ManifestEntry",
    "TableLocation",
    "PinnedTable",
    "BackupManifest",
    "Published",
    "Appended",
    "parse_location",
    "batch_row_count",
    "restore",
    "verify_backup",
    "MARKER",
]

MARKER = "_kintsugi_publishing.json"
_PARQUET = (".parquet", ".parq", ".pq")
_CSV = (".csv",)
_GLOB_CHARS = set("*?[")


@dataclass(frozen=True)
class _Listing:
    shape: str  # file | folder | glob
    fmt: str  # parquet | csv
    entries: tuple[FileEntry, ...]

    def versions(self) -> list[tuple[str, str]]:
        return [(e.name, e.version) for e in self.entries]


def parse_location(
    text: str, base: Path, *, time_columns: tuple[str, ...] = ()
) -> TableLocation | delta.DeltaLocation | iceberg.IcebergLocation:
    """Validate a `data:` location's form; relative local paths are taken from `base`. A CSV table's
    `time_columns` must be ISO-8601 text in every file and batch (`tables.csvtable`). The only I/O: whether a
    local folder holds a Delta log (`tables.delta`)."""
    raw = (text or "").strip()
    if not raw:
        raise LocationError(
            "the pipeline's data: location is empty", "set data: to a parquet/CSV file, folder, glob or s3:// URL"
        )
    if raw.startswith(iceberg.PREFIX):
        return iceberg.IcebergLocation(raw, str(Path(base)), iceberg.parse_identifier(raw), tuple(time_columns))
    if raw.startswith(delta.PREFIX) or "://" not in raw:
        named = raw.removeprefix(delta.PREFIX)
        local = Path(os.path.normpath(Path(base) / os.path.expanduser(named)))
        if delta.is_delta(raw, local):
            if "://" in named or _GLOB_CHARS & set(named):
                raise LocationError(f"data: {raw} is not a local folder", "name a Delta table by its local folder")
            return delta.DeltaLocation(raw, str(Path(base)), str(local), tuple(time_columns))
    if "**" in raw:
        raise LocationError(f"data: {raw} uses **", "name the folder instead (folders are read recursively)")
    if raw.startswith("s3://"):
        return _parse_s3(raw, tuple(time_columns))
    if "://" in raw:
        raise LocationError(f"data: {raw} has an unsupported scheme", "use a local path or an s3://bucket/prefix URL")
    path = Path(os.path.expanduser(raw))
    path = Path(os.path.normpath(path if path.is_absolute() else Path(base) / path))
    root, pattern = _split_glob(path.parts)
    return TableLocation(raw, str(Path(base)), LocalStore(), str(Path(*root)), pattern, tuple(time_columns))


def _parse_s3(raw: str, time_columns: tuple[str, ...]) -> TableLocation:
    rest = raw[len("s3://") :].strip("/")
    bucket = rest.split("/", 1)[0]
    if not bucket or _GLOB_CHARS & set(bucket):
        raise LocationError(f"data: {raw} names no bucket", "write it as s3://bucket/prefix")
    parts = [p for p in rest.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise LocationError(f"data: {raw} contains . or ..", "write the S3 key without relative parts")
    root, pattern = _split_glob(tuple(parts))
    return TableLocation(raw, "", S3Store(), "/".join(root), pattern, time_columns)


def _split_glob(parts: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    for index, part in enumerate(parts):
        if _GLOB_CHARS & set(part):
            if index == 0 or (index == 1 and parts[0] == "/"):
                raise LocationError("a glob cannot start at the root", "put the glob after a fixed folder")
            return tuple(parts[:index]), "/".join(parts[index:])
    return tuple(parts), None


def _format_of(name: str) -> str | None:
    lower = name.lower()
    if lower.endswith(_PARQUET):
        return "parquet"
    return "csv" if lower.endswith(_CSV) else None


def _hidden(relative: str) -> bool:
    return any(p.startswith((".", "_")) for p in relative.split("/"))


def _partitions(relative: str) -> tuple[tuple[str, str], ...]:
    folders = relative.split("/")[:-1]
    return tuple(tuple(p.split("=", 1)) for p in folders if "=" in p and not p.startswith("="))  # type: ignore[misc]


def _matches(relative: str, pattern: str) -> bool:
    names, patterns = relative.split("/"), pattern.split("/")
    return len(names) == len(patterns) and all(fnmatch.fnmatchcase(n, p) for n, p in zip(names, patterns))


@dataclass(frozen=True)
class TableLocation:
    text: str  # as written in the spec
    base: str  # the folder relative paths were taken from
    store: LocalStore | S3Store = field(compare=False, repr=False)
    root: str  # the file, the folder, or the fixed folder before the glob
    pattern: str | None = None  # the glob below `root`, "/"-separated
    time_columns: tuple[str, ...] = ()  # a CSV table's columns that must be ISO-8601 times

    @property
    def display(self) -> str:
        return self.store.display(self.root) + (f"/{self.pattern}" if self.pattern else "")

    # ----------------------------------------------------------------------------------- listing

    def files(self) -> list[FileEntry]:
        """The table's files, sorted by name, with size, version token and hive partition values."""
        return list(self._scan().entries)

    def _scan(self, *, allow_empty: bool = False, shape: str | None = None, ignore_marker: bool = False) -> _Listing:
        kind = self.store.kind(self.root)
        named_like_a_file = allow_empty and shape is None and _format_of(self.root) is not None
        missing_file = kind == "missing" and (shape == "file" or named_like_a_file)
        if self.pattern is None and (kind == "file" or missing_file):
            return self._scan_file(kind)
        if kind == "missing" and not allow_empty:
            raise LocationError(f"no table at {self.display}", "fix the data: path, or land a first batch there")
        if kind not in ("dir", "missing"):
            raise LocationError(f"{self.display} is not a regular file or folder", "point data: at the table's files")
        found = self.store.walk(self.root) if kind == "dir" else []
        relative = [(self._relative(p), p) for p in found]
        if not ignore_marker and any(r == MARKER for r, _ in relative):
            raise LocationError(
                f"a publish into {self.display} is in progress or was interrupted",
                f"wait for it to finish, or restore/recover the run that left {MARKER} there",
            )
        chosen = [(r, p) for r, p in relative if not _hidden(r) and (self.pattern is None or _matches(r, self.pattern))]
        return self._listing("glob" if self.pattern else "folder", chosen, allow_empty)

    def _relative(self, path: str) -> str:
        return PurePosixPath(path.replace(os.sep, "/")).relative_to(self.root.replace(os.sep, "/")).as_posix()

    def _scan_file(self, kind: str) -> _Listing:
        fmt = _format_of(self.root)
        if fmt is None:
            raise LocationError(
                f"{self.display} is neither .parquet nor .csv",
                "name the file .parquet (or .parq/.pq) or .csv after its format",
            )
        if kind == "missing":
            return _Listing("file", fmt, ())
        info = self.store.stat(self.root)
        return _Listing("file", fmt, (FileEntry(PurePosixPath(self.root).name, self.root, info.size, info.version),))

    def _listing(self, shape: str, chosen: list[tuple[str, str]], allow_empty: bool) -> _Listing:
        odd = next((r for r, _ in chosen if _format_of(r) is None), None)
        if odd is not None:
            raise LocationError(
                f"{self.display} holds {odd}, which is neither .parquet nor .csv",
                "move other files out of the table folder (or name them starting with _ or .)",
            )
        formats = {f for r, _ in chosen if (f := _format_of(r)) is not None}
        if len(formats) > 1:
            raise LocationError(f"{self.display} mixes parquet and CSV files", "keep one format per table")
        if not chosen and not allow_empty:
            raise LocationError(
                f"no parquet or CSV files at {self.display}", "fix the data: path or glob, or land a first batch there"
            )
        entries = []
        for relative, path in chosen:
            info = self.store.stat(path)
            entries.append(FileEntry(relative, path, info.size, info.version, _partitions(relative)))
        keys = {tuple(k for k, _ in e.partitions) for e in entries}
        if len(keys) > 1:
            raise LocationError(
                f"{self.display} has inconsistent partition folders {sorted(keys)}",
                "give every file the same key=value folders, in the same order",
            )
        fmt = formats.pop() if formats else (_format_of(self.pattern or "") or "parquet")
        return _Listing(shape, fmt, tuple(entries))

    def _path_of(self, name: str, listing: _Listing) -> str:
        if listing.shape == "file":
            return self.root
        return f"{self.root}/{name}" if self.store.scheme == "s3" else os.path.join(self.root, *name.split("/"))

    # ----------------------------------------------------------------------------------- hashing

    def current_hash(self) -> str:
        """The content hash of what is at the location now (the pin's definition)."""
        listing = self._scan()
        return content_hash((e.name, self.store.sha256(e.path)) for e in listing.entries)

    # ----------------------------------------------------------------------------------- pinning

    def pin(self, dest: Path) -> PinnedTable:
        """Make the bytes the guard will read immutable for the run, under `dest` (a new or empty folder).

        Every file is COPIED into `dest/files/` (local files and S3 objects alike, never a hard link), and its
        sha256 is taken from the very bytes written into the copy, in the one read of the live file. The run
        folder is written by no producer, so every later read of the pin (the guard, the heal, training) reads
        the bytes that were hashed, whatever a writer does to the live table meanwhile: a writer that replaces
        files atomically (write then rename) and one that rewrites a file IN PLACE (open, truncate, write, as
        `DataFrame.to_parquet(path)` does) alike. A writer active during the copy is caught by the re-listing
        (a moved version token: "changed while it was being pinned"). The pinned files are read-only; the stages read
        them through `tables.readonce`, which hashes each block it decodes as it reads it, so a rewrite of the run
        folder itself cannot reach a decoder between a check and a read.

        The guard, the heal and training read ONE parquet file, `table_path`: for a single local or S3
        parquet file it is the pinned file itself; otherwise `dest/table.parquet`, every file's rows in name
        order, with hive partition columns materialised as columns (int64 when every folder value is a
        canonical integer, else string) after the file's own columns. CSV files are converted once, here,
        with the schema inferred over all rows of all files (`tables.csvtable`), recorded in pin.json.
        """
        dest = Path(dest)
        if dest.exists() and any(dest.iterdir()):
            raise LocationError(f"pin folder {dest} is not empty", "pin into a new, empty folder")
        try:
            return self._pin(dest)
        except BaseException:
            shutil.rmtree(dest, ignore_errors=True)
            raise

    def _pin(self, dest: Path) -> PinnedTable:
        listing = self._scan()
        files_dir = dest / "files"
        files_dir.mkdir(parents=True)
        manifest: dict[str, ManifestEntry] = {}
        for entry in listing.entries:
            target = files_dir / entry.name
            target.parent.mkdir(parents=True, exist_ok=True)
            sha = self.store.fetch(entry.path, target)  # a private copy, hashed as it is written
            manifest[entry.name] = ManifestEntry(target.stat().st_size, entry.version, sha)
        if self._scan().versions() != listing.versions():
            raise TableChanged(
                f"the table at {self.display} changed while it was being pinned", "retry when its writer has finished"
            )
        reading = _read_parts(listing, files_dir, self.time_columns)
        table_path = dest / "table.parquet"
        if listing.fmt == "parquet" and listing.shape == "file":
            table_path = files_dir / listing.entries[0].name
            table_sha256 = manifest[listing.entries[0].name].sha256  # hashed while it was copied
        else:
            materialise(reading.parts, reading.schema, reading.fields, reading.csv_schema, table_path)
            table_sha256 = sha256_file(table_path)  # written here, from the private copies
        pinned = PinnedTable(
            self.text,
            self.base,
            dest,
            table_path,
            tuple(files_dir / n for n in manifest),
            manifest,
            content_hash((n, m.sha256) for n, m in manifest.items()),
            table_sha256,
            tuple((f.name, str(f.type)) for f in reading.fields),
            reading.csv_schema,
            reading.dialects,
        )
        (dest / "pin.json").write_text(json.dumps(pinned.to_json(), indent=2, sort_keys=True))
        for written in (*pinned.files, table_path):  # read-only: the run's own bytes, never rewritten in place
            os.chmod(written, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        return pinned

    # ----------------------------------------------------------------------------------- publishing

    def publish(self, healed: Path, expected_hash: str, backup_dir: Path) -> Published:
        """Write the healed table (one parquet file with the whole table, partition columns included, or a
        folder of such files) back to this location, if and only if the location still holds
        `expected_hash`. Only files whose rows changed are rewritten (see `tablefiles.plan_rewrite`); the
        previous bytes of every file are kept under `backup_dir/files/` with `backup_dir/manifest.json`.
        A refusal or an error changes nothing at the location."""
        backup_dir = Path(backup_dir)
        require_empty(backup_dir)
        listing = self._scan()
        try:
            before = self._backup(listing, backup_dir / "files")
            before_hash = content_hash(before.items())
            if before_hash != expected_hash:
                raise TableChanged(
                    f"the table at {self.display} changed since it was pinned ({before_hash} is not "
                    f"{expected_hash}); nothing was published",
                    "rerun the pipeline on the table as it is now",
                )
            staged, deletes = self._stage(listing, healed, backup_dir)
        except BaseException:
            shutil.rmtree(backup_dir, ignore_errors=True)
            raise
        after = {n: s for n, s in before.items() if n not in deletes}
        after.update({n: sha256_file(p) for n, p in staged.items()})
        manifest = BackupManifest(
            backup_dir,
            self.text,
            self.base,
            listing.shape,
            before_hash,
            content_hash(after.items()),
            {e.name: ManifestEntry(e.size, e.version, before[e.name]) for e in listing.entries},
            tuple(sorted(staged)),
            tuple(sorted(deletes)),
        )
        manifest.save()  # the intent, before the first byte changes: an interrupted publish can be restored
        if staged or deletes:
            self._commit(listing, staged, deletes, backup_dir)
        shutil.rmtree(backup_dir / "staged", ignore_errors=True)
        return Published(before_hash, manifest.after_hash, manifest)

    def _backup(self, listing: _Listing, files_dir: Path) -> dict[str, str]:
        """Independent copies (never links: a backup must survive in-place writes to the live table)."""
        shas = {}
        for entry in listing.entries:
            target = files_dir / entry.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shas[entry.name] = self.store.fetch(entry.path, target)
        return shas

    def _stage(self, listing: _Listing, healed: Path, backup_dir: Path) -> tuple[dict[str, Path], tuple[str, ...]]:
        reading = _read_parts(listing, backup_dir / "files", self.time_columns)
        old = {p.name: p.read(reading.csv_schema).replace_schema_metadata(None) for p in reading.parts}
        table = read_healed(healed)
        plan = plan_rewrite(
            reading.parts, old, table, reading.fields, lambda key, rows: self._new_name(listing, key, rows)
        )
        staged = {}
        for name, rows in plan.writes.items():
            target = backup_dir / "staged" / name
            like = backup_dir / "files" / name if name in old else None
            dialect = reading.dialects.get(name, reading.first_dialect)
            csv = (reading.csv_schema, dialect) if reading.csv_schema else None
            write_part(rows, target, like=like if listing.fmt == "parquet" else None, csv=csv)
            staged[name] = target
        return staged, plan.deletes

    def _new_name(self, listing: _Listing, key: tuple[tuple[str, str], ...], rows: pa.Table) -> str:
        digest = hashlib.sha256()
        for batch in rows.to_batches():
            digest.update(batch.serialize().to_pybytes())
        ext = ".csv" if listing.fmt == "csv" else ".parquet"
        if listing.shape == "glob":  # the glob's * becomes the content hash: data/part-*.parquet -> part-<hash>.parquet
            return self._glob_name(digest.hexdigest()[:16], ext)
        return "/".join([f"{k}={v}" for k, v in key] + [f"part-{digest.hexdigest()[:16]}{ext}"])

    def _glob_name(self, stem: str, ext: str) -> str:
        assert self.pattern is not None
        *folders, last = self.pattern.split("/")
        if any(_GLOB_CHARS & set(f) for f in folders) or last.count("*") != 1 or {"?", "["} & set(last):
            raise LocationError(
                f"cannot name a new file for the glob {self.display}",
                "use a glob with one * in the file name only (e.g. data/part-*.parquet), or a folder",
            )
        name = last.replace("*", stem)
        if _format_of(name) is None:
            name += ext
        return "/".join(folders + [name])

    def _check_unchanged(self, listing: _Listing, *, ignore_marker: bool = False) -> None:
        now = self._scan(allow_empty=True, shape=listing.shape, ignore_marker=ignore_marker)
        if now.versions() != listing.versions():
            raise TableChanged(
                f"the table at {self.display} changed while writing to it; nothing was written",
                "rerun on the table as it is now",
            )

    def _commit(
        self,
        listing: _Listing,
        writes: dict[str, Path],
        deletes: tuple[str, ...] | list[str],
        work_dir: Path,
        *,
        resuming: bool = False,
    ) -> None:
        if listing.shape == "file":
            self._check_unchanged(listing)
            for _name, source in writes.items():
                self.store.put(self.root, source)
            return
        if listing.shape == "folder" and self.store.scheme == "file":
            _swap_folder(self, listing, writes, deletes)
            return
        self._check_unchanged(listing, ignore_marker=resuming)
        marker = work_dir / "marker.json"
        marker.write_text(json.dumps({"location": self.text, "backup": str(work_dir)}))
        marker_path = self._path_of(MARKER, _Listing("folder", listing.fmt, ()))
        self.store.put(marker_path, marker)
        for name in sorted(writes):
            self.store.put(self._path_of(name, listing), writes[name])
        for name in sorted(deletes):
            self.store.delete(self._path_of(name, listing))
        self.store.delete(marker_path)

    # ----------------------------------------------------------------------------------- appending

    def append(self, batch: Path) -> Appended:
        """Add a batch (a local parquet or CSV file) to the table, for `kintsugi land`.

        A folder, glob or S3 prefix gets a NEW file named by the batch's content hash (split into its hive
        partitions when the table has some); an existing name is never overwritten (landing the same batch
        twice is a no-op reported as `created=False`). A single file is rewritten atomically with the
        batch's rows appended (a CSV file keeps its bytes and gains lines). The batch's columns must be the
        table's columns, in order, with the same types (values that convert exactly are accepted, e.g.
        CSV integers into an int64 column); otherwise one error and nothing written."""
        listing = self._scan(allow_empty=True)
        with tempfile.TemporaryDirectory(prefix="kintsugi-land-") as work:
            work_dir = Path(work)
            if not listing.entries:
                return self._first_batch(listing, Path(batch), work_dir)
            reading = _read_parts(listing, self._local_copies(listing, work_dir / "files"), self.time_columns)
            rows = _batch_rows(Path(batch), reading, self.time_columns)
            if listing.shape == "file":
                return self._append_to_file(listing, reading, rows, work_dir)
            return self._append_files(listing, reading, rows, work_dir)

    def batch_as_parquet(self, batch: Path, out: Path) -> Path:
        """A batch file (parquet or CSV) as a parquet file of the table's column types, at `out`, as `append` would
        read it: what `kintsugi guard --data` checks. Nothing of the table is written."""
        listing = self._scan(allow_empty=True)
        with tempfile.TemporaryDirectory(prefix="kintsugi-batch-") as work:
            reading = (
                _read_parts(listing, self._local_copies(listing, Path(work) / "files"), self.time_columns)
                if listing.entries
                else _nothing_read()
            )
            rows = _batch_rows(Path(batch), reading, self.time_columns)
        pq.write_table(rows, out)
        return out

    def _first_batch(self, listing: _Listing, batch: Path, work_dir: Path) -> Appended:
        """Land into a missing or empty location: the batch's bytes as they are when the formats agree,
        else converted (a CSV batch into a .parquet location, or the reverse)."""
        rows = _batch_rows(batch, _nothing_read(), self.time_columns)
        wanted = listing.fmt if listing.shape == "file" or _format_of(self.pattern or "") else _format_of(batch.name)
        staged = batch
        if wanted != _format_of(batch.name):
            staged = work_dir / f"converted.{'csv' if wanted == 'csv' else 'parquet'}"
            write_part(rows, staged, like=None, csv=(CsvSchema(()), default_dialect()) if wanted == "csv" else None)
        if listing.shape == "file":
            name = PurePosixPath(self.root).name
            self._commit(listing, {name: staged}, (), work_dir)
            return Appended((name,), rows.num_rows, (sha256_file(staged),), True)
        name = self._new_name(_Listing(listing.shape, wanted or "parquet", ()), (), rows)
        created = self.store.put_new(self._path_of(name, listing), staged)
        return Appended((name,), rows.num_rows, (sha256_file(staged),), created)

    def _local_copies(self, listing: _Listing, files_dir: Path) -> Path:
        """Where the files can be read locally: in place on a local disk, else downloaded."""
        if self.store.scheme == "file":
            return Path(self.root).parent if listing.shape == "file" else Path(self.root)
        self._backup(listing, files_dir)
        return files_dir

    def _append_files(self, listing: _Listing, reading: _Reading, rows: pa.Table, work_dir: Path) -> Appended:
        """New content-named files; a batch spanning several partitions is landed under the in-progress
        marker (as a glob publish is), and an error removes the files this call created."""
        plan = plan_rewrite([], {}, rows, reading.fields, lambda key, part: self._new_name(listing, key, part))
        staged = {}
        for name, part in sorted(plan.writes.items()):
            staged[name] = work_dir / "staged" / name
            csv = (reading.csv_schema, reading.first_dialect) if reading.csv_schema else None
            write_part(part, staged[name], like=None, csv=csv)
        marker_path = self._path_of(MARKER, _Listing("folder", listing.fmt, ())) if len(staged) > 1 else None
        if marker_path:
            (work_dir / "marker.json").write_text(json.dumps({"location": self.text, "landing": sorted(staged)}))
            self.store.put(marker_path, work_dir / "marker.json")
        created: list[str] = []
        try:
            for name, source in staged.items():
                target = self._path_of(name, listing)
                if self.store.put_new(target, source):
                    created.append(target)
                elif self.store.sha256(target) != sha256_file(source):
                    raise LocationError(
                        f"{self.store.display(target)} exists with other bytes",
                        "remove it, or land the batch under another name",
                    )
        except BaseException:
            for target in created:
                self.store.delete(target)
            raise
        finally:
            if marker_path:
                self.store.delete(marker_path)
        return Appended(tuple(staged), rows.num_rows, tuple(sha256_file(p) for p in staged.values()), bool(created))

    def _append_to_file(self, listing: _Listing, reading: _Reading, rows: pa.Table, work_dir: Path) -> Appended:
        old = reading.parts[0]
        staged = work_dir / "appended" / old.name
        staged.parent.mkdir(parents=True)
        if reading.csv_schema is not None:
            dialect = reading.dialects[old.name]
            body = old.path.read_bytes()
            if body and not body.endswith(b"\n"):
                body += dialect.newline.encode()
            lines = render(rows, reading.csv_schema, FileDialect(**{**dialect.__dict__, "final_newline": True}))
            added = lines.split(dialect.newline.encode(), 1)[1] if rows.num_rows else b""
            if not dialect.final_newline and added:
                added = added[: -len(dialect.newline)]
            staged.write_bytes(body + added)
        else:
            _append_parquet(old.path, rows, staged)
        self._commit(listing, {old.name: staged}, (), work_dir)
        return Appended((old.name,), rows.num_rows, (sha256_file(staged),), True)


def _append_parquet(source: Path, rows: pa.Table, out: Path) -> None:
    """The file's row groups, then the batch's rows; a batch with other columns makes the file their union (by
    name, nulls where a row has no value), so the table shows the change to the guard."""
    original = pq.ParquetFile(source)
    schema = original.schema_arrow
    if rows.schema.names != schema.names:
        schema = unify_schemas([(source.name, schema.remove_metadata()), ("the batch", rows.schema)], ())
    with pq.ParquetWriter(out, schema) as writer:
        for index in range(original.num_row_groups):
            writer.write_table(project(original.read_row_group(index), schema).cast(schema))
        if rows.num_rows:
            writer.write_table(project(rows, schema).cast(schema))


# --------------------------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Reading:
    parts: list[Part]
    schema: pa.Schema
    fields: tuple[pa.Field, ...]
    csv_schema: CsvSchema | None
    dialects: dict[str, FileDialect]

    @property
    def first_dialect(self) -> FileDialect:
        return next(iter(self.dialects.values()), default_dialect())


def _nothing_read() -> _Reading:
    """The reading of a table with no file yet: a batch is taken in its own columns."""
    return _Reading([], pa.schema([]), (), None, {})


def _read_parts(listing: _Listing, files_dir: Path, time_columns: tuple[str, ...] = ()) -> _Reading:
    """The listed files, from their local copies under `files_dir`, checked to form one table."""
    fields = partition_fields([e.partitions for e in listing.entries])
    if listing.fmt == "csv":
        raws = [read_raw(files_dir / e.name, e.name) for e in listing.entries]
        csv_schema = infer_schema(raws, time_columns) if raws else CsvSchema(())
        parts = [Part(e.name, e.partitions, files_dir / e.name, raw) for e, raw in zip(listing.entries, raws)]
        dialects = {raw.name: _checked_dialect(raw, csv_schema, files_dir / raw.name) for raw in raws}
        schema = csv_schema.arrow_schema()
        check_same_schema([("csv", schema)], fields)
        return _Reading(parts, schema, fields, csv_schema, dialects)
    parts = [Part(e.name, e.partitions, files_dir / e.name) for e in listing.entries]
    if not parts:
        return _Reading(parts, pa.schema([]), fields, None, {})
    schema = unify_schemas([(p.name, parquet_schema(p.path, p.name)) for p in parts], fields)
    return _Reading(parts, schema, fields, None, {})


def _checked_dialect(raw: RawCsv, schema: CsvSchema, path: Path) -> FileDialect:
    rendered = render(to_table(raw, schema), schema, raw.dialect)
    return FileDialect(**{**raw.dialect.__dict__, "round_trips": rendered == path.read_bytes()})


def batch_row_count(batch: Path) -> int:
    """How many rows a batch file holds, read without the table (a parquet footer, or the CSV's lines after its
    header): what `kintsugi land` checks before it writes anything."""
    fmt = _format_of(batch.name)
    if fmt is None or not batch.is_file():
        raise LocationError(f"batch {batch} is not a .parquet or .csv file", "land a parquet or CSV file")
    if fmt == "csv":
        cells = read_raw(batch, str(batch)).cells
        return len(next(iter(cells.values()))) if cells else 0
    return parquet_rows(batch, str(batch))


def _batch_rows(batch: Path, reading: _Reading, time_columns: tuple[str, ...] = ()) -> pa.Table:
    """The batch's rows, its columns in the table's types where no value changes. A parquet table takes a batch
    whose columns differ (read by name, the table shows them: the guard judges a renamed column); a CSV table,
    a missing partition column or a column whose type changed is refused."""
    table = batch_rows(batch, time_columns)
    expected = pa.schema(list(reading.schema) + list(reading.fields))
    conformed = conform(table, expected)
    if not reading.parts or [(f.name, f.type) for f in conformed.schema] == [(f.name, f.type) for f in expected]:
        return conformed
    wanted, got = [f"{f.name}:{f.type}" for f in expected], [f"{f.name}:{f.type}" for f in table.schema]
    if reading.csv_schema is not None:
        raise LocationError(
            f"batch {batch.name} does not match the CSV table's header: expected {wanted}, got {got}",
            "a CSV table keeps one header in every file: fix the batch, or keep the table as parquet",
        )
    by_name = pa.schema(
        [expected.field(n) if n in expected.names else table.schema.field(n) for n in table.column_names]
    )
    conformed = conform(table, by_name)
    changed = [
        f"{f.name}: {f.type} (the table's is {expected.field(f.name).type})"
        for f in conformed.schema
        if f.name in expected.names and f.type != expected.field(f.name).type
    ]
    lacking = [f.name for f in reading.fields if f.name not in table.column_names]
    if changed or lacking:
        why = "; ".join(changed + [f"no partition column {n}" for n in lacking])
        raise LocationError(
            f"batch {batch.name} cannot join the table ({why}): expected {wanted}, got {got}",
            "give the batch the table's column types and partition columns",
        )
    return conformed


# --------------------------------------------------------------------------------------------- folder swap


def _swap_folder(location: TableLocation, listing: _Listing, writes: dict[str, Path], deletes) -> None:
    """Build the new version beside the folder (unchanged files hard-linked), then exchange the two."""
    root = Path(location.root)
    fresh = root.parent / f".{root.name}.kintsugi-new"
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir()
    try:
        if root.is_dir():
            os.chmod(fresh, stat.S_IMODE(root.stat().st_mode))
            _link_tree(root, fresh, set(writes) | set(deletes))
        for name, source in writes.items():
            target = fresh.joinpath(*name.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            with open(target, "rb+") as handle:
                os.fsync(handle.fileno())
        location._check_unchanged(listing)
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    old = _exchange(fresh, root)
    shutil.rmtree(old, ignore_errors=True)


def _link_tree(root: Path, fresh: Path, replaced: set[str]) -> None:
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        relative = Path(folder).relative_to(root)
        (fresh / relative).mkdir(parents=True, exist_ok=True)
        for name in sorted(names):
            if (relative / name).as_posix() in replaced:
                continue
            try:
                os.link(Path(folder) / name, fresh / relative / name)
            except OSError:
                shutil.copy2(Path(folder) / name, fresh / relative / name)


def _exchange(fresh: Path, root: Path) -> Path:
    """Swap `fresh` into `root`'s place; returns where the old version now is (to be removed)."""
    if not root.exists():
        os.rename(fresh, root)
        return fresh
    if _renameat2_exchange(str(fresh), str(root)):
        fsync_dir(str(root.parent))
        return fresh
    old = root.parent / f".{root.name}.kintsugi-old"
    shutil.rmtree(old, ignore_errors=True)
    os.rename(root, old)  # for this instant the folder is missing: documented above
    os.rename(fresh, root)
    fsync_dir(str(root.parent))
    return old


def _renameat2_exchange(first: str, second: str) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        call = libc.renameat2
    except (OSError, AttributeError):
        return False
    call.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if call(at_fdcwd, os.fsencode(first), at_fdcwd, os.fsencode(second), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), second)


def verify_backup(backup: BackupManifest | Path, *, base: Path | None = None) -> BackupManifest:
    """The backup's manifest, once every kept file has been re-hashed; TableChanged if any is missing or damaged."""
    manifest = backup if isinstance(backup, BackupManifest) else BackupManifest.load(Path(backup))
    if manifest.versions is not None:  # a table format's version before: time travel, no kept bytes
        _table_format_of(manifest, base).verify(manifest)
        return manifest
    for name, entry in manifest.files.items():
        path = manifest.root / "files" / name
        if not path.is_file() or sha256_file(path) != entry.sha256:
            raise TableChanged(
                f"the backup at {manifest.root} is damaged: {name} does not have its recorded bytes; "
                "nothing was restored",
                "restore from another copy; the live table was not touched",
            )
    return manifest


def restore(backup: BackupManifest | Path, *, check_live: bool = True, base: Path | None = None) -> str:
    """Put the exact previous bytes back; returns the restored content hash (the publish's before_hash).

    The backup's files are re-hashed BEFORE the live location is touched: a damaged or incomplete backup
    raises TableChanged and changes nothing. With `check_live` (the default) the location must still hold
    what the publish wrote (or already the old bytes: then nothing is done); pass False to roll back an
    interrupted publish, whose location holds a mix. `base` resolves a relative location (default: the one
    recorded, which is wrong for a workspace that was copied or moved since)."""
    manifest = verify_backup(backup, base=base)
    if manifest.versions is not None:
        return _table_format_of(manifest, base).restore(manifest, check_live=check_live)
    location = parse_location(manifest.location, base or Path(manifest.base))
    assert isinstance(location, TableLocation)
    listing = location._scan(allow_empty=True, shape=manifest.shape, ignore_marker=True)
    live = {e.name: location.store.sha256(e.path) for e in listing.entries}
    live_hash = content_hash(live.items())
    if live_hash == manifest.before_hash:
        return live_hash
    if check_live and live_hash != manifest.after_hash:
        raise TableChanged(
            f"the table at {location.display} changed since the publish being undone ({live_hash}); "
            "nothing was restored",
            "restore with check_live=False only if that change may be discarded",
        )
    writes = {n: manifest.root / "files" / n for n, e in manifest.files.items() if live.get(n) != e.sha256}
    deletes = [n for n in live if n not in manifest.files]
    location._commit(listing, writes, deletes, manifest.root, resuming=True)
    restored = location.current_hash()
    if restored != manifest.before_hash:
        raise TableChanged(
            f"the restored table at {location.display} hashes to {restored}, not {manifest.before_hash}",
            "a writer changed it during the restore: restore again under the pipeline's lock",
        )
    return restored


def _table_format_of(manifest: BackupManifest, base: Path | None) -> delta.DeltaLocation | iceberg.IcebergLocation:
    """The Delta or Iceberg table a publish's record names, which must still be one."""
    location = parse_location(manifest.location, base or Path(manifest.base))
    kinds = {"delta": delta.DeltaLocation, "iceberg": iceberg.IcebergLocation}
    if isinstance(location, TableLocation) or not isinstance(location, kinds.get(manifest.shape, ())):
        raise TableChanged(
            f"the backup at {manifest.root} records {manifest.shape} versions, but {manifest.location} is not such a "
            "table now",
            "restore from another copy; the live table was not touched",
        )
    return location
