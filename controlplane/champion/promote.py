"""Promote by hand: move `champion` to a version, through the same gate as the loop.

Only a version whose own evidence says APPROVED passes: its passport, signed by the workspace's key over the
model files as they are now, with a signed verdict of APPROVED (a mutable MLflow tag is not evidence) — and
that was neither undone nor abandoned. The move is a run record of its own (one PROMOTE event, the alias
writes in its ledger), so it can be listed and undone.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from controlplane.errors import GateRefused, VersionNotFound
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.models.passport import evidence_refusal
from controlplane.runs.context import open_run
from controlplane.runs.journal import RunJournal, RunRecord, list_runs, new_run_id
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import load_spec
from controlplane.stages.conclude import move_champion
from controlplane.takeback.recovery import recover_pipeline
from controlplane.takeback.rollback import ABANDONED_KEY, UNDONE_KEY
from controlplane.vocab import Policy, RunKind, RunStatus, Stage, Verdict
from controlplane.workspace import Workspace

if TYPE_CHECKING:
    from training.registry import ModelStore

__all__ = ["promote_version", "refusal"]


def refusal(ws: Workspace, store: ModelStore, tags: dict[str, str], model: str, version: int) -> str | None:
    """Why the version may not be champion, or None when it may."""
    if UNDONE_KEY in tags:
        return f"{model} v{version} was undone ({tags[UNDONE_KEY]})"
    if ABANDONED_KEY in tags:
        return f"{model} v{version} was abandoned ({tags[ABANDONED_KEY]})"
    why = evidence_refusal(ws, store, model, version)
    return None if why is None else f"{model} v{version}: {why}"


def _refuse_if_waiting(ws: Workspace, model: str, version: int) -> None:
    """A version whose run waits at the promote gate is a person's decision on that run, not a promotion by hand."""
    for record in list_runs(ws):
        pause = record.last_event(Stage.PROMOTE) if record.status is RunStatus.PAUSED else None
        if record.pipeline == model and pause is not None and pause.evidence.get("version") == version:
            verdict = pause.evidence.get("verdict", "paused")
            raise GateRefused(
                f"{model} v{version} is {verdict}: run {record.run_id} waits at the promote gate for a person",
                f"decide that run: `kintsugi approve {record.run_id} --reason ...` or "
                f"`kintsugi reject {record.run_id} --reason ...`",
            )


def promote_version(
    ws: Workspace, model: str, version: int, *, reason: str, by: str, now_ms: int | None = None
) -> RunRecord:
    """Move `champion` to an APPROVED version by a person's word (`reason` and `by`, checked by the service layer)."""
    spec = load_spec(ws, model)
    with pipeline_lock(ws, spec.name, f"promote {model} v{version}"):
        recover_pipeline(ws, spec.name)
        with training_errors_mapped():
            store = open_store(ws)
            tags, before = store.versions(model).get(version), store.champion_version(model)
        if tags is None:
            raise VersionNotFound(
                f"{model} has no version {version}", f"list its versions with `kintsugi audit {model}`"
            )
        _refuse_if_waiting(ws, model, version)
        why = refusal(ws, store, tags, model, version)
        if why is not None:
            raise GateRefused(
                f"{why}: it cannot be promoted",
                "only a version the gate APPROVED can be promoted; fix the evidence and run the loop again",
            )
        now_ms = now_ms or int(time.time() * 1000)
        record = RunRecord(
            new_run_id(now_ms),
            spec.name,
            Policy.AUTO,
            int(time.time() * 1000),
            now_ms,
            pid=os.getpid(),
            kind=RunKind.PROMOTE,
            version=version,
        )
        RunJournal(ws, record).save()
        with open_run(ws, spec, record) as run:
            move_champion(run, version)
            run.event(
                Stage.PROMOTE,
                Verdict.APPROVED.value,
                f"v{version} made champion by {by}: {reason}" + (f" (v{before} is previous)" if before else ""),
                version=version,
                previous=before,
                reason=reason,
                by=by,
            )
            run.finish(
                RunStatus.PROMOTED, f"{model} v{version} is champion" + (f" (v{before} is previous)" if before else "")
            )
    return record
