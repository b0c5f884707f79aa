"""`kintsugi watch`: follow DataHub for what it learns about every pipeline's feature table and all its upstreams —
incidents raised or resolved by anyone, assertion runs failing, deprecations, schema changes — and react.

A pass is level-based (controller-runtime's Reconcile): it reads the current state and acts on the difference
with what was already done, never on the event that woke it, so a restart reconciles from the current state and
never replays a burst:

    observe     the signals of every watched dataset, compared with `<workspace>/watch.json` only to report
                what changed since the last pass (the state file is rewritten after each pass, with what the
                pass decided: `controlplane.watch.last_pass`, which the operator console shows)
    champion    per pipeline, under its lock: versions at risk marked; an unsafe champion rolled back, proposed,
                reported or flagged under the pipeline's policy (`controlplane.champion.rollout`); what was acted on is
                read from the run records
    retrain     per pipeline with an incident resolved on its datasets after its last run: a run of the loop
                (a busy pipeline is retried next pass; quiet hours defer it) (`controlplane.watch.retrain`)
    postmortem  per resolved incident whose postmortem is missing or out of date (`controlplane.watch.postmortem`)

`watch_pass` is the one handler: `kintsugi watch [--once]`, the `Watcher` thread of `kintsugi serve`, and the
DataHub Actions action (`controlplane.watch.actions`, for a team with DataHub's event stream) all call it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import threading
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

from controlplane.champion.rollout import ChampionOutcome, reconcile_champion
from controlplane.datahub.assertions import read_assertion
from controlplane.datahub.connect import metadata_session
from controlplane.datahub.datasets import read_schema, walk_upstream
from controlplane.datahub.deprecations import is_deprecated
from controlplane.datahub.history import failing_assertions_at
from controlplane.datahub.incident_records import all_incidents, read_incident
from controlplane.datahub.model_risk import AT_RISK_TYPE
from controlplane.datahub.port import MetadataPort
from controlplane.errors import DataError, KintsugiError, PipelineBusy
from controlplane.pipeline import run_pipeline
from controlplane.runs.context import open_run
from controlplane.runs.journal import RunRecord, list_runs, new_run_id
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import PipelineSpec, list_specs, load_spec
from controlplane.vocab import LedgerKind, Policy, RunKind, RunStatus, Stage
from controlplane.watch.last_pass import LastPass, last_pass_from, last_pass_json, last_pass_of
from controlplane.watch.postmortem import Postmortem, build_postmortem, markdown_path, postmortem_mcps, write_markdown
from controlplane.watch.retrain import due_retrains
from controlplane.workspace import Workspace

__all__ = [
    "PassReport",
    "watch_pass",
    "watched_datasets",
    "Watcher",
    "Starter",
    "run_now",
    "state_path",
    "read_last_pass",
    "on_change",
    "WATCH_FILE",
]

log = logging.getLogger(__name__)

WATCH_FILE = "watch.json"
Starter = Callable[[Workspace, str, int], str]  # (workspace, pipeline, now_ms) -> a run id


@dataclass
class PassReport:
    now_ms: int
    changes: list[str] = field(default_factory=list)
    champions: list[ChampionOutcome] = field(default_factory=list)
    retrains: list[dict[str, Any]] = field(default_factory=list)
    postmortems: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def unsafe(self) -> bool:
        """A champion stays unsafe: flagged, waiting for approval, or only reported."""
        return any(c.action in ("flagged", "proposed", "waiting", "reported") for c in self.champions)

    def lines(self) -> list[str]:
        out = [f"change: {c}" for c in self.changes] or ["no change in DataHub since the last pass"]
        for c in self.champions:
            out.append(
                f"{c.pipeline}: {c.action}: {c.message or c.decision.why}"
                + (f" (record {c.record})" if c.record else "")
            )
            out.extend(f"  at risk: {mark}" for mark in c.at_risk)
        out.extend(f"retrain {r['pipeline']}: {r['status']}" for r in self.retrains)
        out.extend(f"postmortem {p['incident']}: {p['status']}" for p in self.postmortems)
        out.extend(f"error: {e}" for e in self.errors)
        return out


def state_path(ws: Workspace) -> Any:
    return ws.root / WATCH_FILE


def run_now(ws: Workspace, pipeline: str, now_ms: int) -> str:
    """Start a run and wait for its end (`kintsugi watch`): the run id."""
    return run_pipeline(ws, load_spec(ws, pipeline), now_ms=now_ms).run_id


def _specs(ws: Workspace, report: PassReport) -> list[PipelineSpec]:
    specs = []
    for name in list_specs(ws):
        try:
            specs.append(load_spec(ws, name))
        except KintsugiError as exc:
            report.errors.append(f"{name}: {exc}")
    return specs


def watched_datasets(port: MetadataPort, specs: list[PipelineSpec]) -> dict[str, set[str]]:
    """Per pipeline: its feature table and every upstream, any depth."""
    return {
        spec.name: {spec.feature_table, *(n.urn for n in walk_upstream(port, spec.feature_table))} for spec in specs
    }


def watch_pass(
    ws: Workspace, *, now_ms: int | None = None, policy: Policy | None = None, start: Starter = run_now
) -> PassReport:
    """One reconcile pass over every pipeline."""
    ws.check_writable()  # a pass ends writing watch.json: a read-only workspace is refused before it acts
    now_ms = now_ms or int(time.time() * 1000)
    report = PassReport(now_ms)
    specs = _specs(ws, report)
    with metadata_session(ws, read_only=True) as metadata:
        lineages = watched_datasets(metadata, specs)
        signals = _signals(metadata, set().union(*lineages.values()) if lineages else set(), now_ms)
    report.changes = _changes(_load_state(ws).get("signals", {}), signals)
    for spec in specs:
        _guarded(report, spec.name, functools.partial(_reconcile, ws, spec, policy, now_ms, report))
    _retrain(ws, specs, lineages, now_ms, policy, start, report)
    _postmortems(ws, specs, lineages, now_ms, policy, report)
    kept = last_pass_of(now_ms, report.champions, report.changes, report.retrains, report.errors)
    _save_state(ws, {"version": 1, "last_pass_ms": now_ms, "signals": signals, "last_pass": last_pass_json(kept)})
    return report


def _guarded(report: PassReport, name: str, step: Callable[[], object]) -> None:
    """One pipeline's step; a busy pipeline is retried on the next pass, an error is reported, never fatal."""
    try:
        step()
    except PipelineBusy as exc:
        report.errors.append(f"{name}: busy, retried on the next pass ({exc.message})")
    except KintsugiError as exc:
        report.errors.append(f"{name}: {exc}")


