"""Pin the table for a run: the bytes the guard passes are the bytes that are healed, trained on and recorded.

At detect the table's files are pinned into the run folder (a hard link when the file system allows: a writer
that replaces the table atomically leaves the link on the old bytes; one that writes in place changes them,
and the content hash, checked again before every use, catches it). Every later stage reads the pinned files,
never the live location; publishing compares the live table with the pinned hash first (compare-and-swap).
"""
from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from controlplane.errors import DataError, TableChanged
from controlplane.workspace import Workspace

__all__ = ["Pinned", "pin_table", "verify_pinned", "file_hash", "live_hash", "require_table"]


@dataclass(frozen=True)
class Pinned:
    """A run's immutable view of a table: its files (workspace-relative) and one content hash over them."""

    files: tuple[str, ...]
    content_hash: str
    location: str  # the table's location, as the spec names it

    def paths(self, ws: Workspace) -> list[Path]:
        return [ws.path(f) for f in self.files]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Pinned:
        return cls(tuple(data["files"]), data["content_hash"], data["location"])


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256:" + digest.hexdigest()


def require_table(path: Path, pipeline: str, spec_source: Path) -> None:
    if not path.is_file():
        raise DataError(f"data file {path} of pipeline {pipeline!r} does not exist",
                        f"check `data:` in {spec_source}, or land a batch with `kintsugi land`")


def live_hash(path: Path) -> str:
    try:
        return file_hash(path)
    except OSError as exc:
        raise DataError(f"cannot read the table {path} ({exc.strerror or exc})",
                        "check that the data location exists and is readable") from exc


def pin_table(ws: Workspace, source: Path, location: str, into: Path) -> Pinned:
    """Hard-link (or copy) the table's file into `into` and hash it."""
    into.mkdir(parents=True, exist_ok=True)
    pinned = into / source.name
    if pinned.exists():
        pinned.unlink()
    try:
        os.link(source, pinned)
    except OSError:
        try:
            shutil.copyfile(source, pinned)
        except OSError as exc:
            raise DataError(f"cannot read the table {source} ({exc.strerror or exc})",
                            "check that the data location exists and is readable") from exc
    return Pinned((ws.rel(pinned),), live_hash(pinned), location)


def verify_pinned(ws: Workspace, pinned: Pinned, stage: str) -> None:
    """The pinned bytes are still the ones the guard passed; otherwise the run must end."""
    paths = pinned.paths(ws)
    if not all(p.is_file() for p in paths) or _combined(paths) != pinned.content_hash:
        raise TableChanged(f"the table changed during the run (before {stage}): the pinned snapshot no longer "
                           f"hashes to {pinned.content_hash}", "start a new run on the current data")


def _combined(paths: list[Path]) -> str:
    if len(paths) == 1:
        return file_hash(paths[0])
    digest = hashlib.sha256("".join(f"{p.name}={file_hash(p)}\n" for p in sorted(paths)).encode())
    return "sha256:" + digest.hexdigest()
