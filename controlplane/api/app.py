"""The HTTP API: the CLI's operations as JSON routes, a run's live events and the operator page.

A thin front door: each route parses input, calls `controlplane.frontdoor.services`, and returns `controlplane.frontdoor.views`'
JSON; errors are translated in `controlplane.api.errors`. `controlplane.api.guard` (an ASGI layer in front of
every route, /mcp included) checks Host and Origin, refuses oversized bodies before reading them, and checks
the bearer token before a route runs. Other packages add routes (`routers`, `endpoints`): the MCP server at
/mcp, the drills.
"""

from __future__ import annotations

from contextlib import AsyncExitStack, asynccontextmanager
from importlib import resources
from typing import Annotated, Any, AsyncIterator, Literal, Optional, Sequence

from fastapi import APIRouter, Depends, FastAPI, Header, Path, Query, Request
from fastapi.responses import HTMLResponse, Response, StreamingResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, Field
from starlette.routing import Route
from starlette.types import ASGIApp

from controlplane.api.errors import ERROR_RESPONSES, install_error_handlers
from controlplane.api.guard import RequestGuard
from controlplane.api.sse import parse_last_event_id, tail_events
from controlplane.frontdoor import services, views
from controlplane.frontdoor.access import ApiSettings, check_exposure
from controlplane.frontdoor.services import MAX_TEXT
from controlplane.runs.identity import load_identity
from controlplane.workspace import Workspace

__all__ = [
    "create_app",
    "RunRequest",
    "ApproveRequest",
    "RejectRequest",
    "AcceptRequest",
    "PromoteRequest",
    "bearer",
    "RunId",
    "Name",
]

