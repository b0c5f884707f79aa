"""The one service layer every front door calls (CLI, HTTP API, MCP server, scheduler): typed input in, the
project's dataclasses out, errors from the one tree. It validates what front doors cannot (instants, policies,
free text) and decides nothing itself: the loop, the guard, undo and recovery do."""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from controlplane.champion.promote import promote_version
from controlplane.datahub.connect import metadata_session
from controlplane.datahub.contracts import read_raw_contract
from controlplane.datahub.datasets import dataset_name, downstream_of, upstreams_of
from controlplane.datahub.incident_records import read_incident
from controlplane.datahub.incidents import IncidentRow, active_incidents, read_incidents
from controlplane.datahub.model_risk import RiskMark, risks_of
from controlplane.datahub.models import (
    datahub_champion,
    model_versions,
    models_trained_on,
    read_verdict,
    training_datasets,
)
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import model_urn
from controlplane.errors import (
    Conflict,
    DamagedRecord,
    DataError,
    InputError,
    InternalError,
    KintsugiError,
    NotFound,
    VersionNotFound,
)
from controlplane.frontdoor.drills import DrillBoard, read_latest_drill
from controlplane.frontdoor.served import ServedErrors, read_served
from controlplane.models.governance import GovernanceFinding
from controlplane.models.passport import DRAFT, PassportCheck, show_passport, verify_passport
from controlplane.models.trust import TrustScore
from controlplane.onboard.accept import accept as accept_finding
from controlplane.onboard.contracts import apply_contract_file
from controlplane.pipeline import approve as approve_run
from controlplane.pipeline import reject as reject_run
from controlplane.pipeline import run_pipeline
from controlplane.runs.journal import Event, RunRecord, UnreadableRun, list_runs, load_run, new_run_id, scan_runs
from controlplane.signing import UNTRUSTED_KEY, SigningError
from controlplane.spec import PipelineSpec, list_specs, load_spec
from controlplane.stages.checkpoint import PromoteCheckpoint, load_checkpoint
from controlplane.stages.governance import govern, lineage_of
from controlplane.stages.guarding import context_without_snapshot, guard_table
from controlplane.stages.pin import batch_as_parquet, pin_table
from controlplane.takeback.recovery import is_interrupted, recover_run
from controlplane.takeback.undo import undo as undo_run
from controlplane.vocab import ChangedTable, Policy, RunKind, RunStatus, Stage
from controlplane.watch.cron import next_fire
from controlplane.watch.follow import PassReport, Starter, read_last_pass, run_now, watch_pass, watched_datasets
from controlplane.watch.last_pass import LastPass
from controlplane.watch.postmortem import build_postmortem, read_postmortem
from controlplane.workspace import Workspace
from guard.findings import Finding, GuardReport
from guard.runner import run_guard

__all__ = [
    "PipelineInfo",
    "IncidentInfo",
    "RunListing",
    "parse_now",
    "parse_policy",
    "check_text",
    "check_actor",
    "MAX_ACTOR",
    "pipelines",
    "guard",
    "run",
    "start_run",
    "approve",
    "reject",
    "undo",
    "recover",
    "promote",
    "runs",
    "get_run",
    "incidents",
    "lineage",
    "accept",
    "apply_contract",
    "show_contract",
    "DatasetNode",
    "ModelNode",
    "Lineage",
    "MAX_TEXT",
    "EARLIEST_NOW",
    "watch",
    "postmortem",
    "StageFindings",
    "run_findings",
    "parse_status",
    "PassportView",
    "passport",
    "TrustView",
    "trust",
    "governance",
    "WatchView",
    "watch_state",
    "latest_drill",
]

log = logging.getLogger(__name__)

MAX_TEXT = 2000  # a reason, a note: longer text is refused, never truncated silently
MAX_ACTOR = 120  # who decided: a user, a token's name, an MCP client's name
EARLIEST_NOW = datetime(1990, 1, 1, tzinfo=timezone.utc)
_LATEST_AHEAD = timedelta(days=7)
_START_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class PipelineInfo:
    name: str
    spec: PipelineSpec | None
    last_run: RunRecord | None
    next_run_ms: int | None
    error: KintsugiError | None = None


@dataclass(frozen=True)
class IncidentInfo:
    row: IncidentRow
    at_risk_models: tuple[str, ...]


@dataclass(frozen=True)
class RunListing:
    runs: list[RunRecord]
    unreadable: list[UnreadableRun]


