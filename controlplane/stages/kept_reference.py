"""The reference a pipeline's new batches are compared with, kept in the workspace.

A table grows by batches. Each batch the guard passed is kept as its profile — mergeable sketches, never the
rows — under `references/<pipeline>/batches/`, with `state.json` naming them in order and the watermark (the
latest time a passed batch covered). The reference is built from the last `REFERENCE_BATCHES` of them (plus,
when the history has it, the same season a year earlier), so natural variation is inside it and guarding a
batch never rescans old ones. Its merged profile is summarised in DataHub as the dataset's datasetProfile. The
merged reference is cached under the digest of the batches it was merged from (`reference_cache_path`): merged once
where the batches change (a batch kept, the reference established), read by every guard after.

Passed batches are also how history is checked: the rows of every kept batch are fingerprinted at every run
(one aggregate pass, `profiles.fingerprints`) and compared with what was kept when they passed; a batch
whose rows changed since (a producer that rewrote the whole table in other units) is profiled again and
guarded against its own kept profile, so the change is named exactly, with the rows it concerns. What each row
group adds to those fingerprints is cached by its footer (`fingerprint_cache_path`, under the workspace's cache),
so a run reads only the row groups that are new or changed. Beside the batches, the key index of their rows
(`controlplane.stages.key_history`) is extended when a batch is kept and dropped when one leaves.

One guard holds each kept batch's outline (`KeptBatches`, handed to the readers here: its window, rows, and per column
the counts and bounds a fingerprint reads), never every whole profile at once: the reference is merged from the
batches read one at a time (`profiles.reference.reference_of`), and a batch whose rows changed is read whole again.
`kintsugi init` cuts the table into batches one at a time too (`profiles.batches.iter_batches`), each stored as
soon as it is profiled.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pyarrow as pa

from controlplane.datahub.datasets import profile_mcps
from controlplane.datahub.port import MetadataPort
from controlplane.documents.odcs import read_contract
from controlplane.errors import DataError, WorkspaceError
from controlplane.spec import PipelineSpec
from controlplane.stages import key_history
from controlplane.stages.key_history import Covered
from controlplane.stages.pin import pin_table
from controlplane.workspace import Workspace
from profiles.batches import iter_batches
from profiles.engines.keys import KeyHashes
from profiles.fingerprints import Fingerprint, FingerprintCache, fingerprint_of_profile, fingerprint_windows
from profiles.hashing import HashFormatError
from profiles.outline import outline, outline_from_json
from profiles.profile import BatchProfile, TimeWindow
from profiles.reference import REFERENCE_FORMAT, Reference, reference_of
from profiles.snapshot import Snapshot, SnapshotError, read_snapshot
from remediations.aside import KeptAside, SetAside

__all__ = [
    "ReferenceState",
    "KeptBatches",
    "REFERENCE_BATCHES",
    "fingerprint_cache_path",
    "load_state",
    "load_reference",
    "save_batch",
    "kept_asides",
    "save_aside",
    "set_aside_rules",
    "establish",
    "new_rows_window",
    "kept_batches",
    "kept_windows",
    "windows_of",
    "changed_batches",
    "History",
    "reference_ids",
    "reference_cache_path",
    "state_path",
    "with_window_closed",
    "forget_after",
    "Established",
    "establish_reference",
]

REFERENCE_BATCHES = 12
_YEAR_MS = 365 * 24 * 3600 * 1000
_SEASON_MS = 31 * 24 * 3600 * 1000


@dataclass(frozen=True)
class ReferenceState:
    time_column: str
    cadence: str
    batches: tuple[str, ...]  # every passed batch's id, oldest first
    watermark_ms: int | None  # the latest time a passed batch covered: a new batch is what comes after it


def _folder(ws: Workspace, pipeline: str) -> Path:
    return ws.references / pipeline


def state_path(ws: Workspace, pipeline: str) -> Path:
    return _folder(ws, pipeline) / "state.json"


def _batch_path(ws: Workspace, pipeline: str, batch_id: str) -> Path:
    return _folder(ws, pipeline) / "batches" / _batch_path_name(batch_id)


def _aside_path(ws: Workspace, pipeline: str, batch_id: str) -> Path:
    return _folder(ws, pipeline) / "aside" / _batch_path_name(batch_id)


def kept_asides(ws: Workspace, pipeline: str, state: ReferenceState) -> dict[str, KeptAside]:
    """What the runs that kept the reference's batches set aside, by batch (only batches it still keeps)."""
    found = {}
    for batch_id in state.batches:
        path = _aside_path(ws, pipeline, batch_id)
        if not path.is_file():
            continue
        try:
            found[batch_id] = KeptAside.from_dict(json.loads(path.read_text()))
        except (ValueError, KeyError, TypeError) as exc:
            raise WorkspaceError(
                f"what was set aside with batch {batch_id} ({ws.rel(path)}) is unreadable ({exc})",
                "restore it from a backup, or establish the reference again with `kintsugi init --force`",
            ) from exc
    return found


