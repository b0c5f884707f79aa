"""Promote by hand: move `champion` to a version, through the same gate as the loop.

Only a version whose evidence says APPROVED — and that was neither undone nor abandoned — passes. The move is
a run record of its own (one PROMOTE event, the alias writes in its ledger), so it can be listed and undone.
"""
from __future__ import annotations

import os
import time

from controlplane.context import open_run
from controlplane.errors import GateRefused, VersionNotFound
from controlplane.journal import RunJournal, RunRecord, new_run_id
from controlplane.locks import pipeline_lock
from controlplane.modelstore import open_store, training_errors_mapped
from controlplane.recovery import recover_pipeline
from controlplane.rollback import ABANDONED_KEY, UNDONE_KEY
from controlplane.spec import load_spec
from controlplane.stages.conclude import move_champion
from controlplane.vocab import Policy, RunStatus, Stage, Verdict
from controlplane.workspace import Workspace

__all__ = ["promote_version", "refusal"]


def refusal(tags: dict[str, str] | None, model: str, version: int) -> str | None:
    """Why the version may not be champion, or None when it may."""
    if tags is None:
        return f"{model} has no version {version}"
    if UNDONE_KEY in tags:
        return f"{model} v{version} was undone ({tags[UNDONE_KEY]})"
    if ABANDONED_KEY in tags:
        return f"{model} v{version} was abandoned ({tags[ABANDONED_KEY]})"
    verdict = tags.get("kintsugi.verdict")
    if verdict != Verdict.APPROVED.value:
        return f"{model} v{version}'s verdict is {verdict or 'missing'}"
    return None


def promote_version(ws: Workspace, model: str, version: int, *, now_ms: int | None = None) -> RunRecord:
    spec = load_spec(ws, model)
    with pipeline_lock(ws, spec.name, f"promote {model} v{version}"):
        recover_pipeline(ws, spec.name)
        with training_errors_mapped():
            store = open_store(ws)
            tags, before = store.versions(model).get(version), store.champion_version(model)
        why = refusal(tags, model, version)
        if tags is None:
            raise VersionNotFound(why or "", f"list versions with `kintsugi passport show {model} VERSION`")
        if why is not None:
            raise GateRefused(f"{why}: it cannot be promoted",
                              "only a version the gate APPROVED can be promoted; fix the evidence and run the loop again")
        now_ms = now_ms or int(time.time() * 1000)
        record = RunRecord(new_run_id(now_ms), spec.name, Policy.AUTO, int(time.time() * 1000), now_ms,
                           pid=os.getpid(), facts={"kind": "promote", "version": version})
        RunJournal(ws, record).save()
        with open_run(ws, spec, record) as run:
            move_champion(run, version)
            run.event(Stage.PROMOTE, Verdict.APPROVED.value, f"v{version} made champion by hand"
                      + (f" (v{before} is previous)" if before else ""), version=version, previous=before)
            run.finish(RunStatus.PROMOTED, f"{model} v{version} is champion" + (f" (v{before} is previous)"
                                                                                 if before else ""))
    return record