# -- observe ------------------------------------------------------------------------------------------------


def _signals(port: MetadataPort, datasets: set[str], now_ms: int) -> dict[str, Any]:
    incidents = {}
    for incident in all_incidents(port):
        if incident.custom_type != AT_RISK_TYPE and set(incident.datasets) & datasets:
            incidents[incident.urn] = {
                "state": incident.state,
                "title": incident.title,
                "actor": incident.status.by,
                "datasets": sorted(set(incident.datasets) & datasets),
            }
    failing = sorted(a["assertion"] for a in failing_assertions_at(port, datasets, now_ms))
    shapes = {}
    for dataset in sorted(datasets):
        schema = read_schema(port, dataset)
        fields = sorted((c.name, c.native_type) for c in schema) if schema else []
        shapes[dataset] = {
            "schema": hashlib.sha256(json.dumps(fields).encode()).hexdigest()[:16],
            "deprecated": is_deprecated(port, dataset),
        }
    return {"incidents": incidents, "failing": failing, "datasets": shapes}


def _changes(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    changes = []
    old_incidents = before.get("incidents", {})
    for urn, info in sorted(now["incidents"].items()):
        was = (old_incidents.get(urn) or {}).get("state")
        if was != info["state"]:
            verb = "raised" if was is None and info["state"] == "ACTIVE" else info["state"].lower()
            where = ", ".join(info["datasets"])
            changes.append(f"incident {urn} {verb} by {info['actor']} on {where}: {info['title']}")
    old_failing = set(before.get("failing", []))
    changes += [f"assertion {a} failing" for a in now["failing"] if a not in old_failing]
    changes += [f"assertion {a} passing again" for a in sorted(old_failing - set(now["failing"]))]
    old_shapes = before.get("datasets", {})
    for dataset, shape in sorted(now["datasets"].items()):
        was = old_shapes.get(dataset)
        if was and was["schema"] != shape["schema"]:
            changes.append(f"schema of {dataset} changed")
        if shape["deprecated"] and not (was or {}).get("deprecated"):
            changes.append(f"{dataset} deprecated")
    return changes


def _load_state(ws: Workspace) -> dict[str, Any]:
    try:
        found = json.loads(state_path(ws).read_text())
    except (OSError, ValueError):
        return {}  # no state (or an unreadable one): every signal is reported as new; actions do not depend on it
    return found if isinstance(found, dict) else {}


def read_last_pass(ws: Workspace) -> LastPass | None:
    """What the last pass decided (`controlplane.watch.last_pass`); None before the first pass, or when the state
    file is from before decisions were kept. A state file that does not read back is a DataError naming the fix."""
    path = state_path(ws)
    try:
        found = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DataError(f"{WATCH_FILE} cannot be read ({exc})", _REWRITE) from exc
    if not isinstance(found, dict) or found.get("last_pass") is None:
        return None
    try:
        return last_pass_from(found["last_pass"])
    except ValueError as exc:
        raise DataError(f"{WATCH_FILE}: {exc}", _REWRITE) from exc


_REWRITE = "run `kintsugi watch --once`: a pass writes it again from the current state"


def _save_state(ws: Workspace, state: dict[str, Any]) -> None:
    path = state_path(ws)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(state, indent=2, sort_keys=True))
    os.replace(temporary, path)


