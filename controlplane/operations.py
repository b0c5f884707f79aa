"""The operations every front door offers (HTTP API, MCP server, scheduler): plain JSON in, plain JSON out.

A thin facade over services, gates, the loop, the journal and passports. It decides nothing itself: it
parses what front doors cannot (ISO instants, policies), calls the one service layer and shapes the result
as JSON-safe dicts. Errors stay in the one tree (`KintsugiError`); each front door maps them in one place.
"""
from __future__ import annotations

import json
import logging
import multiprocessing
import threading
import time
from dataclasses import asdict
from datetime import datetime, timezone
from queue import Empty
from typing import Any, Callable

from controlplane.errors import KintsugiError, RunError
from controlplane.journal import Event, RunRecord, load_run, new_run_id
from controlplane.journal import list_runs as journal_runs
from controlplane.workspace import Workspace

__all__ = [
    "RunNotFound", "InvalidInput", "DrillsNotInstalled", "MUTATING", "parse_now", "list_pipelines", "guard",
    "run", "start_run", "list_runs", "get_run", "run_events", "list_incidents", "get_passport", "approve",
    "reject", "undo", "promote", "drill", "lineage", "run_summary",
]

log = logging.getLogger(__name__)

MUTATING = frozenset({"run", "approve", "reject", "undo", "promote", "drill"})
"""Operations that write (runs, DataHub, MLflow, data): switched off in read-only mode, token-gated over HTTP."""

_FINDING_KEYS = ("kind", "dataset", "column", "severity", "observed", "expected", "playbook", "message")
_START_TIMEOUT_S = 60.0


class RunNotFound(RunError):
    code = "run_not_found"


class InvalidInput(KintsugiError):
    code = "invalid_input"


class DrillsNotInstalled(KintsugiError):
    code = "drills_not_installed"


def _json(value: Any) -> Any:
    """JSON-safe, the way run.json is written (paths and other objects as text)."""
    return json.loads(json.dumps(value, default=str))


def parse_now(text: str | None) -> int | None:
    """An ISO-8601 instant (UTC when no offset is given) as epoch ms; None means the current time."""
    if text is None or text == "":
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise InvalidInput(f"now {text!r} is not an ISO-8601 instant",
                           "pass e.g. 2026-11-01T12:00:00+00:00, or omit it for the current time") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def _check_policy(policy: str | None) -> None:
    from controlplane.spec import POLICIES

    if policy is not None and policy not in POLICIES:
        raise InvalidInput(f"policy {policy!r} is not known", f"use one of {', '.join(POLICIES)}, or omit it "
                           "for the spec's policy")


def _load_run(ws: Workspace, run_id: str) -> RunRecord:
    if not run_id or "/" in run_id or run_id.startswith(".") or not (ws.run_dir(run_id) / "run.json").is_file():
        raise RunNotFound(f"no run {run_id!r} in {ws.root}", "list runs with `kintsugi runs` or GET /runs")
    return load_run(ws, run_id)


def run_summary(record: RunRecord) -> dict[str, Any]:
    """A run without its evidence: who, when, status, and the stage timeline."""
    detect = next((e for e in record.events if e.stage == "detect"), None)
    return {"run_id": record.run_id, "pipeline": record.pipeline, "policy": record.policy,
            "started_ms": record.started_ms, "status": record.status, "outcome": record.outcome,
            "guard_verdict": detect.evidence.get("verdict") if detect else None,
            "gate": record.state.get("gate") if record.status == "paused" else None,
            "stages": [{"seq": e.seq, "stage": e.stage, "status": e.status} for e in record.events]}


def _event(event: Event) -> dict[str, Any]:
    return _json(asdict(event))


def _run(record: RunRecord) -> dict[str, Any]:
    """A whole run: its summary, every event with its evidence, and the ledger of external writes."""
    return {**run_summary(record), "events": [_event(e) for e in record.events],
            "ledger": _json([asdict(e) for e in record.ledger])}