def parse_now(text: str | None) -> int | None:
    """An ISO-8601 instant (UTC when no offset is given) as epoch ms, inside a sane window; None means now."""
    if text is None or text == "":
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InputError(
            f"now {text[:80]!r} is not an ISO-8601 instant",
            "pass e.g. 2026-11-01T12:00:00+00:00, or omit it for the current time",
        ) from exc
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
    latest = datetime.now(timezone.utc) + _LATEST_AHEAD
    if not EARLIEST_NOW <= moment <= latest:
        raise InputError(
            f"now {text!r} is outside {EARLIEST_NOW:%Y-%m-%d} .. {latest:%Y-%m-%d}",
            "pass the instant the data should be judged at (no epoch zero, no far future)",
        )
    return int(moment.timestamp() * 1000)


def parse_policy(policy: str | None) -> Policy | None:
    if policy is None:
        return None
    try:
        return Policy(policy)
    except ValueError:
        raise InputError(
            f"policy {policy[:40]!r} is not known",
            f"use one of {', '.join(p.value for p in Policy)}, or omit it for the spec's",
        ) from None


def check_text(text: str, what: str) -> str:
    """A person's reason: never empty (whitespace is empty), never silently cut."""
    if not text.strip():
        raise InputError(f"{what} is empty", f"say why in a few words (at most {MAX_TEXT} characters)")
    if len(text) > MAX_TEXT:
        raise InputError(f"{what} is {len(text)} characters long", f"keep it under {MAX_TEXT} characters")
    return text.strip()


def check_actor(actor: str) -> str:
    """Who decides, as the front door knows them: a decision without a name is refused, as one without a reason."""
    name = actor.strip()
    if not name or len(name) > MAX_ACTOR or not name.isprintable():
        raise InputError(
            f"the decision's actor {actor[:40]!r} is not a name",
            f"name who decides in at most {MAX_ACTOR} printable characters (the CLI's --as NAME)",
        )
    return name


def pipelines(ws: Workspace, *, now: datetime | None = None) -> list[PipelineInfo]:
    """Each pipeline with its spec (or the error loading it), its last run and its next scheduled run."""
    records = scan_runs(ws)[0]
    found = []
    for name in list_specs(ws):
        last = next((r for r in reversed(records) if r.pipeline == name), None)
        try:
            spec = load_spec(ws, name)
        except KintsugiError as exc:
            found.append(PipelineInfo(name, None, last, None, exc))
            continue
        fire = next_fire(spec.schedule, now or datetime.now(timezone.utc)) if spec.schedule else None
        found.append(PipelineInfo(name, spec, last, int(fire.timestamp() * 1000) if fire else None))
    return found


def guard(ws: Workspace, pipeline: str, data: Path | None = None, now_ms: int | None = None) -> GuardReport:
    """The guard alone, read-only: nothing is written anywhere. `data` is a batch to check as the next one
    (else the table's new rows and its history). An unreadable table is a blocking finding."""
    spec = load_spec(ws, pipeline)
    now_ms = now_ms or int(time.time() * 1000)
    with tempfile.TemporaryDirectory() as scratch, metadata_session(ws, read_only=True) as metadata:
        if data is not None:
            if data.suffix.lower() == ".csv":  # as `land` reads it: the table's column types, as parquet
                data = batch_as_parquet(ws, spec, data, Path(scratch) / "batch.parquet")
            return guard_table(ws, metadata, spec, data, now_ms, as_batch=True).report
        try:
            table = pin_table(ws, spec, Path(scratch) / "pin")
        except DataError as exc:  # a missing or unreadable table is a blocking finding for the guard alone
            context = context_without_snapshot(ws, metadata, spec, now_ms, None, exc.message)
            return run_guard(context)
        return guard_table(ws, metadata, spec, table.path(ws), now_ms).report


def run(
    ws: Workspace,
    pipeline: str,
    policy: str | None = None,
    now_ms: int | None = None,
    listener: Callable[[Event], None] | None = None,
) -> RunRecord:
    chosen = parse_policy(policy)
    return run_pipeline(ws, load_spec(ws, pipeline), policy=chosen, now_ms=now_ms, listener=listener)


