"""Taking writes back, shared by `undo` and crash recovery. Each step is planned from the current state (level-
based: running it twice changes nothing the second time) and checks everything before it touches anything."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controlplane.datahub.incidents import reopen_incident
from controlplane.datahub.models import UNDONE_TAG, read_model_tags, tag_mcps
from controlplane.datahub.urns import model_urn, tag_urn
from controlplane.errors import RunStateError, TableChanged
from controlplane.models.champion_health import rolled_back_versions
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.models.passport import evidence_refusal
from controlplane.runs.context import RunContext, crash_point
from controlplane.runs.journal import LedgerEntry, RunRecord
from controlplane.spec import PipelineSpec
from controlplane.stages.conclude import move_champion
from controlplane.stages.kept_reference import forget_after
from controlplane.stages.pin import check_backup, live_hash
from controlplane.stages.pin import restore_table as snapshot_restore
from controlplane.vocab import LedgerKind, Stage, Verdict
from controlplane.workspace import Workspace

__all__ = [
    "TableRestore",
    "plan_restore",
    "restore_table",
    "retire_version",
    "settle_champion",
    "reopen_incidents",
    "eligible_champion",
    "versions_of",
    "resolved_by",
    "plan_take_back",
    "take_back",
    "TakeBack",
    "Forget",
    "ABANDONED_TAG",
    "UNDONE_KEY",
    "ABANDONED_KEY",
]

UNDONE_KEY, ABANDONED_KEY = "kintsugi.undone", "kintsugi.abandoned"
ABANDONED_TAG = tag_urn("abandoned")


@dataclass(frozen=True)
class TableRestore:
    """Put a publish's previous bytes back: `needed` is False when they are back already (or never left);
    `mixed` when an interrupted publish may have left the location part old, part new."""

    backup: Path
    before_hash: str
    needed: bool
    mixed: bool = False


def plan_restore(ws: Workspace, spec: PipelineSpec, record: RunRecord, entry: LedgerEntry) -> TableRestore:
    """Check a publish can be taken back — the live table is what the run published (or already restored) and
    the kept backup is whole — before anything is touched; refuse with the reason otherwise."""
    run_id, kept = record.run_id, record.need(entry, "backup")
    backup, before = ws.path(kept), record.need(entry, "before_hash")
    after = entry.result.get("after_hash")
    current = live_hash(ws, spec)
    if current == before:
        return TableRestore(backup, before, needed=False)
    if not (backup / "manifest.json").is_file():
        if entry.done:
            raise RunStateError(
                f"the kept bytes of run {run_id} ({kept}) are gone",
                "nothing was changed; restore the table from your own backup",
            )
        return TableRestore(backup, before, needed=False)  # interrupted before its first byte: nothing moved
    if entry.done and current != after:
        raise RunStateError(
            f"{spec.data_text} changed after run {run_id} published it (now {current})",
            "undo the later runs first, newest first; nothing was changed",
        )
    try:
        check_backup(ws, spec, backup)
    except TableChanged as exc:
        raise RunStateError(
            f"the kept bytes of run {run_id} are damaged: {exc.message}",
            "nothing was changed; restore the table from your own backup",
        ) from exc
    return TableRestore(backup, before, needed=True, mixed=not entry.done)


def restore_table(run: RunContext, plan: TableRestore) -> None:
    if not plan.needed:
        return
    with run.journal.writing(
        LedgerKind.RESTORE, run.spec.data_text, backup=run.ws.rel(plan.backup), restore_hash=plan.before_hash
    ):
        crash_point("undo:before-restore")
        restored = snapshot_restore(run.ws, run.spec, plan.backup, check_live=not plan.mixed)
    run.event(Stage.UNDO, "restored", f"{run.spec.data_text} restored to {restored}", restored_hash=restored)


def retire_version(run: RunContext, version: int, key: str, why: str) -> None:
    """Mark a version undone (or abandoned) in MLflow and DataHub; it can never be champion again."""
    name = run.spec.name
    with run.journal.writing(LedgerKind.MLFLOW_TAGS, f"{name}/{version}", tag=key):
        with training_errors_mapped():
            open_store(run.ws).set_version_tags(name, version, {key: why})
    urn = model_urn(name, version)
    tag = UNDONE_TAG if key == UNDONE_KEY else ABANDONED_TAG
    with run.journal.writing(LedgerKind.DATAHUB, urn, aspect="globalTags", tag=tag):
        run.metadata.emit(tag_mcps(urn, [*read_model_tags(run.metadata, urn), tag]), run.now_ms)


def eligible_champion(run: RunContext) -> int | None:
    """The newest version neither undone nor abandoned nor rolled back from (by a rollback still standing)
    whose own signed evidence says APPROVED."""
    with training_errors_mapped():
        store = open_store(run.ws)
        versions = store.versions(run.spec.name)
    rolled_back = rolled_back_versions(run.ws, run.spec.name)
    candidates = sorted(
        (
            v
            for v, tags in versions.items()
            if tags.get("kintsugi.verdict") == Verdict.APPROVED.value
            and UNDONE_KEY not in tags
            and ABANDONED_KEY not in tags
            and v not in rolled_back
        ),
        reverse=True,
    )
    return next((v for v in candidates if evidence_refusal(run.ws, store, run.spec.name, v) is None), None)


def settle_champion(run: RunContext) -> None:
    """After versions were retired: `champion` on the newest eligible version (or on none, said so)."""
    with training_errors_mapped():
        current = open_store(run.ws).champion_version(run.spec.name)
    target = eligible_champion(run)
    if current != target:
        move_champion(run, target)
        run.event(
            Stage.UNDO,
            "alias",
            f"champion of {run.spec.name} moved from "
            + (f"v{current}" if current else "none")
            + " to "
            + (f"v{target}" if target else "none: no eligible version is left"),
            version=target,
            previous=current,
        )


def reopen_incidents(run: RunContext, urns: list[str], note: str) -> None:
    for urn in urns:
        with run.journal.writing(LedgerKind.DATAHUB, urn, aspect="incidentInfo", state="ACTIVE"):
            reopened = reopen_incident(run.metadata, urn, note, run.now_ms)
        if reopened:
            run.event(Stage.UNDO, "reopened", f"{urn} ACTIVE again", incident=urn)


def versions_of(record: RunRecord, entries: list[LedgerEntry]) -> list[int]:
    """The versions the entries registered (an entry begun and never done may name none)."""
    versions = []
    for entry in entries:
        version = entry.result.get("version")
        if version is None:
            continue
        if not str(version).isdigit():
            raise record.damaged(entry, f"names version {str(version)[:40]!r}, not a number")
        versions.append(int(version))
    return versions


def resolved_by(record: RunRecord) -> list[str]:
    """Incidents the run resolved (or set out to resolve), from its ledger."""
    return [
        e.target
        for e in record.ledger
        if e.kind == LedgerKind.DATAHUB.value
        and e.detail.get("aspect") == "incidentInfo"
        and e.detail.get("state") == "RESOLVED"
    ]


@dataclass(frozen=True)
class Forget:
    """A batch the run kept in the reference, and where the reference stood before it joined."""

    batch: str
    batches: int
    watermark_ms: int | None


@dataclass(frozen=True)
class TakeBack:
    """Everything a take-back will do, read from the run's record and checked before anything is touched."""

    restores: tuple[TableRestore, ...]
    versions: tuple[int, ...]  # the run's versions its ledger names (an interrupted run's MLflow may hold more)
    forgets: tuple[Forget, ...]


