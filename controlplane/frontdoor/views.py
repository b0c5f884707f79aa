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
from controlplane.frontdoor.served import ServedErrors
from controlplane.models.governance import GovernanceFinding
from controlplane.models.passport import PassportCheck
from controlplane.runs.journal import Event, RunRecord
from controlplane.vocab import RunKind, RunStatus
from guard.findings import GuardReport

__all__ = [
    "ErrorBody",
    "ErrorResponse",
    "HealthOut",
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
    "TrustOut",
    "trust_out",
    "GovernanceOut",
    "governance_out",
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
    "NamedRowOut",
    "RowsOut",
    "RunFindingOut",
    "StageFindingsOut",
    "RunFindings",
    "VerificationOut",
    "ScenarioScoreOut",
    "DrillBoardOut",
    "LatestDrillOut",
    "DecisionOut",
    "LastPassOut",
    "RiskOut",
    "WatchOut",
    "run_findings_out",
    "passport_out",
    "latest_drill_out",
    "watch_out",
    "FINDING_KEYS",
]

FINDING_KEYS = ("kind", "dataset", "column", "severity", "observed", "expected", "playbook", "message")


class ErrorBody(BaseModel):
    code: str = Field(description="Stable error code (KintsugiError.code)")
    message: str = Field(description="What was wrong")
    fix: str = Field(description="What to do next")


class ErrorResponse(BaseModel):
    error: ErrorBody


class HealthOut(BaseModel):
    status: str
    workspace: str = Field(description="The workspace's id ('new' before its first write)")
    read_only: bool = Field(description="The server refuses every write")
    writes_need_token: bool = Field(description="Writes need `Authorization: Bearer $KINTSUGI_API_TOKEN`")
    reads_need_token: bool = Field(description="Reads need it too (a server bound beyond loopback)")


class Stage(BaseModel):
    seq: int
    stage: str
    status: str


class RunSummary(BaseModel):
    run_id: str
    pipeline: str
    kind: str = Field("run", description=" | ".join(k.value for k in RunKind))
    policy: str
    started_ms: int
    status: str = Field(description=" | ".join(s.value for s in RunStatus))
    outcome: str
    guard_verdict: Optional[str] = Field(None, description="The guard's verdict at detect (CLEAN | BLOCKED)")
    gate: Optional[str] = Field(None, description="The gate a paused run waits at (publish | promote | rollback)")
    candidate: Optional[int] = Field(
        None, description="The model version a run paused at the promote gate waits with (its passport is a draft)"
    )
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


class FindingBrief(BaseModel):
    kind: str
    column: Optional[str] = None
    message: str = Field(description="Its first 200 characters")


class Comparison(BaseModel):
    metric: str
    candidate: Optional[float] = None
    champion: Optional[float] = None
    candidate_version: Optional[int] = None
    champion_version: Optional[int] = None


class RunDecision(BaseModel):
    """A run's decision first, in under 2 KB: what was decided and why, what a person must decide, the next call.
    The whole run (every event's evidence, the ledger) is `get_run_detail`'s."""

    run_id: str
    pipeline: str
    status: str = Field(description=" | ".join(s.value for s in RunStatus))
    outcome: str = Field(description="Its first 300 characters")
    guard_verdict: Optional[str] = Field(None, description="The guard's verdict at detect (CLEAN | BLOCKED)")
    blocking: list[FindingBrief] = Field([], description="The blocking findings at detect, at most 5")
    blocking_more: int = Field(0, description="Blocking findings left out of `blocking`")
    verdict: Optional[str] = Field(None, description="The model gate's verdict, where the run reached it")
    reasons: list[str] = Field([], description="The gate's reasons, at most 4, each its first 200 characters")
    comparison: Optional[Comparison] = None
    to_decide: Optional[str] = Field(None, description="What a person must decide, where the run waits for one")
    next: str = Field(description="The call that moves on from here")


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