def list_pipelines(ws: Workspace, *, now: datetime | None = None) -> list[dict[str, Any]]:
    """Each pipeline spec with its schedule, next scheduled run and last run (its verdict and outcome)."""
    from controlplane.spec import list_specs, load_spec

    runs = journal_runs(ws)
    rows = []
    for name in list_specs(ws):
        last = next((r for r in reversed(runs) if r.pipeline == name), None)
        row: dict[str, Any] = {"name": name, "last_run": run_summary(last) if last else None}
        try:
            spec = load_spec(ws, name)
        except KintsugiError as exc:
            rows.append({**row, "error": {"code": exc.code, "message": exc.message, "fix": exc.fix}})
            continue
        rows.append({**row, "feature_table": spec.feature_table, "policy": spec.policy, "schedule": spec.schedule,
                     "next_run_ms": _next_fire(spec.schedule, now)})
    return rows


def _next_fire(schedule: str | None, now: datetime | None) -> int | None:
    if schedule is None:
        return None
    from controlplane.scheduler import next_fire

    return int(next_fire(schedule, now or datetime.now(timezone.utc)).timestamp() * 1000)


def guard(ws: Workspace, pipeline: str, now_ms: int | None = None) -> dict[str, Any]:
    """The guard alone, read-only: the verdict and each finding with its evidence."""
    from controlplane.services import guard_pipeline

    report = guard_pipeline(ws, pipeline, None, now_ms).to_dict()
    findings = [{k: f[k] for k in _FINDING_KEYS} for f in report["findings"]]
    return _json({"dataset": report["dataset"], "verdict": report["verdict"], "findings": findings,
                  "checks": len(report["outcomes"])})


def run(ws: Workspace, pipeline: str, policy: str | None = None, now_ms: int | None = None,
        listener: Callable[[Event], None] | None = None) -> dict[str, Any]:
    """One run of the loop, to its end (or its ratify gate)."""
    from controlplane.loop import run_pipeline
    from controlplane.spec import load_spec

    _check_policy(policy)
    spec = load_spec(ws, pipeline)
    return _run(run_pipeline(ws, spec, policy=policy, now_ms=now_ms, listener=listener))


def start_run(ws: Workspace, pipeline: str, policy: str | None = None, now_ms: int | None = None,
              listener: Callable[[Event], None] | None = None, *, timeout_s: float = _START_TIMEOUT_S) -> str:
    """Start a run in a background thread and return its id once its record is on disk.

    The thread is not a daemon: the run goes on when the caller (an HTTP client) goes away, and a stopping
    server waits for it. A run refused at the start (another run holds the pipeline) raises here.
    """
    from controlplane.loop import run_pipeline
    from controlplane.spec import load_spec

    _check_policy(policy)
    spec = load_spec(ws, pipeline)
    now_ms = now_ms or int(time.time() * 1000)
    run_id = new_run_id(now_ms)
    failure: list[BaseException] = []

    def work() -> None:
        try:
            run_pipeline(ws, spec, policy=policy, now_ms=now_ms, listener=listener, run_id=run_id)
        except BaseException as exc:  # the run records its own failure; the thread only reports it
            failure.append(exc)
            log.warning("run %s of %s ended with an error: %s", run_id, pipeline, exc)

    thread = threading.Thread(target=work, name=f"kintsugi-run-{run_id}")
    thread.start()
    record = ws.run_dir(run_id) / "run.json"
    deadline = time.monotonic() + timeout_s
    while not record.is_file() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    if not record.is_file() and failure:
        error = failure[0]
        if isinstance(error, KintsugiError):
            raise error
        raise KintsugiError(f"run of {pipeline!r} could not start ({error.__class__.__name__}: {error})",
                            "check the server log, then try again") from error
    return run_id


