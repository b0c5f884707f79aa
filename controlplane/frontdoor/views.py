"""The JSON shapes of the service layer's results, in one adapter for the HTTP API and the MCP server: the
pydantic models they declare (OpenAPI response models, MCP output schemas) and the functions that build them
from the service layer's dataclasses. Paths in them are workspace-relative.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any, Optional

from pydantic import BaseModel, Field

from controlplane.errors import KintsugiError
from controlplane.frontdoor import services
from controlplane.runs.journal import Event, RunRecord
from controlplane.vocab import RunStatus
from guard.findings import GuardReport

__all__ = [
    "ErrorBody",
    "ErrorResponse",
    "Stage",
    "RunSummary",
    "EventOut",
    "LedgerEntryOut",
    "RunOut",
    "RunList",
    "RunEvents",
    "RunStarted",
    "PipelineOut",
    "PipelineList",
    "FindingOut",
    "GuardOut",
    "IncidentOut",
    "IncidentList",
    "PassportOut",
    "PromoteOut",
    "DrillOut",
    "DatasetNode",
    "ModelNode",
    "Edge",
    "LineageOut",
    "error_body",
    "run_summary",
    "run_out",
    "event_out",
    "runs_out",
    "run_events_out",
    "pipelines_out",
    "guard_out",
    "incidents_out",
    "lineage_out",
    "promote_out",
    "FINDING_KEYS",
]

FINDING_KEYS = ("kind", "dataset", "column", "severity", "observed", "expected", "playbook", "message")


class ErrorBody(BaseModel):
    code: str = Field(description="Stable error code (KintsugiError.code)")
    message: str = Field(description="What was wrong")
    fix: str = Field(description="What to do next")


class ErrorResponse(BaseModel):
    error: ErrorBody


class Stage(BaseModel):
    seq: int
    stage: str
    status: str


class RunSummary(BaseModel):
    run_id: str
    pipeline: str
    policy: str
    started_ms: int
    status: str = Field(description=" | ".join(s.value for s in RunStatus))
    outcome: str
    guard_verdict: Optional[str] = Field(None, description="The guard's verdict at detect (CLEAN | BLOCKED)")
    gate: Optional[str] = Field(None, description="The gate a paused run waits at (publish | promote | rollback)")
    stages: list[Stage]


class EventOut(BaseModel):
    seq: int = Field(description="1, 2, 3... within the run; the SSE event id")
    stage: str
    status: str
    summary: str
    evidence: dict[str, Any]
    at_ms: int


class LedgerEntryOut(BaseModel):
    seq: int
    kind: str
    target: str
    detail: dict[str, Any]
    state: str = Field(description="intended | done | rolled-back: each write is recorded before it is made")
    result: dict[str, Any] = {}


class RunOut(RunSummary):
    events: list[EventOut]
    ledger: list[LedgerEntryOut]


class UnreadableRunOut(BaseModel):
    run_id: str
    why: str


class RunList(BaseModel):
    runs: list[RunSummary]
    unreadable: list[UnreadableRunOut] = Field([], description="Run folders whose record cannot be read")


class RunEvents(BaseModel):
    run_id: str
    status: str
    outcome: str
    events: list[EventOut]


class RunStarted(BaseModel):
    run_id: str
    pipeline: str
    run_url: str
    events_url: str
    stream_url: str


class PipelineOut(BaseModel):
    name: str
    feature_table: Optional[str] = None
    policy: Optional[str] = None
    schedule: Optional[str] = Field(None, description="Cron schedule (UTC) `kintsugi serve` runs it on")
    next_run_ms: Optional[int] = None
    last_run: Optional[RunSummary] = None
    error: Optional[ErrorBody] = Field(None, description="Set when the spec does not load")


class PipelineList(BaseModel):
    pipelines: list[PipelineOut]


class FindingOut(BaseModel):
    kind: str
    dataset: str
    column: Optional[str]
    severity: str
    observed: Any
    expected: Any
    playbook: Optional[str]
    message: str


class GuardOut(BaseModel):
    dataset: str
    verdict: str = Field(description="CLEAN | BLOCKED")
    findings: list[FindingOut]
    checks: int = Field(description="How many checks ran")


class IncidentOut(BaseModel):
    urn: str
    title: Optional[str]
    state: str
    datasets: list[str]
    message: Optional[str]
    created_ms: int
    at_risk_models: list[str]


class IncidentList(BaseModel):
    incidents: list[IncidentOut]


class PassportOut(BaseModel):
    model: str
    version: Optional[int]
    passport: dict[str, Any] = Field(description="The signed Model Passport as DataHub holds it")


class PromoteOut(BaseModel):
    model: str
    version: int
    previous: Optional[int] = Field(description="The version that was champion before")
    run_id: str = Field(description="The record of this promotion (it can be undone like a run)")


class DrillOut(BaseModel):
    drill: dict[str, Any] = Field(description="The drill's scoreboard, as chaos.drill.run_drill reports it")


class DatasetNode(BaseModel):
    urn: str
    name: str
    upstreams: list[str]
    active_incidents: list[str]


class ModelNode(BaseModel):
    urn: str
    model: str
    version: int
    verdict: Optional[str]
    trained_on: list[str]


class Edge(BaseModel):
    source: str = Field(alias="from")
    to: str

    model_config = {"populate_by_name": True}


class LineageOut(BaseModel):
    datasets: list[DatasetNode]
    models: list[ModelNode]
    edges: list[Edge]


def _json(value: Any) -> Any:
    """JSON-safe, the way run.json is written."""
    return json.loads(json.dumps(value, default=str))


def error_body(exc: KintsugiError) -> dict[str, str]:
    return {"code": exc.code, "message": exc.message, "fix": exc.fix}


def run_summary(record: RunRecord) -> dict[str, Any]:
    """A run without its evidence: who, when, status, and the stage timeline."""
    detect = next((e for e in record.events if e.stage == "detect"), None)
    gate = (record.checkpoint or {}).get("gate") if record.status is RunStatus.PAUSED else None
    return {
        "run_id": record.run_id,
        "pipeline": record.pipeline,
        "policy": record.policy.value,
        "started_ms": record.started_ms,
        "status": record.status.value,
        "outcome": record.outcome,
        "guard_verdict": detect.evidence.get("verdict") if detect else None,
        "gate": gate,
        "stages": [{"seq": e.seq, "stage": e.stage, "status": e.status} for e in record.events],
    }


def event_out(event: Event) -> dict[str, Any]:
    return _json(asdict(event))


def run_out(record: RunRecord) -> dict[str, Any]:
    """A whole run: its summary, every event with its evidence, and the ledger of external writes."""
    return {
        **run_summary(record),
        "events": [event_out(e) for e in record.events],
        "ledger": _json([asdict(e) for e in record.ledger]),
    }


def runs_out(listing: services.RunListing) -> dict[str, Any]:
    return {
        "runs": [run_summary(r) for r in listing.runs],
        "unreadable": [{"run_id": u.run_id, "why": u.why} for u in listing.unreadable],
    }


def run_events_out(record: RunRecord, after: int) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "status": record.status.value,
        "outcome": record.outcome,
        "events": [event_out(e) for e in record.events if e.seq > after],
    }


def pipelines_out(infos: list[services.PipelineInfo]) -> dict[str, Any]:
    rows = []
    for info in infos:
        row: dict[str, Any] = {"name": info.name, "last_run": run_summary(info.last_run) if info.last_run else None}
        if info.error is not None or info.spec is None:
            row["error"] = error_body(info.error) if info.error else None
        else:
            row.update(
                feature_table=info.spec.feature_table,
                policy=info.spec.policy.value,
                schedule=info.spec.schedule,
                next_run_ms=info.next_run_ms,
            )
        rows.append(row)
    return {"pipelines": rows}


def guard_out(report: GuardReport) -> dict[str, Any]:
    data = report.to_dict()
    findings = [{k: f[k] for k in FINDING_KEYS} for f in data["findings"]]
    return _json(
        {"dataset": data["dataset"], "verdict": data["verdict"], "findings": findings, "checks": len(data["outcomes"])}
    )


def incidents_out(infos: list[services.IncidentInfo]) -> dict[str, Any]:
    return {
        "incidents": [
            {
                "urn": i.row.urn,
                "title": i.row.title,
                "state": i.row.state,
                "datasets": list(i.row.datasets),
                "message": i.row.message,
                "created_ms": i.row.created_ms,
                "at_risk_models": list(i.at_risk_models),
            }
            for i in infos
        ]
    }


def lineage_out(lineage: services.Lineage) -> dict[str, Any]:
    datasets = [
        {**asdict(d), "upstreams": list(d.upstreams), "active_incidents": list(d.active_incidents)}
        for d in lineage.datasets
    ]
    models = [
        {**asdict(m), "trained_on": list(m.trained_on)}
        for m in sorted(lineage.models, key=lambda m: (m.model, m.version))
    ]
    edges = [{"from": up, "to": d.urn} for d in lineage.datasets for up in d.upstreams]
    edges += [{"from": t, "to": m.urn} for m in lineage.models for t in m.trained_on]
    return {"datasets": datasets, "models": models, "edges": edges}


def promote_out(record: RunRecord) -> dict[str, Any]:
    event = record.events[-1]
    return {
        "model": record.pipeline,
        "version": int(event.evidence["version"]),
        "previous": event.evidence.get("previous"),
        "run_id": record.run_id,
    }