# -- retrain ------------------------------------------------------------------------------------------------


def _retrain(
    ws: Workspace,
    specs: list[PipelineSpec],
    lineages: dict[str, set[str]],
    now_ms: int,
    policy: Policy | None,
    start: Starter,
    report: PassReport,
) -> None:
    with metadata_session(ws, read_only=True) as metadata:
        due = due_retrains(metadata, specs, lineages, list_runs(ws), now_ms)
    policies = {spec.name: policy or spec.policy for spec in specs}
    for item in due:
        entry: dict[str, Any] = {"pipeline": item.pipeline, "after": list(item.incidents)}
        if not policies[item.pipeline].writes:
            entry["status"] = f"would start a run (dry-run): {', '.join(item.incidents)} resolved since its last run"
        elif item.quiet:
            entry["status"] = "deferred: inside the pipeline's quiet hours"
        else:
            try:
                run_id = start(ws, item.pipeline, now_ms)
                entry.update(run_id=run_id, status=f"started run {run_id} (after {', '.join(item.incidents)} resolved)")
            except PipelineBusy as exc:
                entry["status"] = f"busy, retried on the next pass ({exc.message})"
            except KintsugiError as exc:
                entry["status"] = f"not started: {exc}"
        report.retrains.append(entry)


def _reconcile(ws: Workspace, spec: PipelineSpec, policy: Policy | None, now_ms: int, report: PassReport) -> None:
    report.champions.append(reconcile_champion(ws, spec, policy or spec.policy, now_ms))


# -- postmortems --------------------------------------------------------------------------------------------


def _postmortems(
    ws: Workspace,
    specs: list[PipelineSpec],
    lineages: dict[str, set[str]],
    now_ms: int,
    policy: Policy | None,
    report: PassReport,
) -> None:
    records = list_runs(ws)
    by_home: dict[str, list[Postmortem]] = {}
    with metadata_session(ws, read_only=True) as metadata:
        for urn in metadata.urns("incident"):
            postmortem = build_postmortem(ws, metadata, urn, records, lineages)
            if postmortem is None or not _watched(postmortem, lineages):
                continue
            home = _home(postmortem, records, lineages)
            if postmortem_mcps(metadata, postmortem) or not _markdown_current(ws, postmortem):
                by_home.setdefault(home, []).append(postmortem)
    for spec in specs:
        if by_home.get(spec.name):
            _guarded(
                report,
                spec.name,
                functools.partial(
                    _write_postmortems, ws, spec, by_home[spec.name], now_ms, policy or spec.policy, report
                ),
            )


def _watched(postmortem: Postmortem, lineages: dict[str, set[str]]) -> bool:
    return any(set(postmortem.datasets) & datasets for datasets in lineages.values())


