"""Scratch copies of an onboarded pipeline's workspace for the drill: the workspace itself is only read.

`copy_pipeline` copies the workspace once, under the pipeline's lock (its sqlite stores through sqlite's
backup, so a writer of another pipeline cannot tear them; the runs' pinned snapshots and sandboxes are left
behind), pins the table where it lives into the copy as one local parquet file and points the copy's spec at
it (whatever the drill writes never reaches the team's table, wherever it lives), rebases the copy's MLflow
store onto its folder (`controlplane.runs.identity.rebase_if_moved`) and lists the table's batches: the batches
the reference keeps, then the rows after its watermark when there are any.

`fork` copies that base per run; `take_back(ws, copy, index)` makes batch `index` the new batch again: the
reference forgotten back to the batches before it (`controlplane.stages.kept_reference.forget_after`), later rows cut
from the table. The newest batch is the one a drill corrupts; earlier ones serve as more clean controls.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import yaml

from controlplane.datahub.connect import metadata_session
from controlplane.documents.odcs import read_contract
from controlplane.errors import InputError, WorkspaceError
from controlplane.runs.identity import rebase_if_moved
from controlplane.runs.journal import list_runs
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import PipelineSpec, load_spec
from controlplane.stages.kept_reference import forget_after, kept_windows, load_state
from controlplane.stages.pin import pin_table
from controlplane.vocab import Policy
from controlplane.workspace import Workspace
from guard.contract import Contract
from profiles.relations import epoch_ms_of
from profiles.snapshot import read_frame

__all__ = [
    "BatchSpan",
    "PipelineCopy",
    "copy_pipeline",
    "load_copy",
    "fork",
    "take_back",
    "contract_of",
    "write_table",
    "RUN_DELAY_MS",
]

RUN_DELAY_MS = 3_600_000  # the drill's runs happen an hour after the workspace's last run (or newest row)
_META = "copy.json"
_TABLE = "data/drill-table.parquet"  # the copy's table, workspace-relative
_LEFT_BEHIND = ("snapshot", "sandbox")  # per-run copies of tables: no later run reads them


@dataclass(frozen=True)
class BatchSpan:
    batch_id: str
    after_ms: int | None  # the rows in (after, through]
    through_ms: int | None  # None: the rows after the reference's watermark
    newest_ms: int  # the latest event time among its rows


@dataclass(frozen=True)
class PipelineCopy:
    root: str
    pipeline: str
    time_column: str
    batches: tuple[BatchSpan, ...]  # oldest first; the last is the newest batch
    kept: int  # how many of them the copied reference keeps (the rest are rows after its watermark)
    now_ms: int  # when the drill's runs happen on the newest batch

    @property
    def base(self) -> Workspace:
        return Workspace(Path(self.root) / "base")

    @property
    def newest(self) -> int:
        return len(self.batches) - 1

    def now_at(self, index: int) -> int:
        """When a run on batch `index` happens: as long after its rows as runs on the newest batch are."""
        return self.now_ms - (self.batches[-1].newest_ms - self.batches[index].newest_ms)


def copy_pipeline(ws: Workspace, pipeline: str, root: Path, now_ms: int | None = None) -> PipelineCopy:
    """The base copy of `pipeline`'s workspace in `root/base`, its table local, its batches listed."""
    spec = load_spec(ws, pipeline)
    if not ws.datahub_db.is_file():
        raise WorkspaceError(
            f"no DataHub Lite store in {ws.root}: the drill copies the workspace's own stores",
            "pull the metadata first with `kintsugi datahub pull`, or pass --workspace DIR",
        )
    if load_state(ws, pipeline) is None:
        raise InputError(
            f"pipeline {pipeline!r} keeps no reference batches (it was made before batches)",
            f"onboard it again with `kintsugi init {pipeline} --force`",
        )
    base = Workspace(root / "base")
    if base.root.exists():  # a kept folder of an earlier drill: copied afresh, the workspace may have moved on
        shutil.rmtree(base.root)
    with pipeline_lock(ws, pipeline, f"drill copy of {pipeline}"):
        _copy_workspace(ws, base)
        pinned = pin_table(ws, spec, root / "pin")
        (base.root / "data").mkdir(exist_ok=True)
        shutil.copyfile(pinned.path(ws), base.path(_TABLE))
        default_now = _after_last_run(ws)
    shutil.rmtree(root / "pin", ignore_errors=True)
    rebase_if_moved(base)
    _point_spec_at_copy(base, spec)
    copy = _listed(base, pipeline, root, now_ms, default_now)
    (root / _META).write_text(json.dumps(asdict(copy), indent=2, sort_keys=True))
    return copy


def load_copy(root: Path) -> PipelineCopy:
    data = json.loads((root / _META).read_text())
    return PipelineCopy(**{**data, "batches": tuple(BatchSpan(**b) for b in data["batches"])})