class NamedRowOut(BaseModel):
    at_ms: int
    key: str


class RowsOut(BaseModel):
    column: str = Field(description="The time column the window is on")
    after_ms: Optional[int] = Field(description="Rows after this instant (None: from the first row)")
    through_ms: Optional[int] = Field(description="...through this one (None: to the last row)")
    also: list[NamedRowOut] = Field([], description="Rows outside the window, one by one")


class RunFindingOut(FindingOut):
    check: str = Field(description="The registered check that found it")
    rows: Optional[RowsOut] = Field(description="The rows it concerns; None: every row of the table")


class StageFindingsOut(BaseModel):
    seq: int = Field(description="The event that recorded them")
    stage: str = Field(description="detect (the data as it came) | verify (the healed copy)")
    verdict: Optional[str]
    findings: list[RunFindingOut]


class RunFindings(BaseModel):
    run_id: str
    stages: list[StageFindingsOut]


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


class VerificationOut(BaseModel):
    ok: bool
    status: str = Field(
        description="valid | altered | untrusted_key | unsigned | legacy_hmac | copies_differ | missing | draft (a "
        "candidate paused at the promote gate: what approving would sign, not signed yet)"
    )
    reasons: list[str]


class PassportOut(BaseModel):
    model: str
    version: Optional[int]
    passport: dict[str, Any] = Field(description="The signed Model Passport as DataHub holds it")
    verification: Optional[VerificationOut] = Field(
        None, description="Both copies (DataHub's, MLflow's) checked now against the trusted key and the model files"
    )


class DeductionOut(BaseModel):
    reason: str
    points: int
    evidence: str


class TrustOut(BaseModel):
    model: str
    version: int
    score: int = Field(description="100 minus the deductions")
    band: str = Field(description="high (from 80) | medium (from 60) | low")
    deductions: list[DeductionOut]
    verification: VerificationOut = Field(description="Whether the passport that states the score verifies now")


class GovernanceFindingOut(BaseModel):
    kind: str
    severity: str = Field(description="block | review | exception | noted")
    column: Optional[str] = Field(description="The trained column it concerns; none: no trained column")
    dataset: str
    source_column: Optional[str]
    marker: Optional[str] = Field(description="The tag or glossary term URN")
    message: str


class GovernanceOut(BaseModel):
    pipeline: str
    findings: list[GovernanceFindingOut]


class PromoteOut(BaseModel):
    model: str
    version: int
    previous: Optional[int] = Field(description="The version that was champion before")
    run_id: str = Field(description="The record of this promotion (it can be undone like a run)")


class DrillOut(BaseModel):
    drill: dict[str, Any] = Field(description="The drill's scoreboard, as chaos.drill.demo.run_drill reports it")


class ScenarioScoreOut(BaseModel):
    name: str
    recall: Optional[float] = Field(description="Share of seeds on which the failure was detected")
    named: Optional[float] = Field(description="Share of seeds on which it was named right")
    passed: bool
    expected: str
    outcomes: dict[str, int]


class DrillBoardOut(BaseModel):
    folder: str = Field(description="Where the scoreboard is kept, workspace-relative")
    written_ms: int
    pipeline: str
    now: str
    runs: int
    detection_recall: Optional[float]
    localization_rate: Optional[float]
    controls: int
    false_blocks: int = Field(description="Clean controls the guard blocked")
    scenarios: list[ScenarioScoreOut]
    failed: list[str]


class LatestDrillOut(BaseModel):
    scoreboard: Optional[DrillBoardOut] = Field(description="None: no drill kept in this workspace yet")
    folder: str = Field(description="Where drills are kept: POST /drills, or `kintsugi drill --out FOLDER/NAME`")


