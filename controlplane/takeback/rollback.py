"""Taking writes back, shared by `undo` and crash recovery. Each step is planned from the current state (level-
based: running it twice changes nothing the second time) and checks everything before it touches anything."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from controlplane.datahub.incidents import reopen_incident
from controlplane.datahub.models import UNDONE_TAG, datahub_champion, read_model_tags, tag_mcps
from controlplane.datahub.urns import model_urn, tag_urn
from controlplane.errors import RunStateError, TableChanged
from controlplane.models.champion_health import rolled_back_versions
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.models.passport import evidence_refusal
from controlplane.runs.context import RunContext, crash_point
from controlplane.runs.journal import LedgerEntry, RunRecord, list_runs
from controlplane.spec import PipelineSpec
from controlplane.stages.conclude import move_champion
from controlplane.stages.kept_reference import forget_after, replace_batch, save_aside
from controlplane.stages.pin import check_backup, live_hash, version_replaced
from controlplane.stages.pin import restore_table as snapshot_restore
from controlplane.vocab import ChangedTable, LedgerKind, RunKind, RunStatus, Stage, Verdict
from controlplane.workspace import Workspace
from remediations.aside import KeptAside

__all__ = [
    "TableRestore",
    "plan_restore",
    "restore_table",
    "retire_version",
    "restore_champion",
    "champion_restore",
    "ChampionRestore",
    "reopen_incidents",
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
    `mixed` when an interrupted publish may have left the location part old, part new, or the bytes are put back
    over a producer's change (`ChangedTable.RESTORE`); `kept`: the hash of a producer's change left in place."""

    backup: Path
    before_hash: str
    needed: bool
    mixed: bool = False
    kept: str = ""


def plan_restore(
    ws: Workspace,
    spec: PipelineSpec,
    record: RunRecord,
    entry: LedgerEntry,
    changed: ChangedTable = ChangedTable.REFUSE,
) -> TableRestore:
    """Check a publish can be taken back — the live table is what the run published (or already restored) and
    the kept backup is whole — before anything is touched; refuse with the reason otherwise. A table changed
    since the run published it is refused, unless `changed` says to restore over it or keep it."""
    run_id, kept = record.run_id, record.need(entry, "backup")
    backup, before = ws.path(kept), record.need(entry, "before_hash")
    after = entry.result.get("after_hash")
    current = live_hash(ws, spec)
    if current == before:
        return TableRestore(backup, before, needed=False)
    over_change = entry.done and current != after
    if over_change:
        later = _published_later(ws, record, current)
        if later is not None:
            raise RunStateError(
                f"{spec.data_text} changed after run {run_id} published it: run {later} published it since",
                f"undo the later runs first, newest first (`kintsugi undo {later}`); nothing was changed",
            )
        if changed is ChangedTable.KEEP:
            return TableRestore(backup, before, needed=False, kept=current)
    if not (backup / "manifest.json").is_file():
        if entry.done:
            raise RunStateError(
                f"the kept bytes of run {run_id} ({kept}) are gone",
                "nothing was changed; restore the table from your own backup",
            )
        return TableRestore(backup, before, needed=False)  # interrupted before its first byte: nothing moved
    if over_change and changed is not ChangedTable.RESTORE:
        raise RunStateError(
            f"{spec.data_text} changed after run {run_id} published it (now {current}), by no later run",
            "nothing was changed; "
            f"`kintsugi undo {run_id} --table restore` puts the run's kept bytes back over the change, "
            f"`kintsugi recover {run_id} --table keep` takes back the rest and keeps the table as it is",
        )
    try:
        check_backup(ws, spec, backup)
    except TableChanged as exc:
        raise RunStateError(
            f"the kept bytes of run {run_id} are damaged: {exc.message}",
            "nothing was changed; restore the table from your own backup",
        ) from exc
    return TableRestore(backup, before, needed=True, mixed=over_change or not entry.done)


def _published_later(ws: Workspace, record: RunRecord, current: str) -> str | None:
    """The later run of the pipeline whose publish left the table as it is now, if one did."""
    for later in reversed(list_runs(ws)):
        if later.pipeline != record.pipeline or (later.started_ms, later.run_id) <= (record.started_ms, record.run_id):
            continue
        if any(e.result.get("after_hash") == current for e in later.entries(LedgerKind.PUBLISH)):
            return later.run_id
    return None


