"""What reading, pinning, publishing and landing a table give back: the pin, the record of a publish (the backup's
manifest), and the files of a location. Shared by every kind of location (`tables.locations`, `tables.delta`)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from tables.csvtable import CsvSchema, FileDialect
from tables.objectstore import LocationError, TableChanged, sha256_file

__all__ = [
    "FileEntry",
    "ManifestEntry",
    "PinnedTable",
    "BackupManifest",
    "Published",
    "Appended",
    "require_empty",
]


@dataclass(frozen=True)
class FileEntry:
    name: str  # relative to the location's root, "/"-separated; a single file: its base name
    path: str  # in its store: an absolute local path or "bucket/key"
    size: int
    version: str  # local "mtime_ns=..;ino=.."; S3 "etag=.."
    partitions: tuple[tuple[str, str], ...] = ()  # hive (key, folder value) pairs, outermost first


@dataclass(frozen=True)
class ManifestEntry:
    size: int
    version: str
    sha256: str


@dataclass(frozen=True)
class PinnedTable:
    location: str
    base: str
    root: Path  # the pin folder
    table_path: Path  # the ONE parquet file the guard, the heal and training read
    files: tuple[Path, ...]  # the pinned source files (private copies), in name order
    manifest: dict[str, ManifestEntry]  # source file name -> size, version token, sha256
    content_hash: str  # over the source files: the same definition as TableLocation.current_hash()
    table_sha256: str  # of table_path's bytes
    partition_columns: tuple[tuple[str, str], ...]  # (name, arrow type), appended after the file columns
    csv_schema: CsvSchema | None = None
    csv_dialects: dict[str, FileDialect] = field(default_factory=dict)
    snapshot: str | None = None  # the table format's own name of the version read ("delta version 3")

    def verify(self) -> None:
        """Re-hash every pinned file (and the table file); raise TableChanged if any byte moved."""
        checks = [(p, self.manifest[n].sha256, n) for p, n in zip(self.files, self.manifest)]
        checks.append((self.table_path, self.table_sha256, self.table_path.name))
        for path, expected, name in checks:
            try:
                actual = sha256_file(path)
            except OSError:
                actual = "missing"
            if actual != expected:
                raise TableChanged(
                    f"the table changed during the run: pinned {name} no longer has the bytes the guard read",
                    "rerun; and make the table's writers replace files atomically "
                    "(write then rename) instead of rewriting them in place",
                )

    def to_json(self) -> dict:
        return {
            "location": self.location,
            "base": self.base,
            "table_path": str(self.table_path),
            "content_hash": self.content_hash,
            "table_sha256": self.table_sha256,
            "manifest": {n: m.__dict__ for n, m in self.manifest.items()},
            "partition_columns": [list(p) for p in self.partition_columns],
            "csv_schema": self.csv_schema.to_json() if self.csv_schema else None,
            "csv_dialects": {n: d.__dict__ for n, d in self.csv_dialects.items()},
            "snapshot": self.snapshot,
        }


@dataclass(frozen=True)
class BackupManifest:
    root: Path  # the backup folder; the previous bytes are under root/files/<name>
    location: str
    base: str
    shape: str
    before_hash: str
    after_hash: str
    files: dict[str, ManifestEntry]  # the previous version: name -> size, version, sha256
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    versions: tuple[int, int | None] | None = None  # a Delta table's version before and after; no bytes are kept

    def save(self) -> None:
        data = {k: v for k, v in self.__dict__.items() if k not in ("root", "files")}
        data["files"] = {n: m.__dict__ for n, m in self.files.items()}
        data["written"], data["deleted"] = list(self.written), list(self.deleted)
        data["versions"] = list(self.versions) if self.versions else None
        temporary = self.root / "manifest.json.tmp"
        temporary.write_text(json.dumps(data, indent=2, sort_keys=True))
        os.replace(temporary, self.root / "manifest.json")

    @classmethod
    def load(cls, root: Path) -> BackupManifest:
        root = Path(root)
        folder = root.parent if root.name == "manifest.json" else root
        try:
            data = json.loads((folder / "manifest.json").read_text())
            files = {n: ManifestEntry(**m) for n, m in data.pop("files").items()}
            data.update(written=tuple(data["written"]), deleted=tuple(data["deleted"]))
            data["versions"] = tuple(data["versions"]) if data.get("versions") else None
            return cls(folder, files=files, **data)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TableChanged(
                f"the backup at {folder} has no readable manifest ({type(exc).__name__})",
                "restore from another copy; the live table was not touched",
            ) from exc


@dataclass(frozen=True)
class Published:
    before_hash: str
    after_hash: str
    backup: BackupManifest
    snapshot: str | None = None  # the table format's own name of the version published ("delta version 4")


@dataclass(frozen=True)
class Appended:
    names: tuple[str, ...]  # the files written (relative to the location), or the single file rewritten
    rows: int
    sha256: tuple[str, ...]
    created: bool  # False when the very same batch had already been landed


def require_empty(folder: Path) -> None:
    if folder.exists() and any(folder.iterdir()):
        raise LocationError(f"backup folder {folder} is not empty", "give each publish a new, empty backup folder")
