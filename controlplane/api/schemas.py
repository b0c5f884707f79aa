"""Typed result shapes the front doors declare: OpenAPI response models and MCP output schemas.

`controlplane.operations` returns plain JSON; the API and the MCP server validate it into these.
"""
from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, Field

__all__ = [
    "ErrorBody", "ErrorResponse", "Stage", "RunSummary", "EventOut", "LedgerEntryOut", "RunOut", "RunList",
    "RunEvents", "RunStarted", "PipelineOut", "PipelineList", "FindingOut", "GuardOut", "IncidentOut",
    "IncidentList", "PassportOut", "PromoteOut", "DrillOut", "DatasetNode", "ModelNode", "Edge", "LineageOut",
]


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
    status: str = Field(description="running | paused | promoted | clean | needs-review | planned | blocked | "
                                    "rejected | failed | undone")
    outcome: str
    guard_verdict: Optional[str] = Field(None, description="The guard's verdict at detect (CLEAN | BLOCKED)")
    gate: Optional[str] = Field(None, description="The ratify gate a paused run waits at (publish | promote)")
    stages: list[Stage]


class EventOut(BaseModel):
    seq: int = Field(description="1, 2, 3... within the run; the SSE event id")
    stage: str
    status: str
    summary: str
    evidence: dict[str, Any]
    at_ms: int


class LedgerEntryOut(BaseModel):
    kind: str
    target: str
    detail: dict[str, Any]


class RunOut(RunSummary):
    events: list[EventOut]
    ledger: list[LedgerEntryOut]


class RunList(BaseModel):
    runs: list[RunSummary]


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