def _copy_workspace(ws: Workspace, base: Workspace) -> None:
    stores = {ws.datahub_db.name, ws.mlflow_db.name}

    def left_behind(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        skipped = {n for n in names if here == ws.root and (n in stores or n.endswith(("-wal", "-shm", "-journal")))}
        if here.parent == ws.runs:
            skipped |= {n for n in names if n in _LEFT_BEHIND}
        return skipped

    shutil.copytree(ws.root, base.root, ignore=left_behind)
    for store in (ws.datahub_db, ws.mlflow_db):
        if store.is_file():
            with (
                closing(sqlite3.connect(f"file:{store}?mode=ro", uri=True)) as source,
                closing(sqlite3.connect(base.root / store.name)) as target,
            ):
                source.backup(target)


def _point_spec_at_copy(base: Workspace, spec: PipelineSpec) -> None:
    """The copy's spec reads the copy's table, under policy auto (a drill does not stop at ratify gates)."""
    path = base.pipelines / spec.source.name
    document = yaml.safe_load(path.read_text())
    document.update(data=_TABLE, policy=Policy.AUTO.value)
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def _after_last_run(ws: Workspace) -> int:
    return max((r.now_ms for r in list_runs(ws) if r.now_ms), default=0) + RUN_DELAY_MS


def _listed(base: Workspace, pipeline: str, root: Path, now_ms: int | None, default_now: int) -> PipelineCopy:
    state = load_state(base, pipeline)
    assert state is not None
    windows = kept_windows(base, pipeline, state)  # every kept batch's rows, then the rows after the watermark
    ids = [*state.batches, "new rows"]
    if len(windows) != len(ids):
        raise WorkspaceError(
            f"the reference of {pipeline!r} names {len(state.batches)} batches but keeps {len(windows) - 1} windows",
            f"onboard it again with `kintsugi init {pipeline} --force`",
        )
    stamps, present = epoch_ms_of(read_frame(base.path(_TABLE), [state.time_column])[state.time_column])
    stamps = stamps[present]
    spans = []
    for batch_id, window in zip(ids, windows):
        inside = stamps[_inside(stamps, window.after_ms, window.through_ms)]
        if len(inside):
            spans.append(BatchSpan(batch_id, window.after_ms, window.through_ms, int(inside.max())))
    if len(spans) < 2:
        raise InputError(
            f"the table of {pipeline!r} has {len(spans)} batch(es): a drill needs a reference batch "
            "and a newest batch to corrupt",
            f"land another batch with `kintsugi land {pipeline} FILE`",
        )
    newest_ms = spans[-1].newest_ms
    now = now_ms if now_ms is not None else max(default_now, newest_ms + RUN_DELAY_MS)
    return PipelineCopy(str(root), pipeline, state.time_column, tuple(spans), len(state.batches), now)


def _inside(stamps: np.ndarray, after_ms: int | None, through_ms: int | None) -> np.ndarray:
    mask = np.ones(len(stamps), dtype=bool)
    if after_ms is not None:
        mask &= stamps > after_ms
    if through_ms is not None:
        mask &= stamps <= through_ms
    return mask


def fork(copy: PipelineCopy, name: str) -> Workspace:
    """A private copy of the base, for one run."""
    target = Path(copy.root) / "forks" / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(copy.base.root, target)
    ws = Workspace(target)
    rebase_if_moved(ws)
    return ws


def take_back(ws: Workspace, copy: PipelineCopy, index: int) -> pd.DataFrame:
    """Make batch `index` the new batch of the fork `ws`; returns the table as it then is (the clean rows)."""
    if index < 1:
        raise InputError(f"batch {index} has no batch before it to be the reference", "choose a later batch")
    if index < copy.kept:
        forget_after(ws, copy.pipeline, index, copy.batches[index - 1].through_ms)
    spec = load_spec(ws, copy.pipeline)
    table = read_frame(spec.data)
    through = copy.batches[index].through_ms
    if index < copy.newest and through is not None:
        stamps, _ = epoch_ms_of(table[copy.time_column])
        table = table.loc[stamps <= through].reset_index(drop=True)
        write_table(spec.data, table)
    return table


def contract_of(ws: Workspace, spec: PipelineSpec, refusal: Callable[[str, str], Exception] = InputError) -> Contract:
    """The pipeline's contract as DataHub holds it; none readable is `refusal(message, fix)`, raised (the caller's
    error: a drill's input, an injection that cannot be made, a game day's data)."""
    with metadata_session(ws, read_only=True) as metadata:
        contract, error = read_contract(metadata, spec.feature_table)
    if contract is None:
        raise refusal(
            f"no readable contract for {spec.feature_table} in {ws.root} ({error or 'missing'})",
            "apply one with `kintsugi contract apply FILE`",
        )
    return contract


def write_table(path: Path, frame: pd.DataFrame) -> None:
    """Write the copy's table atomically."""
    temporary = path.with_name(f".{path.name}.drill.tmp")
    frame.to_parquet(temporary, index=False)
    temporary.replace(path)