def start_run(
    ws: Workspace,
    pipeline: str,
    policy: str | None = None,
    now_ms: int | None = None,
    listener: Callable[[Event], None] | None = None,
    *,
    timeout_s: float = _START_TIMEOUT_S,
) -> str:
    """Start a run in a background thread; return its id once its record is on disk.

    Not a daemon thread: the run goes on when the caller (an HTTP client) goes away, and a stopping server waits
    for it. A run refused at its start (another writer holds the pipeline) raises here."""
    chosen, spec = parse_policy(policy), load_spec(ws, pipeline)
    now_ms = now_ms or int(time.time() * 1000)
    run_id, failure = new_run_id(now_ms), []

    def work() -> None:
        try:
            run_pipeline(ws, spec, policy=chosen, now_ms=now_ms, listener=listener, run_id=run_id)
        except BaseException as exc:  # the run records its own failure; the thread only reports it
            failure.append(exc)
            log.warning("run %s of %s ended with an error: %s", run_id, pipeline, exc)

    thread = threading.Thread(target=work, name=f"kintsugi-run-{run_id}")
    thread.start()
    record, deadline = ws.run_dir(run_id) / "run.json", time.monotonic() + timeout_s
    while not record.is_file() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not record.is_file() and failure:
        error = failure[0]
        if isinstance(error, KintsugiError):
            raise error
        raise InternalError(
            f"run of {pipeline!r} could not start ({type(error).__name__}: {error})",
            "check the server log, then try again",
        ) from error
    return run_id


def approve(
    ws: Workspace,
    run_id: str,
    reason: str,
    now_ms: int | None = None,
    listener: Callable[[Event], None] | None = None,
    *,
    actor: str,
) -> RunRecord:
    """A person's word to go on: a reason and a name at every door, checked before the run is touched."""
    why, by = check_text(reason, "the approval's reason"), check_actor(actor)
    return approve_run(ws, run_id, reason=why, now_ms=now_ms, listener=listener, by=by)


def reject(ws: Workspace, run_id: str, reason: str, *, actor: str) -> RunRecord:
    why, by = check_text(reason, "the rejection's reason"), check_actor(actor)
    return reject_run(ws, run_id, why, by=by)


def accept(
    ws: Workspace,
    run_id: str,
    reason: str,
    findings: list[str] | None = None,
    *,
    actor: str,
    undo: bool = False,
    now_ms: int | None = None,
) -> RunRecord:
    why = check_text(reason, "the withdrawal's reason" if undo else "the acceptance's reason")
    return accept_finding(ws, run_id, why, findings=findings, by=check_actor(actor), undo=undo, now_ms=now_ms)


def undo(ws: Workspace, run_id: str, changed: ChangedTable = ChangedTable.REFUSE) -> RunRecord:
    return undo_run(ws, run_id, changed=changed)


def recover(ws: Workspace, run_id: str, changed: ChangedTable = ChangedTable.REFUSE) -> RunRecord:
    return recover_run(ws, run_id, changed=changed)


def promote(ws: Workspace, model: str, version: int, reason: str, *, actor: str) -> RunRecord:
    if version < 1:
        raise InputError(f"version {version} is not a model version", "versions count from 1")
    why, by = check_text(reason, "the promotion's reason"), check_actor(actor)
    return promote_version(ws, model, version, reason=why, by=by)


def _as_seen(ws: Workspace, record: RunRecord) -> RunRecord:
    """A record whose process died mid-run reads as interrupted, whatever it says of itself."""
    if record.status in (RunStatus.RUNNING, RunStatus.UNDOING) and is_interrupted(ws, record):
        record.status = RunStatus.INTERRUPTED
    return record


def runs(ws: Workspace, pipeline: str | None = None, limit: int | None = None, status: str | None = None) -> RunListing:
    """Runs, newest first (only those with `status`, as seen now, when given), and the run folders whose record
    cannot be read."""
    wanted = parse_status(status)
    records, unreadable = scan_runs(ws)
    chosen = [_as_seen(ws, r) for r in reversed(records) if pipeline is None or r.pipeline == pipeline]
    chosen = [r for r in chosen if wanted is None or r.status is wanted]
    return RunListing(chosen[:limit] if limit else chosen, unreadable)


def parse_status(status: str | None) -> RunStatus | None:
    if status is None:
        return None
    try:
        return RunStatus(status)
    except ValueError:
        raise InputError(
            f"status {status[:40]!r} is not a run status",
            f"use one of {', '.join(s.value for s in RunStatus)}, or omit it for every run",
        ) from None


def get_run(ws: Workspace, run_id: str) -> RunRecord:
    return _as_seen(ws, load_run(ws, run_id))


@dataclass(frozen=True)
class StageFindings:
    """What the guard found at one stage of a run (detect: the data as it came; verify: the healed copy)."""

    seq: int
    stage: str
    verdict: str | None
    findings: tuple[Finding, ...]


