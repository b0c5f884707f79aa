"""Ratify gates and undo: continue or stop a paused run, and take back what a finished run did."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.incidents import ACTOR
from controlplane.datahub.urns import model_urn
from controlplane.detect import guard_context
from controlplane.errors import RunError
from controlplane.journal import Event, RunJournal, RunRecord, load_run
from controlplane.locks import pipeline_lock
from controlplane.loop import LoopState, heal_from_dict, open_state, publish_and_train, ref_from_dict, verify_heal
from controlplane.spec import load_spec
from controlplane.train import Candidate, conclude, open_model_store, open_store, training_errors_mapped
from controlplane.workspace import Workspace
from remediations.sandbox import content_hash, restore

__all__ = ["approve", "reject", "undo", "promote_version"]


def _paused(ws: Workspace, run_id: str) -> RunRecord:
    record = load_run(ws, run_id)
    if record.status != "paused":
        raise RunError(f"run {run_id} is {record.status}, not paused at a gate",
                       "only a run paused by the ratify policy can be approved or rejected; see `kintsugi runs`")
    return record


def approve(ws: Workspace, run_id: str, *, now_ms: int | None = None,
            listener: Callable[[Event], None] | None = None) -> RunRecord:
    """Continue a paused run past its gate; it re-checks the current state before acting."""
    record = _paused(ws, run_id)
    journal = RunJournal(ws, record, listener)
    gate = record.state.get("gate")
    spec = load_spec(ws, record.pipeline)
    with pipeline_lock(ws, spec.name, run_id), open_state(ws, spec, journal, now_ms or int(time.time() * 1000)) as state:
        record.status = "running"
        journal.event("approve", "approved", f"approved at the {gate} gate")
        if gate == "publish":
            _continue_publish(state)
        else:
            conclude(state, Candidate(**record.state["candidate"]))
    return record


def _continue_publish(state: LoopState) -> None:
    heal = heal_from_dict(state.journal.record.state["heal"])
    if content_hash(state.spec.data) != heal.before_hash:
        raise RunError(f"{state.spec.data} changed since run {state.run_id} healed it",
                       "reject this run and start a new one on the current data")
    context = guard_context(state.metadata, state.spec.feature_table, None, state.now_ms)
    verified = verify_heal(state, context, heal)
    if verified is not None:
        incidents = [ref_from_dict(r) for r in state.journal.record.state.get("incident_refs", [])]
        publish_and_train(state, verified, heal, incidents)


def reject(ws: Workspace, run_id: str, reason: str) -> RunRecord:
    """Stop a paused run: nothing more is published or promoted; open incidents stay open."""
    record = _paused(ws, run_id)
    journal = RunJournal(ws, record)
    gate = record.state.get("gate")
    with open_state(ws, load_spec(ws, record.pipeline), journal, int(time.time() * 1000)) as state:
        journal.event("reject", "rejected", f"rejected at the {gate} gate: {reason}")
        if gate == "promote":
            conclude(state, Candidate(**record.state["candidate"]), rejected=reason)
        else:
            journal.finish("rejected", f"rejected at the publish gate: nothing was published; "
                                       f"the incident stays open ({reason})")
    return record


def undo(ws: Workspace, run_id: str) -> RunRecord:
    """Restore the exact bytes a run replaced, move `champion` back, and reopen the incidents it resolved."""
    record = load_run(ws, run_id)
    publishes = [e for e in record.ledger if e.kind == "publish"]
    aliases = [e for e in record.ledger if e.kind == "mlflow-alias"]
    if record.status in ("running", "paused"):
        raise RunError(f"run {run_id} is {record.status}", "reject a paused run instead of undoing it")
    if record.state.get("undone"):
        raise RunError(f"run {run_id} was already undone", "nothing left to take back")
    if not publishes and not aliases:
        raise RunError(f"run {run_id} published nothing and moved no alias", "there is nothing to undo")
    journal = RunJournal(ws, record)
    with open_state(ws, load_spec(ws, record.pipeline), journal, int(time.time() * 1000)) as state:
        for entry in publishes:
            _restore_table(state, entry.target, entry.detail)
        for entry in aliases:
            _restore_alias(state, entry.detail["version"], entry.detail.get("previous"))
        _reopen_incidents(state)
        record.state["undone"] = True
        journal.finish("undone", f"undone: {len(publishes)} publish(es) and {len(aliases)} alias move(s) taken back")
    return record


def _restore_table(state: LoopState, target: str, detail: dict[str, Any]) -> None:
    path = Path(target)
    if content_hash(path) != detail["after_hash"]:
        raise RunError(f"{path} changed after run {state.run_id} published it",
                       "undo the later runs first, newest first")
    restored = restore(Path(detail["backup"]), path)
    if restored != detail["before_hash"]:
        raise RunError(f"restored bytes of {path} do not match the kept hash", "inspect the run folder by hand")
    state.journal.event("undo", "restored", f"{path} restored to {restored}", restored_hash=restored)


def _restore_alias(state: LoopState, version: int, previous: int | None) -> None:
    name = state.spec.name
    with training_errors_mapped():
        store = open_model_store(state)
        if store.champion_version(name) == version:
            if previous is None:
                store.delete_alias(name, "champion")
            else:
                store.promote(name, previous)
            store.delete_alias(name, "previous")
        store.set_version_tags(name, version, {"kintsugi.undone": f"by undo of run {state.run_id}"})
    undone = s.GlobalTagsClass(tags=[s.TagAssociationClass("urn:li:tag:undone")])
    state.metadata.emit([MCP(entityUrn=model_urn(name, version), aspect=undone)], state.now_ms)
    state.journal.event("undo", "alias", f"champion of {name} moved back from v{version} to "
                        + (f"v{previous}" if previous else "none"), version=version, previous=previous)


def _reopen_incidents(state: LoopState) -> None:
    for ref in state.journal.record.state.get("incidents", []):
        info = state.metadata.aspect(ref, s.IncidentInfoClass)
        if info is None or info.status.state != s.IncidentStateClass.RESOLVED:
            continue
        info.status = s.IncidentStatusClass(
            state=s.IncidentStateClass.ACTIVE, stage=s.IncidentStageClass.TRIAGE,
            message=f"heal undone by `kintsugi undo {state.run_id}`: the original data is back",
            lastUpdated=s.AuditStampClass(time=state.now_ms, actor=ACTOR))
        state.metadata.emit([MCP(entityUrn=ref, aspect=info)], state.now_ms)
        state.journal.event("undo", "reopened", f"{ref} ACTIVE again", incident=ref)


def promote_version(ws: Workspace, model: str, version: int) -> int | None:
    """Move `champion` to a version, through the same gate: only an APPROVED, not undone, version passes.

    Returns the version that was champion before."""
    with training_errors_mapped():
        store = open_store(ws)
        tags = store.get_version_tags(model, version)
        verdict = tags.get("kintsugi.verdict")
        if verdict != "APPROVED" or "kintsugi.undone" in tags:
            why = "it was undone" if "kintsugi.undone" in tags else f"its verdict is {verdict or 'missing'}"
            raise RunError(f"{model} v{version} cannot be promoted: {why}",
                           "only a version the gate APPROVED can be promoted; fix the evidence and run the loop again")
        before = store.champion_version(model)
        store.promote(model, version)
    return before