def save_aside(ws: Workspace, pipeline: str, batch_id: str, aside: KeptAside | None) -> None:
    """Keep what was set aside among a kept batch's rows (None: nothing; any earlier record of it is removed)."""
    path = _aside_path(ws, pipeline, batch_id)
    if aside is None:
        path.unlink(missing_ok=True)
    else:
        _write(path, json.dumps(aside.to_dict(), sort_keys=True))


def set_aside_rules(ws: Workspace, pipeline: str) -> tuple[SetAside, ...]:
    """Every rule of rows set aside that the kept reference holds: what every training leaves out."""
    state = load_state(ws, pipeline)
    if state is None:
        return ()
    return tuple(rule for aside in kept_asides(ws, pipeline, state).values() for rule in aside.rules)


def _batch_path_name(batch_id: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in batch_id)
    return f"{safe}.json"


def load_state(ws: Workspace, pipeline: str) -> ReferenceState | None:
    path = state_path(ws, pipeline)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return ReferenceState(data["time_column"], data["cadence"], tuple(data["batches"]), data["watermark_ms"])
    except (ValueError, KeyError, TypeError) as exc:
        raise WorkspaceError(
            f"the reference state {ws.rel(path)} is unreadable ({exc})",
            "restore it from a backup, or establish the reference again with `kintsugi init --force`",
        ) from exc


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _save_state(ws: Workspace, pipeline: str, state: ReferenceState) -> None:
    _write(state_path(ws, pipeline), json.dumps(asdict(state), indent=2, sort_keys=True))


def fingerprint_cache_path(ws: Workspace, pipeline: str) -> Path:
    """Where the row groups' fingerprints of the pipeline's table are cached between runs (a cache, not a record)."""
    return ws.cache / "fingerprints" / f"{pipeline}.json"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class KeptBatches:
    """The kept batches of a pipeline as one guard reads them: each batch's outline (`BatchProfile.outline`) and the
    digest of its JSON, kept from its first reading; a whole profile is read again when asked for and not kept. A
    cache for one guard (made by it, handed to the readers below), not state: a batch kept or forgotten after it was
    made is not seen by it."""

    def __init__(self, ws: Workspace, pipeline: str) -> None:
        self.ws, self.pipeline = ws, pipeline
        self._read: dict[str, tuple[BatchProfile, str]] = {}

    def batch(self, batch_id: str) -> BatchProfile:
        """The batch's outline (`profiles.outline`): its identity, window, rows and per column the counts and bounds."""
        if batch_id not in self._read:
            self._read[batch_id] = _read_batch(self.ws, self.pipeline, batch_id, outline_from_json)
        return self._read[batch_id][0]

    def whole(self, batch_id: str) -> BatchProfile:
        """The batch as it was kept, sketches and all, read from its JSON (not kept here)."""
        batch, digest = _read_batch(self.ws, self.pipeline, batch_id)
        if batch_id not in self._read:
            self._read[batch_id] = (outline(batch), digest)
        elif self._read[batch_id][1] != digest:
            raise WorkspaceError(
                f"the reference batch {self.ws.rel(_batch_path(self.ws, self.pipeline, batch_id))} changed while a "
                "guard read it",
                "run again; only one writer may change the workspace at a time (its lock)",
            )
        return batch

    def digest(self, batch_id: str) -> str:
        """The digest of the batch's JSON as this guard first read it."""
        self.batch(batch_id)
        return self._read[batch_id][1]

    def covered(self, state: ReferenceState) -> Covered:
        """The kept batches as a key index must cover them (`controlplane.stages.key_history`)."""
        for batch_id in state.batches:
            self.batch(batch_id)
        return Covered(state.time_column, state.watermark_ms, tuple((b, self.digest(b)) for b in state.batches))