def restore_table(run: RunContext, plan: TableRestore) -> None:
    if plan.kept:
        run.event(Stage.UNDO, "kept", f"{run.spec.data_text} kept as changed since the run ({plan.kept})")
    if not plan.needed:
        return
    with run.journal.writing(
        LedgerKind.RESTORE, run.spec.data_text, backup=run.ws.rel(plan.backup), restore_hash=plan.before_hash
    ):
        crash_point("undo:before-restore")
        restored = snapshot_restore(run.ws, run.spec, plan.backup, check_live=not plan.mixed)
    version = version_replaced(plan.backup)  # a table format's: time travel to it
    said = f"{run.spec.data_text} restored to {restored}" + (f" (the rows of {version})" if version else "")
    run.event(Stage.UNDO, "restored", said, restored_hash=restored, **({"version": version} if version else {}))


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


def _eligible(run: RunContext) -> list[int]:
    """Versions neither undone nor abandoned nor rolled back from (by a rollback still standing) whose own signed
    evidence says APPROVED, newest first."""
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
    return [v for v in candidates if evidence_refusal(run.ws, store, run.spec.name, v) is None]


@dataclass(frozen=True)
class ChampionRestore:
    """What a take-back does with `champion`, read from the run's own alias entries (never its take-backs'):
    put back `previous` — the champion the run found before its first move — while the champion is one the run
    put there (`moved`) or `previous` already; `forward` (a watch rollback recovered): never put back the unsafe
    champion it moved away from, only make DataHub tag what MLflow's alias says."""

    previous: int | None
    moved: frozenset[int | None]
    forward: bool = False


def champion_restore(record: RunRecord) -> ChampionRestore | None:
    """None when the run never moved the champion: a take-back leaves it where it is."""
    own = [e for e in record.entries(LedgerKind.ALIAS, done_only=False) if not e.detail.get("restore")]
    if not own:
        return None
    moved = frozenset(_alias_version(record, e, "version") for e in own)
    forward = record.kind is RunKind.ROLLBACK and record.status is not RunStatus.UNDOING
    return ChampionRestore(_alias_version(record, own[0], "previous"), moved, forward)


def _alias_version(record: RunRecord, entry: LedgerEntry, key: str) -> int | None:
    version = record.need(entry, key)
    if version is not None and not str(version).isdigit():
        raise record.damaged(entry, f"names {key} version {str(version)[:40]!r}, not a number")
    return None if version is None else int(version)


