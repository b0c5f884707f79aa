"""The key index beside the reference: every key the kept batches' rows hold, hashed, so that duplicates across
batches are counted from the new batch's keys alone (`profiles.repeats.count_repeats_indexed`), whatever the
history's length.

Kept under `references/<pipeline>/keys/`: the index (`profiles.engines.keys.KeyIndex`: sorted distinct hashes and
their filter, .npy files with their hash format) and `index.json`, which says what it covers (`Covered`: the time
column, the watermark, and each kept batch it holds by id and the digest of its kept JSON), by which key columns
and hash format, in which file. It is derived from the table, never a record: no ledger names it.

- A batch kept with the hashes its guard read (`extend`, from `save_batch`) joins it, when the index covered the
  reference as it stood just before.
- The guard uses it only when it covers exactly the reference as kept (`current_index`): batches kept without
  their hashes (an accepted block) are caught up from the table's rows after the index's watermark; an index that
  is missing, unreadable, of another hash format or key, or that holds batches the reference no longer keeps, is
  built again from the table's key columns. Never a pass on a stale index: a table that cannot be read is an error.
- A batch that leaves the reference (an undo, a rollback, an acceptance withdrawn) or a reference established
  again drops it (`drop`): the next guard builds it from the key columns of the rows still kept.

The guard trusts the index for "the rest of the table" only when the history's fingerprints say the kept rows are
the ones that passed and no row lies outside every batch (`controlplane.stages.guarding`); otherwise it reads the
rest's keys from the table, as without an index.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from controlplane.workspace import Workspace
from profiles.engines.keys import KeyHashes, KeyIndex
from profiles.hashing import HASH_FORMAT, HashFormatError
from profiles.profile import TimeWindow
from profiles.records import Record, RecordError
from profiles.repeats import hash_keys

__all__ = ["Covered", "current_index", "extend", "drop", "index_folder"]

_MANIFEST = "index.json"


@dataclass(frozen=True)
class Covered(Record):
    """The kept batches an index covers: the rows of each, all at or before the watermark."""

    time_column: str
    watermark_ms: int | None
    batches: tuple[tuple[str, str], ...]  # (batch id, sha256 of its kept JSON), oldest first


@dataclass(frozen=True)
class _Manifest(Record):
    columns: tuple[str, ...]
    hash_format: int
    covered: Covered
    file: str  # the index's .npy, in the folder
    keys: int  # how many distinct hashes it holds


def index_folder(ws: Workspace, pipeline: str) -> Path:
    return ws.references / pipeline / "keys"


def current_index(
    ws: Workspace, pipeline: str, table: Path, columns: tuple[str, ...], covered: Covered, *, save: bool
) -> KeyIndex:
    """The index of the keys of the kept batches' rows in `table`, covering exactly `covered`: the one kept,
    caught up, or built again from the table's key columns (and kept when `save`). A table that cannot be read
    raises SnapshotError."""
    found = _load(ws, pipeline, columns)
    if found is not None and found[0].covered == covered:
        return found[1]
    if found is not None and _behind(found[0].covered, covered):
        before = found[0].covered
        since = TimeWindow(covered.time_column, before.watermark_ms, covered.watermark_ms)
        index = found[1].add(hash_keys(str(table), columns, since)[0])
    else:
        after = TimeWindow(covered.time_column, covered.watermark_ms, None)
        index = KeyIndex.empty(columns).add(hash_keys(str(table), columns, after, outside=True)[0])
    if save:
        _save(ws, pipeline, index, covered)
    return index


def extend(
    ws: Workspace, pipeline: str, before: Covered, batch: tuple[str, str], after_ms: int | None, keys: KeyHashes
) -> None:
    """A kept batch's keys (every complete key of its rows, as its guard hashed them) join the index, when the
    index covered the reference as it stood before the batch joined it (`before`: batch ids and watermark; the
    digests are the index's own). Otherwise the index is left as it is, for the next guard to catch up."""
    found = _load(ws, pipeline, keys.columns)
    if found is None:
        return
    manifest, index = found
    had = manifest.covered
    if (had.time_column, had.watermark_ms, [b for b, _ in had.batches]) != (
        before.time_column,
        before.watermark_ms,
        [b for b, _ in before.batches],
    ):
        return
    _save(ws, pipeline, index.add(keys), Covered(had.time_column, after_ms, (*had.batches, batch)))


def drop(ws: Workspace, pipeline: str) -> None:
    """No index any more: the next guard builds it from the rows the reference keeps."""
    shutil.rmtree(index_folder(ws, pipeline), ignore_errors=True)


def _behind(had: Covered, wanted: Covered) -> bool:
    """The index covers the first of the kept batches, and later ones were kept without their keys."""
    return (
        had.time_column == wanted.time_column
        and had.watermark_ms is not None
        and len(had.batches) < len(wanted.batches)
        and wanted.batches[: len(had.batches)] == had.batches
    )


def _load(ws: Workspace, pipeline: str, columns: tuple[str, ...]) -> tuple[_Manifest, KeyIndex] | None:
    """The kept index of these key columns and this hash format, whole; None when there is none that is."""
    folder = index_folder(ws, pipeline)
    try:
        manifest = _Manifest.from_dict(json.loads((folder / _MANIFEST).read_text()))
        if manifest.columns != tuple(columns) or manifest.hash_format != HASH_FORMAT:
            return None
        index = KeyIndex.load(folder / manifest.file, columns)
    except (OSError, EOFError, ValueError, KeyError, TypeError, RecordError, HashFormatError):
        return None
    if index.size != manifest.keys:
        return None
    return manifest, index


def _save(ws: Workspace, pipeline: str, index: KeyIndex, covered: Covered) -> None:
    """The index in new files, then the manifest naming them swapped in atomically, then the files it replaced
    removed: a crash leaves the old index or the new one, whole. An index that cannot be written is built again
    by a later guard."""
    folder = index_folder(ws, pipeline)
    stem = f"index-{uuid.uuid4().hex}"
    temporary: str | None = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        index.save(folder / f"{stem}.npy")
        manifest = _Manifest(index.columns, HASH_FORMAT, covered, f"{stem}.npy", index.size)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".index-", suffix=".json")
        with os.fdopen(handle, "w") as out:
            json.dump(manifest.to_dict(), out, sort_keys=True)
        os.replace(temporary, folder / _MANIFEST)
        temporary = None
    except OSError:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        return
    for stale in folder.glob("index-*"):
        if not stale.name.startswith(stem):
            stale.unlink(missing_ok=True)