def _read_batch(
    ws: Workspace, pipeline: str, batch_id: str, parse: Callable[[str], BatchProfile] = BatchProfile.from_json
) -> tuple[BatchProfile, str]:
    """A kept batch (whole, or as `parse` reads it) and the digest of its JSON."""
    path = _batch_path(ws, pipeline, batch_id)
    try:
        text = path.read_text()
        return parse(text), _digest(text)
    except HashFormatError as exc:
        raise WorkspaceError(
            f"the reference batch {ws.rel(path)}: {exc.message}",
            "run the kintsugi version that wrote it, or establish the reference again with `kintsugi init --force`",
        ) from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WorkspaceError(
            f"the reference batch {ws.rel(path)} is missing or unreadable ({exc})",
            "restore the workspace's references/ folder, or establish the reference again with `kintsugi init --force`",
        ) from exc


def reference_ids(state: ReferenceState, kept: KeptBatches) -> list[str]:
    """The last REFERENCE_BATCHES passed batches, and the same season a year before the newest when kept."""
    recent = list(state.batches[-REFERENCE_BATCHES:])
    newest = max((e for e in (kept.batch(b).end_ms for b in recent) if e is not None), default=None)
    if newest is None:
        return recent
    older = [(b, kept.batch(b).end_ms) for b in state.batches[:-REFERENCE_BATCHES]]
    return [b for b, end in older if end is not None and abs(newest - _YEAR_MS - end) <= _SEASON_MS] + recent


def load_reference(
    ws: Workspace, pipeline: str, kept: KeptBatches | None = None, *, keep_cache: bool = False
) -> Reference | None:
    """The reference of the kept batches (`reference_ids`): from the cache when it was merged from exactly these
    batches (their ids and the digests of their JSON), else merged from each read whole one at a time, and cached
    when `keep_cache` (a writer's: under the pipeline's lock)."""
    state = load_state(ws, pipeline)
    if state is None or not state.batches:
        return None
    batches = kept if kept is not None else KeptBatches(ws, pipeline)
    ids = reference_ids(state, batches)
    key = _digest(json.dumps([REFERENCE_FORMAT, *([b, batches.digest(b)] for b in ids)]))
    cached = _cached_reference(ws, pipeline, key)
    if cached is not None:
        return cached
    reference = reference_of(lambda: (batches.whole(b) for b in ids))
    if keep_cache:
        _cache_reference(ws, pipeline, key, reference)
    return reference


def reference_cache_path(ws: Workspace, pipeline: str, key: str) -> Path:
    """Where the reference merged from the kept batches `key` names is cached (a cache, not a record: its name is
    the digest of the batches it was merged from, so a batch kept, forgotten or changed is a miss, never a stale
    reference)."""
    return ws.cache / "references" / pipeline / f"{key}.json"


def _cached_reference(ws: Workspace, pipeline: str, key: str) -> Reference | None:
    """The cached reference of `key`, or None when there is none or it cannot be read (then it is merged again)."""
    try:
        return Reference.from_json(reference_cache_path(ws, pipeline, key).read_text())
    except (OSError, ValueError, KeyError, TypeError, HashFormatError):
        return None


def _cache_reference(ws: Workspace, pipeline: str, key: str, reference: Reference) -> None:
    """Cache the reference under `key`, in place of any other (the batches move on: one is read again at most)."""
    path = reference_cache_path(ws, pipeline, key)
    try:
        _write(path, reference.to_json())
        for other in path.parent.glob("*.json"):
            if other != path:
                other.unlink(missing_ok=True)
    except OSError:
        pass  # a cache that cannot be written costs a merge next time


def new_rows_window(state: ReferenceState) -> TimeWindow:
    """The rows a run guards as its new batch: those after the watermark."""
    return TimeWindow(state.time_column, state.watermark_ms, None)