def restore_champion(run: RunContext, plan: ChampionRestore | None) -> None:
    """Put back the champion the run found (still eligible; else the newest eligible), only while the champion
    is where the run (or this take-back) left it; MLflow's alias and DataHub's tag both written, so they agree."""
    if plan is None:
        return
    name = run.spec.name
    with training_errors_mapped():
        current = open_store(run.ws).champion_version(name)
    if plan.forward:
        target = current
    elif current not in plan.moved and current != plan.previous:
        run.event(
            Stage.UNDO,
            "alias",
            f"champion of {name} left on " + (f"v{current}" if current else "none") + ": moved since the run moved it",
            version=current,
        )
        return
    else:
        eligible = _eligible(run)
        target = plan.previous if plan.previous in eligible else next(iter(eligible), None)
    in_datahub = datahub_champion(run.metadata, name)
    if current == target and in_datahub == ([target] if target is not None else []):
        return
    move_champion(run, target, restoring=True)
    run.event(
        Stage.UNDO,
        "alias",
        f"champion of {name} moved from "
        + (f"v{current}" if current else "none")
        + " to "
        + (f"v{target}" if target else "none: no eligible version is left")
        + " in MLflow and DataHub",
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
class AsideBack:
    """A batch that passed earlier among whose rows the run set rows aside, and what it held before (None: none)."""

    batch: str
    previous: KeptAside | None


@dataclass(frozen=True)
class RewriteBack:
    """A batch that passed earlier whose kept profile the run replaced (a rewrite accepted as the history), and
    the workspace file that holds the JSON it replaced."""

    batch: str
    previous: str


@dataclass(frozen=True)
class TakeBack:
    """Everything a take-back will do, read from the run's record and checked before anything is touched."""

    restores: tuple[TableRestore, ...]
    versions: tuple[int, ...]  # the run's versions its ledger names (an interrupted run's MLflow may hold more)
    forgets: tuple[Forget, ...]
    champion: ChampionRestore | None = None
    asides: tuple[AsideBack, ...] = ()
    rewrites: tuple[RewriteBack, ...] = ()


def plan_take_back(
    ws: Workspace,
    spec: PipelineSpec,
    record: RunRecord,
    *,
    unfinished: bool,
    changed: ChangedTable = ChangedTable.REFUSE,
) -> TakeBack:
    """Every publish of the run (`unfinished`: also those begun and not recorded done), checked restorable (a
    table changed since: as `changed` says); its versions; the batches it kept that are still in the reference;
    the champion to put back. A record lacking what its writes recorded is refused here (`DamagedRecord`), never
    half way through."""
    publishes = record.entries(LedgerKind.PUBLISH, done_only=not unfinished)
    return TakeBack(
        tuple(plan_restore(ws, spec, record, e, changed) for e in reversed(publishes)),
        tuple(versions_of(record, record.entries(LedgerKind.MLFLOW_VERSION, done_only=not unfinished))),
        _still_kept(record, unfinished),
        champion_restore(record),
        _asides_set(record, unfinished),
        _rewrites_made(ws, record, unfinished),
    )


def _still_kept(record: RunRecord, unfinished: bool) -> tuple[Forget, ...]:
    """The batches the run kept (`unfinished`: or began to) and has not forgotten since: a take-back forgets each
    once, so an undo after a recovery (or a second recovery) leaves the batches later runs kept where they are."""
    kept: dict[str, LedgerEntry] = {}
    for entry in record.entries(LedgerKind.REFERENCE, done_only=False):
        if {"aside", "aside_back", "rewrite", "rewrite_back"} & entry.detail.keys():
            continue  # rows set aside in, or a profile rewritten of, a batch kept earlier: `_asides_set`, `_rewrites_made`
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


def _asides_set(record: RunRecord, unfinished: bool) -> tuple[AsideBack, ...]:
    """The batches kept earlier among whose rows the run set rows aside (`unfinished`: or began to), and what each
    held before; a take-back puts each back once."""
    found: dict[str, AsideBack] = {}
    for entry in record.entries(LedgerKind.REFERENCE, done_only=False):
        if "aside_back" in entry.detail and entry.done:
            found.pop(str(entry.detail["aside_back"]), None)
        elif "aside" in entry.detail and (entry.done or unfinished):
            batch = str(entry.detail["aside"])
            if batch not in found:
                found[batch] = AsideBack(batch, _previous_aside(record, entry))
    return tuple(found.values())


def _rewrites_made(ws: Workspace, record: RunRecord, unfinished: bool) -> tuple[RewriteBack, ...]:
    """The kept batches whose profile the run replaced (`unfinished`: or began to) and has not put back since, each
    with the file holding the JSON it replaced (checked readable here, before anything is touched)."""
    found: dict[str, RewriteBack] = {}
    for entry in record.entries(LedgerKind.REFERENCE, done_only=False):
        if "rewrite_back" in entry.detail and entry.done:
            found.pop(str(entry.detail["rewrite_back"]), None)
        elif "rewrite" in entry.detail and (entry.done or unfinished):
            batch, previous = str(entry.detail["rewrite"]), str(record.need(entry, "previous"))
            if not ws.path(previous).is_file():
                raise record.damaged(entry, f"names {previous} for the batch's profile before, which is gone")
            found.setdefault(batch, RewriteBack(batch, previous))
    return tuple(found.values())


def _previous_aside(record: RunRecord, entry: LedgerEntry) -> KeptAside | None:
    """What a batch kept earlier held set aside before the run wrote to it, as its ledger entry recorded it."""
    previous = entry.detail.get("previous_aside")
    try:
        return None if previous is None else KeptAside.from_dict(previous)
    except (KeyError, TypeError, ValueError) as exc:
        raise record.damaged(entry, f"does not say what the batch held set aside before ({exc})") from exc


def take_back(run: RunContext, plan: TakeBack, *, retire: str, why: str, unfinished: bool) -> int:
    """Restore the tables, retire the run's versions, put back the champion the run moved, reopen what it resolved, forget the
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
    restore_champion(run, plan.champion)
    reopen_incidents(run, resolved_by(run.record), f"{why}: the data the incident was raised on is back")
    for forget in plan.forgets:
        with run.journal.writing(LedgerKind.REFERENCE, run.spec.name, forget=forget.batch):
            forget_after(run.ws, run.spec.name, forget.batches, forget.watermark_ms)
    for aside in plan.asides:
        with run.journal.writing(LedgerKind.REFERENCE, run.spec.name, aside_back=aside.batch):
            save_aside(run.ws, run.spec.name, aside.batch, aside.previous)
    for rewrite in plan.rewrites:
        with run.journal.writing(LedgerKind.REFERENCE, run.spec.name, rewrite_back=rewrite.batch):
            replace_batch(run.ws, run.spec.name, rewrite.batch, run.ws.path(rewrite.previous).read_text())
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
