"""What the table formats with versions (`tables.delta`, `tables.iceberg`) share: the pin of a version, a publish
recorded around its one commit, and the checks on either side of time travel. Each format says how to read its
version, commit and travel; this module says in what order, and what a refusal says."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Callable

import pyarrow as pa
import pyarrow.parquet as pq

from tables.batches import one_line
from tables.objectstore import LocationError, TableChanged, content_hash, sha256_file
from tables.results import BackupManifest, ManifestEntry, PinnedTable, Published, require_empty

__all__ = [
    "VersionFile",
    "pin_version",
    "write_pinned",
    "version_read",
    "publish_version",
    "version_name",
    "version_before",
    "unchanged_since",
    "check_recorded",
    "commit_lost",
    "commit_refused",
    "commit_raced",
    "travel_refused",
    "check_restored",
]


@dataclass(frozen=True)
class VersionFile:
    name: str  # as the version names it, relative to the table
    size: int
    open: Callable[[], BinaryIO]  # its bytes, from where the table keeps them


def write_pinned(
    out: Path, schema: pa.Schema, files: list[VersionFile], rows_of: Callable[[str, pa.Table], pa.Table]
) -> dict[str, str]:
    """The run's one parquet file, `out`, from a version's data files, in the order given: each file read ONCE, its
    bytes hashed as they come into memory and decoded from there, row group by row group, so the rows written are
    the bytes hashed and no copy of a file is kept (one file's bytes in memory at a time). `rows_of` puts a row
    group in the table's columns. Returns each file's sha256."""
    shas = {}
    with pq.ParquetWriter(out, schema) as writer:
        for file in files:
            with file.open() as stream:
                data = stream.read()
            shas[file.name] = hashlib.sha256(data).hexdigest()
            parquet = pq.ParquetFile(pa.BufferReader(data))
            for index in range(parquet.num_row_groups):
                writer.write_table(rows_of(file.name, parquet.read_row_group(index)))
    return shas


def pin_version(
    location: tuple[str, str],
    dest: Path,
    schema: pa.Schema,
    files: list[VersionFile],
    rows_of: Callable[[str, pa.Table], pa.Table],
    version: tuple[str, str],
) -> PinnedTable:
    """A version pinned as `dest/table.parquet` (read-only) and `dest/pin.json`: `location` is the spec's text and
    its base, `version` the manifest's token for it and its name for people ("delta version 3"). An error leaves
    no pin folder."""
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise LocationError(f"pin folder {dest} is not empty", "pin into a new, empty folder")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        table_path = dest / "table.parquet"
        shas = write_pinned(table_path, schema, files, rows_of)
        manifest = {f.name: ManifestEntry(f.size, version[0], shas[f.name]) for f in files}
        pinned = PinnedTable(
            location[0],
            location[1],
            dest,
            table_path,
            (),
            manifest,
            content_hash((n, m.sha256) for n, m in manifest.items()),
            sha256_file(table_path),
            (),
            snapshot=version[1],
        )
        (dest / "pin.json").write_text(json.dumps(pinned.to_json(), indent=2, sort_keys=True))
        os.chmod(table_path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        return pinned
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def version_read(
    backup_dir: Path, location: tuple[str, str], shape: str, version: int, files: list[tuple[str, int, str]]
) -> BackupManifest:
    """The record of the version a publish reads (`files`: each data file's name, size and sha256), before the
    commit: what restore travels back to. No bytes are kept."""
    token = f"{shape}-version={version}"
    return BackupManifest(
        Path(backup_dir),
        location[0],
        location[1],
        shape,
        content_hash((name, sha) for name, _, sha in files),
        "",
        {name: ManifestEntry(size, token, sha) for name, size, sha in files},
        (),
        (),
        versions=(version, None),
    )


def publish_version(
    backup: BackupManifest, expected_hash: str, what: str, commit: Callable[[], tuple[int, str, str]]
) -> Published:
    """Refuse unless the version read (`backup`: its hash, files and number, nothing after) holds `expected_hash`;
    record it in `backup.root/manifest.json` before the commit, then `commit()` (the version made, its content
    hash, its name) and record that. `what` names the version read in a refusal."""
    if backup.before_hash != expected_hash:
        raise TableChanged(
            f"{what} is {backup.before_hash}, not {expected_hash}: the table changed since it was pinned; nothing "
            "was published",
            "rerun the pipeline on the table as it is now",
        )
    require_empty(backup.root)
    backup.root.mkdir(parents=True, exist_ok=True)
    backup.save()  # the intent, before the commit: an interrupted publish can be restored to this version
    after, after_hash, name = commit()
    assert backup.versions is not None
    done = replace(backup, after_hash=after_hash, versions=(backup.versions[0], after))
    done.save()
    return Published(backup.before_hash, after_hash, done, name)


def version_name(shape: str, version: int) -> str:
    """A version as people read it, in the format's own word: "delta version 3", "iceberg snapshot 8151..."."""
    return f"{'iceberg snapshot' if shape == 'iceberg' else 'delta version'} {version}"


def version_before(backup: BackupManifest) -> int:
    """The version a publish replaced, as its record names it (a Delta version, an Iceberg snapshot id)."""
    if backup.versions is None:
        raise TableChanged(
            f"the backup at {backup.root} records no {backup.shape} version", "restore from another copy"
        )
    return backup.versions[0]


def unchanged_since(what: str, live_hash: str, backup: BackupManifest, *, check_live: bool) -> bool:
    """Before time travel back over a publish: True when the table already holds the rows before it (nothing to
    do); a refusal when it holds neither those nor the publish's and `check_live` asks for them."""
    if live_hash == backup.before_hash:
        return True
    if check_live and live_hash != backup.after_hash:
        raise TableChanged(
            f"{what} is {live_hash}: the table changed since the publish being undone; nothing was restored",
            "restore with check_live=False only if that change may be discarded",
        )
    return False


def check_recorded(what: str, shas: dict[str, str], backup: BackupManifest) -> None:
    """The version before a publish, read again (`shas`: its files' sha256), is the one recorded: the same files,
    the same bytes; else nothing may be restored from it."""
    if set(shas) != set(backup.files):
        raise TableChanged(
            f"{what} no longer names the files recorded; nothing was restored",
            "restore from another copy; the live table was not touched",
        )
    for name, sha in shas.items():
        if sha != backup.files[name].sha256:
            raise TableChanged(
                f"{name} of {what} does not have its recorded bytes; nothing was restored",
                "restore from another copy; the live table was not touched",
            )


def commit_lost(display: str, since: str) -> TableChanged:
    """A commit conditioned on the version read (`since`) lost to a writer's commit: nothing was written."""
    return TableChanged(
        f"a writer committed to {display} after {since}; nothing was written",
        "rerun the pipeline on the table as it is now",
    )


def commit_refused(display: str, exc: BaseException) -> LocationError:
    """The format refused the rows themselves (their columns or types): nothing was written."""
    return LocationError(f"{display} refused the commit ({one_line(exc)})", "check the rows' columns and types")


def commit_raced(display: str, after: str, before: str) -> TableChanged:
    """The version after a commit does not follow the one it was conditioned on: a writer committed with it."""
    return TableChanged(
        f"{display} is at {after} after a commit on {before}",
        "another writer committed at the same moment: rerun on the table as it is now",
    )


def travel_refused(display: str) -> TableChanged:
    """Time travel (a restore commit) lost to a writer's commit: nothing was restored."""
    return TableChanged(
        f"a writer committed to {display} during the restore; nothing was restored",
        "restore again under the pipeline's lock",
    )


def check_restored(display: str, restored: str, backup: BackupManifest) -> str:
    """After time travel: the table hashes to the rows before the publish, or a writer moved it meanwhile."""
    if restored != backup.before_hash:
        raise TableChanged(
            f"the restored {display} hashes to {restored}, not {backup.before_hash}",
            "a writer changed it during the restore: restore again under the pipeline's lock",
        )
    return restored