def with_window_closed(batch: BatchProfile) -> BatchProfile:
    """A batch's window bounded at the latest time it holds: rows appended later (after the watermark, even in
    the same calendar period) are the next batch's, and the kept rows can be found again exactly."""
    window = batch.window
    if window is None or batch.end_ms is None:
        return batch
    through = batch.end_ms if window.through_ms is None else min(window.through_ms, batch.end_ms)
    return replace(batch, window=replace(window, through_ms=through))


def save_batch(
    ws: Workspace,
    pipeline: str,
    batch: BatchProfile,
    state: ReferenceState,
    *,
    keys: KeyHashes | None = None,
    aside: KeptAside | None = None,
) -> ReferenceState:
    """Keep a passed batch and move the watermark past it (idempotent for a batch already kept). `keys`: every
    complete key of the batch's rows, hashed as its guard read them, for the key index beside the reference
    (`key_history.extend`; without them the next guard catches the index up from the table). `aside`: what the run
    that passed it set aside (kept beside it; none: any an earlier keeping of the same batch left is removed)."""
    batch = with_window_closed(batch)
    text = batch.to_json()
    save_aside(ws, pipeline, batch.batch_id, aside)
    _write(_batch_path(ws, pipeline, batch.batch_id), text)
    new = _kept(state, batch)
    _save_state(ws, pipeline, new)
    if keys is not None and new.batches != state.batches:
        before = Covered(state.time_column, state.watermark_ms, tuple((b, "") for b in state.batches))
        key_history.extend(ws, pipeline, before, (batch.batch_id, _digest(text)), new.watermark_ms, keys)
    load_reference(ws, pipeline, keep_cache=True)  # merged once here, where it changes: the next guard reads it
    return new


def batch_text(ws: Workspace, pipeline: str, batch_id: str) -> str:
    """A kept batch's JSON as it stands (what a rewrite of it keeps, to put back)."""
    _read_batch(ws, pipeline, batch_id)  # readable, or one line naming the fix
    return _batch_path(ws, pipeline, batch_id).read_text()


def replace_batch(ws: Workspace, pipeline: str, batch_id: str, text: str) -> None:
    """A kept batch's JSON replaced by `text` (the same batch, profiled again; or its earlier JSON put back): the
    key index, which covers the batches' JSON by digest, is dropped and caught up by the next guard; the merged
    reference is taken again."""
    if BatchProfile.from_json(text).batch_id != batch_id:
        raise ValueError(f"the profile given for batch {batch_id} is another batch's")
    key_history.drop(ws, pipeline)  # first: an index never covers a batch's JSON that is no longer kept
    _write(_batch_path(ws, pipeline, batch_id), text)
    load_reference(ws, pipeline, keep_cache=True)


def _kept(state: ReferenceState, batch: BatchProfile) -> ReferenceState:
    """The state with the batch kept and the watermark moved past it."""
    ids = state.batches if batch.batch_id in state.batches else (*state.batches, batch.batch_id)
    marks = [m for m in (state.watermark_ms, batch.end_ms) if m is not None]
    return replace(state, batches=ids, watermark_ms=max(marks) if marks else None)


def establish(ws: Workspace, spec: PipelineSpec, table: Path, *, cadence: str = "auto") -> Reference:
    """Cut the table into batches by its time column and keep them all as the reference (a new pipeline)."""
    _cut(ws, spec, table, cadence)
    reference = load_reference(ws, spec.name, keep_cache=True)
    assert reference is not None
    return reference


def _cut(ws: Workspace, spec: PipelineSpec, table: Path, cadence: str) -> ReferenceState:
    """The table cut into batches, each stored as soon as it is profiled, in a folder of their own until the last
    one is: then they replace the kept ones and the state names them (a table that cannot be cut whole keeps
    nothing, and the reference that was there stays)."""
    column = spec.training.time_column
    folder = _folder(ws, spec.name)
    folder.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".batches-", dir=folder))
    try:
        state = _stage(staging, iter_batches(table, time_column=column, cadence=cadence), column, cadence)
        if state is None:
            raise DataError(
                f"the table of {spec.name!r} has no rows to make a reference from", "land at least one batch first"
            )
        key_history.drop(ws, spec.name)  # the reference taken again: so is its key index
        for batch_id in state.batches:
            target = _batch_path(ws, spec.name, batch_id)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / target.name, target)
        _save_state(ws, spec.name, state)
    except SnapshotError as exc:
        raise DataError(str(exc), f"check `time_column: {column}` in {spec.source} and the table") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return state