class ServedErrorsOut(BaseModel):
    pipeline: str
    metric: str = Field(description="The spec's metric (an error: lower is better)")
    rows: int = Field(description="The rows served")
    without_gate: float = Field(description="A retrain without the gate, serving the feed as sent")
    with_gate: float = Field(description="The champion after the loop's run, serving the batch the loop healed")
    clean: float = Field(description="That champion, serving the batch as a working feed sends it")
    champion: int
    measured_at_ms: int
    note: str = Field(description="What the gap measures, in words")


class ServedList(BaseModel):
    served: list[ServedErrorsOut] = Field(description="Each pipeline's newest measurement; none before `kintsugi demo`")


class DecisionOut(BaseModel):
    pipeline: str
    action: str = Field(description="healthy | rolled-back | proposed | waiting | flagged | reported | watched | none")
    champion: Optional[int]
    target: Optional[int] = Field(description="The version a rollback moves (or would move) to")
    why: str
    at_risk: list[str] = Field(description="'v2 <- cause urn' per version at risk")
    record: Optional[str] = Field(description="The run record that wrote it, if it wrote anything")
    message: str


class LastPassOut(BaseModel):
    at_ms: int
    decisions: list[DecisionOut]
    changes: list[str]
    retrains: list[str]
    errors: list[str]


class RiskOut(BaseModel):
    urn: str
    model: str
    version: int
    caused_by: str
    state: str = Field(description="ACTIVE while the version is the champion, else RESOLVED")
    message: str


class WatchOut(BaseModel):
    last_pass: Optional[LastPassOut] = Field(description="None: the watch has not run in this workspace")
    at_risk: list[RiskOut]
    records: list[RunSummary] = Field(description="Watch passes that wrote something, and rollbacks, newest first")


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
    champion: bool = Field(False, description="DataHub's champion tag is on this version")


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
    detect = _detect_event(record)
    paused = (record.checkpoint or {}) if record.status is RunStatus.PAUSED else {}
    gate, trained = paused.get("gate"), paused.get("trained") or {}
    return {
        "run_id": record.run_id,
        "pipeline": record.pipeline,
        "kind": record.kind.value,
        "policy": record.policy.value,
        "started_ms": record.started_ms,
        "status": record.status.value,
        "outcome": record.outcome,
        "guard_verdict": detect.evidence.get("verdict") if detect else None,
        "gate": gate,
        "candidate": trained.get("version") if gate == "promote" else None,
        "stages": [{"seq": e.seq, "stage": e.stage, "status": e.status} for e in record.events],
    }


def event_out(event: Event) -> dict[str, Any]:
    return _json(asdict(event))


def run_decision(record: RunRecord) -> dict[str, Any]:
    """The run's decision first (`RunDecision`): the summary an agent reads before asking for the evidence."""
    detect, trained = _detect_event(record), _trained(record)
    blocking = [f for f in (detect.evidence.get("findings") or []) if f.get("severity") == "block"] if detect else []
    gate = next((e for e in reversed(record.events) if e.stage == "promote" and "verdict" in e.evidence), None)
    paused = (record.checkpoint or {}) if record.status is RunStatus.PAUSED else {}
    reasons = list(gate.evidence.get("reasons") or []) if gate else list(paused.get("reasons") or [])
    return {
        "run_id": record.run_id,
        "pipeline": record.pipeline,
        "status": record.status.value,
        "outcome": _cut(record.outcome, 300),
        "guard_verdict": detect.evidence.get("verdict") if detect else None,
        "blocking": [
            {"kind": f.get("kind"), "column": f.get("column"), "message": _cut(str(f.get("message", "")), 200)}
            for f in blocking[:5]
        ],
        "blocking_more": max(0, len(blocking) - 5),
        "verdict": gate.evidence.get("verdict") if gate else paused.get("verdict"),
        "reasons": [_cut(str(r), 200) for r in reasons[:4]],
        "comparison": _comparison(trained),
        "to_decide": _to_decide(record, paused),
        "next": _next_call(record, bool(blocking)),
    }


def _detect_event(record: RunRecord) -> Event | None:
    return next((e for e in record.events if e.stage == "detect"), None)