def list_runs(ws: Workspace, pipeline: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """Runs, newest first, without their evidence."""
    records = [r for r in journal_runs(ws) if pipeline is None or r.pipeline == pipeline]
    newest = list(reversed(records))
    return [run_summary(r) for r in (newest[:limit] if limit else newest)]


def get_run(ws: Workspace, run_id: str) -> dict[str, Any]:
    return _run(_load_run(ws, run_id))


def run_events(ws: Workspace, run_id: str, after: int = 0) -> dict[str, Any]:
    """A run's events with `seq` greater than `after`, and whether more can come."""
    record = _load_run(ws, run_id)
    return {"run_id": run_id, "status": record.status, "outcome": record.outcome,
            "events": [_event(e) for e in record.events if e.seq > after]}


def list_incidents(ws: Workspace, active_only: bool = False) -> list[dict[str, Any]]:
    from controlplane.services import list_incidents as incidents

    return _json(incidents(ws, active_only=active_only))


def get_passport(ws: Workspace, model: str, version: int | None = None) -> dict[str, Any]:
    from controlplane.passports import show_passport

    passport = show_passport(ws, model, version)
    return _json({"model": model, "version": passport.get("body", {}).get("version", version), "passport": passport})


def approve(ws: Workspace, run_id: str, now_ms: int | None = None,
            listener: Callable[[Event], None] | None = None) -> dict[str, Any]:
    """Continue a run paused at a ratify gate (it re-verifies first); it may pause again at the next gate."""
    from controlplane.gates import approve as approve_run

    _load_run(ws, run_id)
    return _run(approve_run(ws, run_id, now_ms=now_ms, listener=listener))


def reject(ws: Workspace, run_id: str, reason: str) -> dict[str, Any]:
    from controlplane.gates import reject as reject_run

    if not reason.strip():
        raise InvalidInput("a rejection needs a reason", "say why the run is stopped")
    _load_run(ws, run_id)
    return _run(reject_run(ws, run_id, reason))


def undo(ws: Workspace, run_id: str) -> dict[str, Any]:
    from controlplane.gates import undo as undo_run

    _load_run(ws, run_id)
    return _run(undo_run(ws, run_id))


def promote(ws: Workspace, model: str, version: int) -> dict[str, Any]:
    """Move `champion` to a version through the same gate as the CLI: only an APPROVED version passes."""
    from controlplane.gates import promote_version

    if version < 1:
        raise InvalidInput(f"version {version} is not a model version", "versions count from 1")
    previous = promote_version(ws, model, version)
    return {"model": model, "version": version, "previous": previous}


def drill(scenarios: list[str] | None = None, seeds: int = 1, controls: int = 2, sweep_seeds: int = 0,
          say: Callable[[str], None] | None = None) -> dict[str, Any]:
    """A chaos drill (`chaos.drill.run_drill`): scenarios x seeds in throwaway estates, never the workspace.

    The defaults are a quick drill (one seed, two clean controls, no sweep); the scoreboard comes back as JSON.
    """
    try:
        from chaos.drill import DrillPlan, default_scenarios, run_drill
    except ImportError as exc:
        raise DrillsNotInstalled("chaos drills are not installed in this Kintsugi",
                                 "install a Kintsugi with the `chaos` package (chaos.drill.run_drill), "
                                 "or run the loop with `run`") from exc
    known = default_scenarios()
    unknown = sorted(set(scenarios or ()) - set(known))
    if unknown:
        raise InvalidInput(f"unknown drill scenario(s): {', '.join(unknown)}", f"use some of: {', '.join(known)}")
    if not 1 <= seeds <= 10 or not 0 <= controls <= 50 or not 0 <= sweep_seeds <= seeds:
        raise InvalidInput(f"seeds={seeds}, controls={controls}, sweep_seeds={sweep_seeds}",
                           "use 1..10 seeds, 0..50 controls and at most `seeds` sweep seeds")
    plan = DrillPlan(tuple(scenarios or known), tuple(range(1, seeds + 1)), controls, sweep_seeds)
    return _json(_in_child_process(run_drill, plan, say or (lambda _: None)))


def _in_child_process(run_drill: Callable[..., Any], plan: Any, say: Callable[[str], None]) -> Any:
    """A drill changes process-wide state (environment, thread limits): run it in a spawned child so a
    serving process, and the runs it is driving, are left alone. Progress lines come back as they are said."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_drill_child, args=(run_drill, plan, queue), name="kintsugi-drill", daemon=True)
    child.start()
    try:
        while True:
            try:
                kind, value = queue.get(timeout=1.0)
            except Empty:
                if not child.is_alive():
                    raise KintsugiError(f"the drill process ended without a scoreboard (exit {child.exitcode})",
                                        "check the server log; run `kintsugi drill` by hand to see why") from None
                continue
            if kind == "say":
                say(value)
            elif kind == "done":
                return value
            else:
                error = KintsugiError(value[1], value[2])
                error.code = value[0]
                raise error
    finally:
        child.join(timeout=5)


def _drill_child(run_drill: Callable[..., Any], plan: Any, queue: Any) -> None:
    try:
        queue.put(("done", run_drill(plan, say=lambda line: queue.put(("say", line)))))
    except KintsugiError as exc:
        queue.put(("error", (exc.code, exc.message, exc.fix)))
    except Exception as exc:  # reported to the parent, which raises it in the error tree
        queue.put(("error", ("drill", f"the drill failed: {exc.__class__.__name__}: {exc}",
                             "run `kintsugi drill` by hand to see the whole error")))


def lineage(ws: Workspace) -> dict[str, Any]:
    """Datasets with their upstreams and open incidents, and the model versions trained on them."""
    from controlplane.datahub.connect import metadata_session

    with metadata_session(ws, read_only=True) as metadata:
        active = _active_incidents(metadata)
        datasets = [_dataset_node(metadata, urn, active) for urn in metadata.urns("dataset")]
        models = [_model_node(metadata, urn) for urn in metadata.urns("mlModel")]
    models = [m for m in models if m is not None]
    edges = [{"from": up, "to": d["urn"]} for d in datasets for up in d["upstreams"]]
    edges += [{"from": t, "to": m["urn"]} for m in models for t in m["trained_on"]]
    return {"datasets": datasets, "models": sorted(models, key=lambda m: (m["model"], m["version"])), "edges": edges}


def _active_incidents(metadata: Any) -> dict[str, list[str]]:
    from datahub.metadata import schema_classes as s

    by_dataset: dict[str, list[str]] = {}
    for urn in metadata.urns("incident"):
        info = metadata.aspect(urn, s.IncidentInfoClass)
        if info is not None and info.status.state == s.IncidentStateClass.ACTIVE:
            for entity in info.entities:
                by_dataset.setdefault(entity, []).append(urn)
    return by_dataset


def _dataset_node(metadata: Any, urn: str, active: dict[str, list[str]]) -> dict[str, Any]:
    from datahub.metadata import schema_classes as s

    properties = metadata.aspect(urn, s.DatasetPropertiesClass)
    upstream = metadata.aspect(urn, s.UpstreamLineageClass)
    return {"urn": urn, "name": (properties.name if properties and properties.name else urn),
            "upstreams": sorted(u.dataset for u in (upstream.upstreams if upstream else [])),
            "active_incidents": sorted(active.get(urn, []))}


def _model_node(metadata: Any, urn: str) -> dict[str, Any] | None:
    from datahub.metadata import schema_classes as s

    properties = metadata.aspect(urn, s.MLModelPropertiesClass)
    if properties is None or properties.version is None or not properties.groups:
        return None
    training = metadata.aspect(urn, s.TrainingDataClass)
    verdict = (properties.customProperties or {}).get("kintsugi.verdict")
    return {"urn": urn, "model": properties.groups[0].split(",")[1].rstrip(")"),
            "version": int(properties.version.versionTag or 0), "verdict": verdict,
            "trained_on": sorted(d.dataset for d in (training.trainingData if training else []))}