def run_findings(ws: Workspace, run_id: str) -> list[StageFindings]:
    """The guard's findings at each stage of a run that ran it, in the order they were found."""
    record = get_run(ws, run_id)
    found = []
    for event in record.events:
        if event.stage not in (Stage.DETECT.value, Stage.VERIFY.value) or "findings" not in event.evidence:
            continue
        try:
            findings = tuple(Finding.from_dict(f) for f in event.evidence["findings"])
        except (KeyError, TypeError, ValueError) as exc:
            raise DamagedRecord(
                f"the record of run {run_id} is damaged: the findings of event {event.seq} ({event.stage}) do "
                f"not read back ({type(exc).__name__}: {exc})",
                f"`kintsugi runs show {run_id}` shows the record as it is",
            ) from exc
        verdict = event.evidence.get("verdict")
        found.append(StageFindings(event.seq, event.stage, str(verdict) if verdict else None, findings))
    return found


def incidents(ws: Workspace, *, active_only: bool = False) -> list[IncidentInfo]:
    """DataHub's incidents, with the models downstream of each that are at risk from it: only an ACTIVE incident
    puts a model at risk; a resolved one (healed, or cleared at its source) names none."""
    with metadata_session(ws, read_only=True) as metadata:
        rows = [r for r in read_incidents(metadata) if not active_only or r.state == "ACTIVE"]
        return [IncidentInfo(r, _at_risk(metadata, r)) for r in rows]


def _at_risk(metadata: MetadataPort, row: IncidentRow) -> tuple[str, ...]:
    if row.state != "ACTIVE":
        return ()
    return tuple(models_trained_on(metadata, downstream_of(metadata, set(row.datasets))))


@dataclass(frozen=True)
class DatasetNode:
    urn: str
    name: str
    upstreams: tuple[str, ...]
    active_incidents: tuple[str, ...]


@dataclass(frozen=True)
class ModelNode:
    urn: str
    model: str
    version: int
    verdict: str | None
    trained_on: tuple[str, ...]
    champion: bool = False  # DataHub's champion tag is on it


@dataclass(frozen=True)
class Lineage:
    datasets: list[DatasetNode]
    models: list[ModelNode]


def lineage(ws: Workspace) -> Lineage:
    """Datasets with their upstreams and open incidents, and the model versions trained on them."""
    with metadata_session(ws, read_only=True) as metadata:
        active = active_incidents(metadata)
        datasets = []
        for urn in metadata.urns("dataset"):
            datasets.append(
                DatasetNode(
                    urn,
                    dataset_name(metadata, urn) or urn,
                    upstreams_of(metadata, urn),
                    tuple(sorted(active.get(urn, []))),
                )
            )
        models, champions = [], {}
        for name, version in model_versions(metadata):
            urn = model_urn(name, version)
            if name not in champions:
                champions[name] = datahub_champion(metadata, name)
            trained_on = training_datasets(metadata, urn)
            verdict = read_verdict(metadata, urn)
            models.append(ModelNode(urn, name, version, verdict, trained_on, version in champions[name]))
    return Lineage(datasets, models)


def apply_contract(ws: Workspace, file: Path, reference: Path | None = None, now_ms: int | None = None) -> str:
    """Validate an ODCS contract, keep it under contracts/, and write it (and a reference profile) to DataHub."""
    return apply_contract_file(ws, file, reference, now_ms or int(time.time() * 1000))


def show_contract(ws: Workspace, dataset: str) -> str:
    with metadata_session(ws, read_only=True) as metadata:
        raw = read_raw_contract(metadata, dataset)
    if raw is None:
        raise NotFound(f"DataHub holds no contract for {dataset}", "apply one with `kintsugi contract apply FILE`")
    return raw


def watch(ws: Workspace, policy: str | None = None, now_ms: int | None = None, start: Starter = run_now) -> PassReport:
    """One reconcile pass of `kintsugi watch` over every pipeline (`controlplane.watch.follow`)."""
    return watch_pass(ws, now_ms=now_ms, policy=parse_policy(policy), start=start)


def postmortem(ws: Workspace, incident: str) -> tuple[str, bool]:
    """The postmortem of a resolved incident: the one DataHub holds (True), else built now from the stores (False)."""
    if not incident.startswith("urn:li:incident:"):
        raise InputError(f"{incident[:120]!r} is not an incident URN", "list incidents with `kintsugi incidents`")
    with metadata_session(ws, read_only=True) as metadata:
        held = read_postmortem(metadata, incident)
        if held is not None:
            return held, True
        info = read_incident(metadata, incident)
        if info is None:
            raise NotFound(f"DataHub holds no incident {incident}", "list incidents with `kintsugi incidents`")
        specs = [load_spec(ws, name) for name in list_specs(ws)]
        built = build_postmortem(ws, metadata, incident, list_runs(ws), watched_datasets(metadata, specs))
    if built is None:
        raise Conflict(
            f"incident {incident} is {info.state}: a postmortem is written once it is resolved",
            "resolve it (or let the loop heal it), then run `kintsugi watch --once`",
        )
    return built.markdown, False