def _trained(record: RunRecord) -> Event | None:
    return next((e for e in reversed(record.events) if e.stage == "train" and e.status == "trained"), None)


def _comparison(trained: Event | None) -> dict[str, Any] | None:
    if trained is None:
        return None
    candidate, champion = trained.evidence.get("candidate") or {}, trained.evidence.get("champion") or {}
    metric = next(iter(candidate), None)
    if metric is None:
        return None
    return {
        "metric": metric,
        "candidate": candidate.get(metric),
        "champion": champion.get(metric),
        "candidate_version": trained.evidence.get("version"),
        "champion_version": trained.evidence.get("champion_version"),
    }


def _to_decide(record: RunRecord, paused: dict[str, Any]) -> str | None:
    if record.status is RunStatus.PAUSED:
        return f"the {paused.get('gate', 'promote')} gate waits: approve or reject run {record.run_id}, with a reason"
    if record.status is RunStatus.NEEDS_REVIEW:
        return f"the candidate of run {record.run_id} needs review: promote it with a reason, or leave the champion"
    return None


def _next_call(record: RunRecord, blocked: bool) -> str:
    rid = record.run_id
    if record.status is RunStatus.PAUSED:
        return f"approve(run_id={rid!r}, reason=...) or reject(run_id={rid!r}, reason=...)"
    if record.status is RunStatus.INTERRUPTED:
        return f"recover(run_id={rid!r})"
    if record.status is RunStatus.BLOCKED and blocked:
        return f"list_incidents(); a false block: accept(run_id={rid!r}, reason=..., findings=['KIND:COLUMN'])"
    return f"get_run_detail(run_id={rid!r}) for every event's evidence"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


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


def run_findings_out(run_id: str, stages: list[services.StageFindings]) -> dict[str, Any]:
    return _json(
        {
            "run_id": run_id,
            "stages": [
                {
                    "seq": st.seq,
                    "stage": st.stage,
                    "verdict": st.verdict,
                    "findings": [
                        {**{k: f.to_dict()[k] for k in FINDING_KEYS}, "check": f.check, "rows": f.to_dict()["rows"]}
                        for f in st.findings
                    ],
                }
                for st in stages
            ],
        }
    )


def passport_out(view: services.PassportView) -> dict[str, Any]:
    return {
        "model": view.model,
        "version": view.version,
        "passport": view.document,
        "verification": _verification(view.check),
    }


def _verification(check: PassportCheck) -> dict[str, Any]:
    return {"ok": check.ok, "status": check.status, "reasons": list(check.reasons)}


def trust_out(view: services.TrustView) -> dict[str, Any]:
    return {
        "model": view.model,
        "version": view.version,
        "score": view.trust.score,
        "band": view.trust.band.value,
        "deductions": [d.to_dict() for d in view.trust.deductions],
        "verification": _verification(view.check),
    }


def governance_out(pipeline: str, findings: tuple[GovernanceFinding, ...]) -> dict[str, Any]:
    return {"pipeline": pipeline, "findings": [f.to_dict() for f in findings]}


def served_out(measured: tuple[ServedErrors, ...]) -> dict[str, Any]:
    return {"served": [m.to_dict() for m in measured]}


def latest_drill_out(ws_folder: str, board: services.DrillBoard | None) -> dict[str, Any]:
    return {"scoreboard": _json(asdict(board)) if board is not None else None, "folder": ws_folder}


def watch_out(view: services.WatchView) -> dict[str, Any]:
    return {
        "last_pass": _json(asdict(view.last)) if view.last is not None else None,
        "at_risk": [
            {
                "urn": m.urn,
                "model": m.model,
                "version": m.version,
                "caused_by": m.caused_by,
                "state": m.state,
                "message": m.message,
            }
            for m in view.at_risk
        ],
        "records": [run_summary(r) for r in view.records],
    }