def _stage(staging: Path, snapshots: Iterator[Snapshot], column: str, cadence: str) -> ReferenceState | None:
    """Each batch written to `staging` as it comes (its window closed at its last row), and the state naming them."""
    state: ReferenceState | None = None
    for snapshot in snapshots:
        assert snapshot.batch is not None
        if state is None:
            state = ReferenceState(column, cadence if cadence != "auto" else _cadence_of(snapshot), (), None)
        batch = with_window_closed(snapshot.batch)
        del snapshot  # its sample and profile go with it: one batch at a time
        (staging / _batch_path_name(batch.batch_id)).write_text(batch.to_json())
        state = _kept(state, batch)
    return state


def _cadence_of(first: Snapshot) -> str:
    batch = first.batch
    window = batch.window if batch is not None else None
    if window is None or window.after_ms is None or window.through_ms is None:
        return "auto"
    days = (window.through_ms - window.after_ms) / 86_400_000
    return "day" if days <= 1.5 else "week" if days <= 8 else "month"


def kept_batches(
    ws: Workspace, pipeline: str, state: ReferenceState, kept: KeptBatches | None = None
) -> list[BatchProfile]:
    """Every batch that passed, oldest first, as outlines (`BatchProfile.outline`: identity, window, rows, and per
    column the counts and bounds a fingerprint reads)."""
    batches = kept if kept is not None else KeptBatches(ws, pipeline)
    return [batches.batch(i) for i in state.batches]


def kept_windows(ws: Workspace, pipeline: str, state: ReferenceState) -> list[TimeWindow]:
    """The rows of every batch that passed, oldest first, then the rows after the watermark (the new batch)."""
    return windows_of(kept_batches(ws, pipeline, state), state)


def windows_of(kept: Sequence[BatchProfile], state: ReferenceState) -> list[TimeWindow]:
    """`kept_windows` of batches already loaded."""
    return [b.window for b in kept if b.window is not None] + [new_rows_window(state)]


@dataclass(frozen=True)
class History:
    """What became of the rows that passed earlier, read from the table as it is now."""

    changed: list[tuple[BatchProfile, Snapshot]]  # kept batches whose rows are not what passed: (as kept, whole; now)
    unguarded_rows: int  # rows in no kept batch and not after the watermark: late rows, or rows with no time
    groups_read: int = 0  # row groups of the table read to fingerprint the batches
    groups_cached: int = 0  # row groups whose fingerprints came from the cache, unread
    groups_new: int = 0  # row groups whose footer puts them wholly among the new rows: nothing to fingerprint, unread

    @property
    def intact(self) -> bool:
        """Every row at or before the watermark is in a kept batch, and every kept batch is as it passed."""
        return not self.changed and not self.unguarded_rows


def changed_batches(
    ws: Workspace,
    pipeline: str,
    table: Path,
    state: ReferenceState,
    *,
    read: Callable[..., Snapshot] = read_snapshot,
    kept: KeptBatches | None = None,
    cache: FingerprintCache | None = None,
) -> History:
    """Every kept batch whose rows in the table are no longer what passed, and the rows no batch holds. All
    batches are fingerprinted in one aggregate pass (with `cache`, of the row groups it does not hold; a row group
    wholly among the new rows by its footer is not read: the guard profiles those rows); only
    those that moved are profiled again (by `read`: an engine's). Every row of a table the guard passed lies in a
    kept batch (a split refuses rows with no time, and a kept window reaches its batch's last row), so a row in
    none of them, dated at or before the watermark or not dated, arrived since and was never guarded: the
    new-rows window, after the watermark, misses it."""
    kept = kept if kept is not None else KeptBatches(ws, pipeline)
    batches = [b for b in kept_batches(ws, pipeline, state, kept) if b.window is not None]
    windows = [b.window for b in batches if b.window is not None]
    cache = cache if cache is not None else FingerprintCache()  # none kept: counts the row groups read all the same
    hits, reads, footers = cache.hits, cache.reads, cache.footers
    try:
        now, outside = fingerprint_windows(table, windows, cache, rest=new_rows_window(state))
        asides = kept_asides(ws, pipeline, state)
        moved = [b for b, f in zip(batches, now) if not f.matches(_expected_print(b, asides))]
        changed = [(kept.whole(b.batch_id), read(table, window=b.window, batch_id=b.batch_id)) for b in moved]
    except (OSError, ValueError, SnapshotError, pa.ArrowException) as exc:
        raise DataError(f"cannot check the history of {table}: {exc}", "replace the table with a readable one") from exc
    return History(changed, outside, cache.reads - reads, cache.hits - hits, cache.footers - footers)