bearer = HTTPBearer(
    auto_error=False,
    description="KINTSUGI_API_TOKEN: every route that changes something needs it "
    "(and every route, on a server bound beyond loopback)",
)
RunId = Annotated[str, Path(max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$")]
Name = Annotated[str, Path(max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]
Version = Annotated[int, Path(ge=1, le=1_000_000_000)]


class RunRequest(BaseModel):
    policy: Optional[Literal["auto", "ratify", "dry-run"]] = Field(None, description="Default: the spec's policy")
    now: Optional[str] = Field(None, max_length=64, description="Evaluate as of this ISO-8601 instant (default: now)")


class ApproveRequest(BaseModel):
    reason: str = Field(max_length=MAX_TEXT, description="Why it may go on (kept in the run, the passport and DataHub)")
    now: Optional[str] = Field(None, max_length=64, description="Evaluate as of this ISO-8601 instant (default: now)")


class RejectRequest(BaseModel):
    reason: str = Field(max_length=MAX_TEXT, description="Why the run is stopped")


class AcceptRequest(BaseModel):
    reason: str = Field(max_length=MAX_TEXT, description="Why this is the new normal")
    findings: Optional[list[Annotated[str, Field(max_length=200)]]] = Field(
        None, max_length=100, description="KIND:COLUMN (or KIND) of each finding; default: every warning of the run"
    )
    undo: bool = Field(False, description="Take back the run's accepted blocks")


class PromoteRequest(BaseModel):
    reason: str = Field(max_length=MAX_TEXT, description="Why this version should serve")


def create_app(
    ws: Workspace,
    settings: ApiSettings,
    *,
    scheduler: Any = None,
    routers: Sequence[APIRouter] = (),
    endpoints: Sequence[tuple[str, ASGIApp]] = (),
    lifespans: Sequence[Any] = (),
) -> ASGIApp:
    """The API over one workspace. Refuses (raises) a configuration that would expose it without a token."""
    check_exposure(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for context in lifespans:
                await stack.enter_async_context(context())
            if scheduler is not None:
                scheduler.start()
                stack.callback(scheduler.stop)
            yield

    app = FastAPI(
        title="Kintsugi",
        version="0.1.0",
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
        description="A self-healing continuous-training control plane: the CLI's operations over HTTP. "
        "Routes that change something need `Authorization: Bearer $KINTSUGI_API_TOKEN`.",
    )
    install_error_handlers(app)
    reads = [Depends(bearer)] if settings.reads_need_token else []
    app.include_router(_page_routes(ws, settings))
    app.include_router(_read_routes(ws), dependencies=reads)
    app.include_router(
        _write_routes(ws, settings.actor), dependencies=[Depends(bearer)], include_in_schema=settings.mutating
    )
    for router in routers:
        app.include_router(router, dependencies=[Depends(bearer)], include_in_schema=settings.mutating)
    for path, endpoint in endpoints:  # an ASGI endpoint at one path, e.g. the MCP server at /mcp
        app.router.routes.append(Route(path, endpoint=endpoint, include_in_schema=False))
    return RequestGuard(app, settings)


def _static(name: str) -> str:
    return resources.files("controlplane.api").joinpath(f"static/{name}").read_text(encoding="utf-8")


def _page_routes(ws: Workspace, settings: ApiSettings) -> APIRouter:
    """What anyone who reaches the port may read (`controlplane.api.guard.PUBLIC_PATHS`): the operator console and
    the liveness answer, which tells the console whether it may offer writes."""
    router = APIRouter()

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def operator_page() -> str:
        return _static("index.html")

    @router.get("/console.js", include_in_schema=False)
    def console_script() -> Response:
        return Response(_static("console.js"), media_type="text/javascript; charset=utf-8")

    @router.get("/health", response_model=views.HealthOut, tags=["meta"])
    def health() -> Any:
        identity = load_identity(ws)
        return {
            "status": "ok",
            "workspace": identity.workspace_id if identity else "new",
            "read_only": settings.read_only,
            "writes_need_token": settings.token is not None,
            "reads_need_token": settings.reads_need_token,
        }

    return router


def _read_routes(ws: Workspace) -> APIRouter:
    router = APIRouter()

    @router.get("/pipelines", response_model=views.PipelineList, tags=["pipelines"])
    def list_pipelines() -> Any:
        """Pipelines with their schedule and last run."""
        return views.pipelines_out(services.pipelines(ws))

    @router.get("/pipelines/{name}/guard", response_model=views.GuardOut, tags=["pipelines"])
    def guard(name: Name, now: Annotated[Optional[str], Query(max_length=64)] = None) -> Any:
        """The guard now, read-only: CLEAN or BLOCKED with findings."""
        return views.guard_out(services.guard(ws, name, None, services.parse_now(now)))

    @router.get("/runs", response_model=views.RunList, tags=["runs"])
    def list_runs(
        pipeline: Annotated[Optional[str], Query(max_length=64)] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 50,
        status: Annotated[Optional[str], Query(max_length=32, description="Only runs in this state: paused...")] = None,
    ) -> Any:
        """Runs, newest first, with their stage timeline; unreadable run records are listed apart."""
        return views.runs_out(services.runs(ws, pipeline, limit, status))

    @router.get("/runs/{run_id}", response_model=views.RunOut, tags=["runs"])
    def get_run(run_id: RunId) -> Any:
        """A run: its timeline (every event with its evidence) and its ledger of external writes."""
        return views.run_out(services.get_run(ws, run_id))

    @router.get("/runs/{run_id}/decision", response_model=views.RunDecision, tags=["runs"])
    def run_decision(run_id: RunId) -> Any:
        """A run's decision first, in under 2 KB: status, blocking findings, the gate's verdict and reasons,
        candidate vs champion, what a person must decide, and the next call."""
        return views.run_decision(services.get_run(ws, run_id))

    @router.get("/runs/{run_id}/findings", response_model=views.RunFindings, tags=["runs"])
    def run_findings(run_id: RunId) -> Any:
        """What the guard found at each stage that ran it, with the rows each finding names."""
        return views.run_findings_out(run_id, services.run_findings(ws, run_id))

    @router.get("/runs/{run_id}/events", response_model=views.RunEvents, tags=["runs"])
    def run_events(
        run_id: RunId, after: Annotated[int, Query(ge=0, description="Only events with a greater seq")] = 0
    ) -> Any:
        return views.run_events_out(services.get_run(ws, run_id), after)

    @router.get(
        "/runs/{run_id}/events/stream",
        tags=["runs"],
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events"}},
    )
    def stream_events(
        run_id: RunId, last_event_id: Annotated[Optional[str], Header(max_length=20)] = None
    ) -> StreamingResponse:
        """The run's events live (SSE, `id` = seq); resume with `Last-Event-ID`. Ends when it stops running."""
        after = parse_last_event_id(last_event_id)
        services.get_run(ws, run_id)  # an unknown run is a 404 before the stream opens
        return StreamingResponse(
            tail_events(ws, run_id, after),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @router.get("/incidents", response_model=views.IncidentList, tags=["incidents"])
    def list_incidents(active: bool = False) -> Any:
        return views.incidents_out(services.incidents(ws, active_only=active))

    @router.get("/models/{model}/passport", response_model=views.PassportOut, tags=["models"])
    def get_passport(model: Name, version: Annotated[Optional[int], Query(ge=1, le=1_000_000_000)] = None) -> Any:
        """A version's passport (default: the champion's) and its verification now: valid, altered, untrusted_key,
        unsigned..."""
        return views.passport_out(services.passport(ws, model, version))

    @router.get("/models/{model}/trust", response_model=views.TrustOut, tags=["models"])
    def get_trust(model: Name, version: Annotated[Optional[int], Query(ge=1, le=1_000_000_000)] = None) -> Any:
        """A version's trust score (default: the champion's) and its deductions, as its signed passport states it."""
        return views.trust_out(services.trust(ws, model, version))

    @router.get("/pipelines/{name}/governance", response_model=views.GovernanceOut, tags=["pipelines"])
    def governance(name: Name) -> Any:
        """The governance scan of the pipeline's training lineage now, read-only, before any training."""
        return views.governance_out(name, services.governance(ws, name))

    @router.get("/watch", response_model=views.WatchOut, tags=["watch"])
    def watch() -> Any:
        """The watch's last pass (its decision per champion), the versions at risk, what it rolled back or flagged."""
        return views.watch_out(services.watch_state(ws))

    @router.get("/served", response_model=views.ServedList, tags=["models"])
    def served() -> Any:
        """What each pipeline's models served, measured with and without the gate (kept by `kintsugi demo`)."""
        return views.served_out(services.served(ws))

    @router.get("/drills/latest", response_model=views.LatestDrillOut, tags=["drills"])
    def latest_drill() -> Any:
        """The newest drill scoreboard kept in the workspace (under drills/), or none."""
        return views.latest_drill_out(ws.rel(ws.drills), services.latest_drill(ws))

    @router.get("/lineage", response_model=views.LineageOut, tags=["lineage"])
    def lineage() -> Any:
        """Datasets, their upstreams and open incidents, and the model versions trained on them."""
        return views.lineage_out(services.lineage(ws))

    return router


def _write_routes(ws: Workspace, actor: str) -> APIRouter:
    """Routes that change something; a decision's actor is the token's holder (`ApiSettings.actor`)."""
    router = APIRouter()

    @router.post("/pipelines/{name}/runs", response_model=views.RunStarted, status_code=202, tags=["pipelines"])
    def start_run(name: Name, request: Request, body: Optional[RunRequest] = None) -> Any:
        """Start a run in the background; answers with its id at once. 409 if the pipeline is busy."""
        body = body or RunRequest()
        run_id = services.start_run(ws, name, body.policy, services.parse_now(body.now))
        base = str(request.base_url).rstrip("/")
        return {
            "run_id": run_id,
            "pipeline": name,
            "run_url": f"{base}/runs/{run_id}",
            "events_url": f"{base}/runs/{run_id}/events",
            "stream_url": f"{base}/runs/{run_id}/events/stream",
        }

    @router.post("/runs/{run_id}/approve", response_model=views.RunOut, tags=["runs"])
    def approve(run_id: RunId, body: ApproveRequest) -> Any:
        """Continue a run paused at a gate, deciding again on the current state; it may pause at the next gate."""
        now_ms = services.parse_now(body.now)
        return views.run_out(services.approve(ws, run_id, body.reason, now_ms, actor=actor))

    @router.post("/runs/{run_id}/reject", response_model=views.RunOut, tags=["runs"])
    def reject(run_id: RunId, body: RejectRequest) -> Any:
        return views.run_out(services.reject(ws, run_id, body.reason, actor=actor))

    @router.post("/runs/{run_id}/accept", response_model=views.RunOut, tags=["runs"])
    def accept(run_id: RunId, body: AcceptRequest) -> Any:
        """Accept a run's warnings (or its named blocks) as the new normal, kept in DataHub with who and why."""
        record = services.accept(ws, run_id, body.reason, body.findings, actor=actor, undo=body.undo)
        return views.run_out(record)

    @router.post("/runs/{run_id}/undo", response_model=views.RunOut, tags=["runs"])
    def undo(run_id: RunId) -> Any:
        return views.run_out(services.undo(ws, run_id))

    @router.post("/runs/{run_id}/recover", response_model=views.RunOut, tags=["runs"])
    def recover(run_id: RunId) -> Any:
        """Bring an interrupted run (its process died) to a consistent state: rolled forward or back."""
        return views.run_out(services.recover(ws, run_id))

    @router.post("/models/{model}/versions/{version}/promote", response_model=views.PromoteOut, tags=["models"])
    def promote(model: Name, version: Version, body: PromoteRequest) -> Any:
        """Make a version champion, only if the gate APPROVED it; 409 otherwise."""
        return views.promote_out(services.promote(ws, model, version, body.reason, actor=actor))

    return router