def plan_take_back(ws: Workspace, spec: PipelineSpec, record: RunRecord, *, unfinished: bool) -> TakeBack:
    """Every publish of the run (`unfinished`: also those begun and not recorded done), checked restorable; its
    versions; the batches it kept that are still in the reference. A record lacking what its writes recorded is
    refused here (`DamagedRecord`), never half way through."""
    publishes = record.entries(LedgerKind.PUBLISH, done_only=not unfinished)
    return TakeBack(
        tuple(plan_restore(ws, spec, record, e) for e in reversed(publishes)),
        tuple(versions_of(record, record.entries(LedgerKind.MLFLOW_VERSION, done_only=not unfinished))),
        _still_kept(record, unfinished),
    )


def _still_kept(record: RunRecord, unfinished: bool) -> tuple[Forget, ...]:
    """The batches the run kept (`unfinished`: or began to) and has not forgotten since: a take-back forgets each
    once, so an undo after a recovery (or a second recovery) leaves the batches later runs kept where they are."""
    kept: dict[str, LedgerEntry] = {}
    for entry in record.entries(LedgerKind.REFERENCE, done_only=False):
        if "forget" in entry.detail and entry.done:
            kept.pop(str(entry.detail["forget"]), None)
        elif "forget" not in entry.detail and (entry.done or unfinished):
            kept[str(record.need(entry, "batch"))] = entry
    forgets = []
    for batch, entry in kept.items():
        previous = record.need(entry, "previous")
        if not (isinstance(previous, dict) and str(previous.get("batches")).isdigit()):
            raise record.damaged(entry, "does not say where the reference stood before its batch (previous)")
        forgets.append(Forget(batch, int(previous["batches"]), previous.get("watermark_ms")))
    return tuple(forgets)


def take_back(run: RunContext, plan: TakeBack, *, retire: str, why: str, unfinished: bool) -> int:
    """Restore the tables, retire the run's versions, settle the champion, reopen what it resolved, forget the
    batches it kept.

    `unfinished` (an interrupted run): also the writes begun and never recorded done, and its MLflow runs are
    marked FAILED. Returns how many versions were retired."""
    for restore in plan.restores:
        restore_table(run, restore)
    versions = list(plan.versions)
    if unfinished:
        versions += _fail_mlflow_runs(run)
    for version in dict.fromkeys(versions):
        retire_version(run, version, retire, why)
    settle_champion(run)
    reopen_incidents(run, resolved_by(run.record), f"{why}: the data the incident was raised on is back")
    for forget in plan.forgets:
        with run.journal.writing(LedgerKind.REFERENCE, run.spec.name, forget=forget.batch):
            forget_after(run.ws, run.spec.name, forget.batches, forget.watermark_ms)
    return len(set(versions))


def _fail_mlflow_runs(run: RunContext) -> list[int]:
    """Mark the run's MLflow runs FAILED; the versions registered from them (which the ledger may lack)."""
    with training_errors_mapped():
        store = open_store(run.ws)
        mlflow_runs = store.find_runs(run.spec.name, "kintsugi.run_id", run.run_id)
        for mlflow_run in mlflow_runs:
            store.terminate_run(mlflow_run, "FAILED")
        found = [store.find_version_by_run(run.spec.name, r) for r in mlflow_runs]
    return [v for v in found if v is not None]