def _expected_print(batch: BatchProfile, asides: dict[str, KeptAside]) -> Fingerprint:
    """What a kept batch's rows must still look like in the table: as the table held them when it passed (its
    rows set aside included, when its run set any aside), else as the passed rows were profiled."""
    aside = asides.get(batch.batch_id)
    return aside.held if aside is not None else fingerprint_of_profile(batch.profile)


def forget_after(ws: Workspace, pipeline: str, batches: int, watermark_ms: int | None) -> None:
    """Take the reference back to its first `batches` batches and that watermark (a rolled-back run's batch)."""
    state = load_state(ws, pipeline)
    if state is not None and len(state.batches) > batches:
        key_history.drop(ws, pipeline)  # first: an index never holds keys of batches the reference does not keep
        _save_state(ws, pipeline, replace(state, batches=state.batches[:batches], watermark_ms=watermark_ms))


@dataclass(frozen=True)
class Established:
    rows: int
    content_hash: str  # the table's content hash when its reference was taken


def warm_caches(ws: Workspace, pipeline: str, table: Path, state: ReferenceState, keys: tuple[str, ...]) -> None:
    """What a run's guard keeps for the next one, made where a reference is set (`kintsugi init`): the row groups'
    fingerprints of the kept batches (`fingerprint_cache_path`) and, for a declared key, the key index of their rows
    (`key_history`), so the first run reads its new rows and their keys only, as every run after it does. Both are
    caches: one that is missing or stale is built again by the guard that needs it."""
    windows = [b.window for b in kept_batches(ws, pipeline, state) if b.window is not None]
    cache = FingerprintCache()
    fingerprint_windows(table, windows, cache, rest=new_rows_window(state))
    cache.save(fingerprint_cache_path(ws, pipeline))
    if keys:
        key_history.current_index(ws, pipeline, table, keys, KeptBatches(ws, pipeline).covered(state), save=True)


def establish_reference(ws: Workspace, spec: PipelineSpec, metadata: MetadataPort, now_ms: int) -> Established:
    """A new pipeline's reference from its table as it is now (`kintsugi init`): the table pinned, cut into batches
    by its time column and kept (`establish`), and their merged profile written as DataHub's datasetProfile.

    The newest batch is left out: the pipeline's first run guards it as its new batch against the ones before it
    (and keeps it when it passes), rather than the whole table against a reference made of itself."""
    ws.runs.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".reference-", dir=ws.runs))
    try:
        pinned = pin_table(ws, spec, folder / "pin")
        state = _cut(ws, spec, pinned.path(ws), "auto")
        if len(state.batches) > 1:
            before_newest = KeptBatches(ws, spec.name).batch(state.batches[-2])
            forget_after(ws, spec.name, len(state.batches) - 1, before_newest.end_ms)
        reference = load_reference(ws, spec.name, keep_cache=True)
        assert reference is not None
        kept_state = load_state(ws, spec.name)
        assert kept_state is not None
        contract, _ = read_contract(metadata, spec.feature_table)
        keys = tuple(contract.key_columns) if contract is not None else ()
        warm_caches(ws, spec.name, pinned.path(ws), kept_state, keys)
        metadata.emit(profile_mcps(spec.feature_table, reference.profile, now_ms), now_ms)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return Established(reference.profile.row_count, pinned.content_hash)