@dataclass(frozen=True)
class PassportView:
    model: str
    version: int
    document: dict[str, Any]
    check: PassportCheck


def passport(ws: Workspace, model: str, version: int | None = None) -> PassportView:
    """A version's passport as DataHub holds it (default: the champion's) and its verification now: valid, altered,
    untrusted_key, unsigned, legacy_hmac, copies_differ or missing (`controlplane.models.passport`). No trusted
    key to check it with is untrusted_key: nothing vouches for it. A candidate paused at the promote gate has no
    passport yet: its draft (what approving would sign) is shown, `draft` and not ok."""
    try:
        document = show_passport(ws, model, version)
    except VersionNotFound:
        draft = _paused_draft(ws, model, version)
        if draft is None:
            raise
        return draft
    number = int(document.get("body", {}).get("version") or version or 0)
    try:
        check = verify_passport(ws, model, number)
    except SigningError as exc:
        check = PassportCheck(False, UNTRUSTED_KEY, (f"no trusted key: {exc.message}; {exc.fix}",))
    return PassportView(model, number, document, check)


def _paused_draft(ws: Workspace, model: str, version: int | None) -> PassportView | None:
    """The unsigned passport of `model` v`version` kept by the run paused at the promote gate with it, if one is."""
    for record in reversed(list_runs(ws)):
        if record.pipeline != model or record.status is not RunStatus.PAUSED:
            continue
        checkpoint = load_checkpoint(record)
        if isinstance(checkpoint, PromoteCheckpoint) and checkpoint.trained.version == version:
            if not checkpoint.passport_draft:
                return None  # paused before drafts were kept
            why = (
                f"not signed: v{version} waits at the promote gate of run {record.run_id} "
                f"({checkpoint.verdict}); this is what approving it would sign, before the gate decides anew"
            )
            document = {"body": checkpoint.passport_draft, "draft": {"run_id": record.run_id}}
            return PassportView(model, version, document, PassportCheck(False, DRAFT, (why,)))
    return None


@dataclass(frozen=True)
class TrustView:
    """A version's trust score as its signed passport states it, and whether that passport verifies now."""

    model: str
    version: int
    trust: TrustScore
    check: PassportCheck


def trust(ws: Workspace, model: str, version: int | None = None) -> TrustView:
    """The trust score (with its named deductions) of a version (default: the champion), read from its passport;
    a passport that states none cannot be read as trusted."""
    view = passport(ws, model, version)
    stated = view.document.get("body", {}).get("trust")
    try:
        score = TrustScore.from_dict(stated)
    except (TypeError, ValueError, KeyError) as exc:
        raise DamagedRecord(
            f"the passport of {model} v{view.version} states no readable trust score ({type(exc).__name__})",
            f"`kintsugi passport verify {model} {view.version}` says whether the passport is intact",
        ) from exc
    return TrustView(model, view.version, score, view.check)


def governance(ws: Workspace, pipeline: str) -> tuple[GovernanceFinding, ...]:
    """The governance scan of a pipeline's training lineage as DataHub holds it now, read-only and before any
    training: what the gate would block on, ask a person to review, or only note."""
    spec = load_spec(ws, pipeline)
    with metadata_session(ws, read_only=True) as metadata:
        return govern(metadata, spec, lineage_of(metadata, spec))


@dataclass(frozen=True)
class WatchView:
    last: LastPass | None  # what the last pass decided; None before the first
    at_risk: list[RiskMark]  # the model versions DataHub holds at risk (ACTIVE while the version serves)
    records: list[RunRecord]  # the records of watch passes that wrote something, and rollbacks, newest first


def watch_state(ws: Workspace, limit: int = 10) -> WatchView:
    """The watch as it stands: its last pass, the versions at risk, what it rolled back or flagged."""
    last = read_last_pass(ws)
    with metadata_session(ws, read_only=True) as metadata:
        marks = risks_of(metadata)
    acted = [r for r in runs(ws).runs if r.kind in (RunKind.WATCH, RunKind.ROLLBACK)]
    return WatchView(last, marks, acted[:limit])


def served(ws: Workspace) -> tuple[ServedErrors, ...]:
    """Each pipeline's newest served-error measurement, with and without the gate (`controlplane.frontdoor.served`)."""
    return read_served(ws)


def latest_drill(ws: Workspace) -> DrillBoard | None:
    """The newest scoreboard a drill kept under `<workspace>/drills/` (`controlplane.frontdoor.drills`)."""
    return read_latest_drill(ws)