def _home(postmortem: Postmortem, records: list[RunRecord], lineages: dict[str, set[str]]) -> str:
    """The pipeline whose record writes it: the healing run's, else the first that reads its datasets."""
    healer = next((r.pipeline for r in records if r.run_id == postmortem.run_id), None)
    return healer or next(n for n, d in sorted(lineages.items()) if set(postmortem.datasets) & d)


def _markdown_current(ws: Workspace, postmortem: Postmortem) -> bool:
    if postmortem.run_id is None:
        return True  # no healing run: DataHub and the writing record's folder hold it
    path = markdown_path(ws, postmortem, postmortem.run_id)
    return path.is_file() and path.read_text() == postmortem.markdown


def _write_postmortems(
    ws: Workspace, spec: PipelineSpec, postmortems: list[Postmortem], now_ms: int, policy: Policy, report: PassReport
) -> None:
    if not policy.writes:
        report.postmortems.extend(
            {"incident": p.incident, "status": "reported (dry-run): not written"} for p in postmortems
        )
        return
    run_id = new_run_id(now_ms)
    with pipeline_lock(ws, spec.name, f"watch {run_id}"):
        record = RunRecord(
            run_id,
            spec.name,
            policy,
            int(time.time() * 1000),
            now_ms,
            pid=os.getpid(),
            kind=RunKind.WATCH,
            postmortems=tuple(p.incident for p in postmortems),
        )
        with open_run(ws, spec, record) as run:
            for postmortem in postmortems:
                with run.journal.writing(
                    LedgerKind.DATAHUB, postmortem.incident, aspect="incidentNotes", what="postmortem"
                ):
                    run.metadata.emit(postmortem_mcps(run.metadata, postmortem), now_ms)
                path = write_markdown(ws, postmortem, postmortem.run_id or run_id)
                run.event(
                    Stage.WATCH,
                    "postmortem",
                    f"postmortem of {postmortem.incident} written to DataHub and {path}",
                    incident=postmortem.incident,
                    path=path,
                )
                report.postmortems.append(
                    {"incident": postmortem.incident, "status": f"written ({path})", "path": path, "record": run_id}
                )
            run.finish(RunStatus.WATCHED, f"{len(postmortems)} postmortem(s) written")


# -- the event stream and the server ------------------------------------------------------------------------


def on_change(
    ws: Workspace, urns: list[str], *, now_ms: int | None = None, start: Starter = run_now
) -> PassReport | None:
    """The DataHub Actions entry: a change event names some URNs; when one is watched (a dataset, or an
    incident or assertion on one), run a whole pass — the event only says "look", the pass decides."""
    specs = _specs(ws, PassReport(0))  # a spec that does not load is left to the pass to report
    with metadata_session(ws, read_only=True) as metadata:
        datasets = set().union(*watched_datasets(metadata, specs).values()) if specs else set()
        relevant = any(urn in datasets or _on(metadata, urn, datasets) for urn in urns)
    return watch_pass(ws, now_ms=now_ms, start=start) if relevant else None


def _on(port: MetadataPort, urn: str, datasets: set[str]) -> bool:
    if urn.startswith("urn:li:incident:"):
        incident = read_incident(port, urn)
        return incident is not None and bool(set(incident.datasets) & datasets)
    if urn.startswith("urn:li:assertion:"):
        assertion = read_assertion(port, urn)
        return assertion is not None and assertion.dataset in datasets
    return False


class Watcher:
    """`kintsugi serve`'s watch: a pass every `interval_s` in one small thread; retrains start through `start`."""

    def __init__(self, ws: Workspace, start: Starter, *, interval_s: float = 60.0) -> None:
        self.ws = ws
        self.interval_s = interval_s
        self.start_run = start  # the server's: services.start_run, each run in its own thread
        self.last: PassReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self, now_ms: int | None = None) -> PassReport:
        self.last = watch_pass(self.ws, now_ms=now_ms, start=self.start_run)
        for line in self.last.lines():
            log.info("watch: %s", line)
        return self.last

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="kintsugi-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """For `create_app(lifespans=[...])`: the watch runs while the server does."""
        self.start()
        try:
            yield
        finally:
            self.stop()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.tick()
            except Exception:  # the watch outlives one bad pass (a store briefly down, say)
                log.exception("watch: pass failed")
