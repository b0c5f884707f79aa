"""The HTTP API: the CLI's operations as JSON routes, a run's live events, the MCP mount and the operator page.

A thin front door: each route parses input, calls `controlplane.operations`, and returns its JSON; errors
are translated in `controlplane.api.errors`. Every route that changes something needs the bearer token.
"""
from __future__ import annotations

import hmac
from contextlib import AsyncExitStack, asynccontextmanager
from importlib import resources
from typing import Annotated, Any, AsyncIterator, Literal, Optional

from fastapi import APIRouter, Depends, FastAPI, Header, Query, Request
from fastapi.responses import HTMLResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from controlplane import operations as ops
from controlplane.api.errors import ERROR_RESPONSES, error_response, install_error_handlers
from controlplane.api.schemas import (
    DrillOut,
    GuardOut,
    IncidentList,
    LineageOut,
    PassportOut,
    PipelineList,
    PromoteOut,
    RunEvents,
    RunList,
    RunOut,
    RunStarted,
)
from controlplane.api.settings import ApiSettings, Unauthorized, check_exposure, read_only_refusal
from controlplane.api.sse import parse_last_event_id, tail_events
from controlplane.workspace import Workspace

__all__ = ["create_app", "RunRequest", "ApproveRequest", "RejectRequest", "DrillRequest"]

_bearer = HTTPBearer(auto_error=False, description="KINTSUGI_API_TOKEN, for every route that changes something")


class RunRequest(BaseModel):
    policy: Optional[Literal["auto", "ratify", "dry-run"]] = Field(None, description="Default: the spec's policy")
    now: Optional[str] = Field(None, description="Evaluate as of this ISO-8601 instant (default: now)")


class ApproveRequest(BaseModel):
    now: Optional[str] = Field(None, description="Evaluate as of this ISO-8601 instant (default: now)")


class RejectRequest(BaseModel):
    reason: str = Field(min_length=1, description="Why the run is stopped")


class DrillRequest(BaseModel):
    scenarios: Optional[list[str]] = Field(None, description="Scenario names (default: all)")
    seeds: int = Field(1, ge=1, le=10)
    controls: int = Field(2, ge=0, le=50, description="Clean control runs")
    sweep_seeds: int = Field(0, ge=0, le=10)


def create_app(ws: Workspace, settings: ApiSettings, *, scheduler: Any = None, mcp: bool = True) -> FastAPI:
    """The API over one workspace. Refuses (raises) a configuration that would expose writes without a token."""
    check_exposure(settings)
    mcp_server = _mcp_server(ws, settings) if mcp else None

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if mcp_server is not None:
                await stack.enter_async_context(mcp_server.session_manager.run())
            if scheduler is not None:
                scheduler.start()
                stack.callback(scheduler.stop)
            yield

    app = FastAPI(title="Kintsugi", version="0.1.0", lifespan=lifespan, responses=ERROR_RESPONSES,
                  description="A self-healing continuous-training control plane: the CLI's operations over HTTP. "
                              "Routes that change something need `Authorization: Bearer $KINTSUGI_API_TOKEN`.")
    install_error_handlers(app)
    app.include_router(_read_routes(ws))
    app.include_router(_write_routes(ws, settings), include_in_schema=settings.mutating)
    if mcp_server is not None:
        _mount_mcp(app, mcp_server, settings)
    return app


def _token_check(settings: ApiSettings) -> Any:
    """Read-only: every write route is refused (403). Otherwise the bearer token, compared in constant time."""

    def require_token(request: Request,
                      credentials: Annotated[Optional[HTTPAuthorizationCredentials], Depends(_bearer)]) -> None:
        if settings.read_only:
            raise read_only_refusal(f"{request.method} {request.url.path}")
        if settings.token is None:  # only with --insecure-local on loopback (check_exposure)
            return
        given = credentials.credentials if credentials is not None else ""
        if not hmac.compare_digest(given.encode(), settings.token.encode()):
            raise Unauthorized("this route changes runs, data or models and needs the API token" if not given
                               else "the bearer token is not the API token",
                               "send `Authorization: Bearer $KINTSUGI_API_TOKEN`")

    return require_token


def _read_routes(ws: Workspace) -> APIRouter:
    router = APIRouter()

    @router.get("/", response_class=HTMLResponse, include_in_schema=False)
    def operator_page() -> str:
        return resources.files("controlplane.api").joinpath("static/index.html").read_text(encoding="utf-8")

    @router.get("/health", tags=["meta"])
    def health() -> dict[str, str]:
        return {"status": "ok", "workspace": str(ws.root)}

    @router.get("/pipelines", response_model=PipelineList, tags=["pipelines"])
    def list_pipelines() -> Any:
        """Pipelines with their schedule and last run."""
        return {"pipelines": ops.list_pipelines(ws)}

    @router.get("/pipelines/{name}/guard", response_model=GuardOut, tags=["pipelines"])
    def guard(name: str, now: Optional[str] = None) -> Any:
        """The guard alone, read-only: CLEAN or BLOCKED with findings."""
        return ops.guard(ws, name, ops.parse_now(now))

    @router.get("/runs", response_model=RunList, tags=["runs"])
    def list_runs(pipeline: Optional[str] = None, limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> Any:
        """Runs, newest first, with their stage timeline."""
        return {"runs": ops.list_runs(ws, pipeline, limit)}

    @router.get("/runs/{run_id}", response_model=RunOut, tags=["runs"])
    def get_run(run_id: str) -> Any:
        return ops.get_run(ws, run_id)

    @router.get("/runs/{run_id}/events", response_model=RunEvents, tags=["runs"])
    def run_events(run_id: str, after: Annotated[int, Query(ge=0, description="Only events with a greater seq")] = 0
                   ) -> Any:
        return ops.run_events(ws, run_id, after)

    @router.get("/runs/{run_id}/events/stream", tags=["runs"], response_class=StreamingResponse,
                responses={200: {"content": {"text/event-stream": {}}, "description": "Server-sent events"}})
    def stream_events(run_id: str, last_event_id: Annotated[Optional[str], Header()] = None) -> StreamingResponse:
        """The run's events live (SSE, `id` = seq); resume with `Last-Event-ID`. Ends when finished or paused."""
        after = parse_last_event_id(last_event_id)
        ops.run_events(ws, run_id, after)  # an unknown run is a 404 before the stream opens
        return StreamingResponse(tail_events(ws, run_id, after), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @router.get("/incidents", response_model=IncidentList, tags=["incidents"])
    def list_incidents(active: bool = False) -> Any:
        return {"incidents": ops.list_incidents(ws, active)}

    @router.get("/models/{model}/passport", response_model=PassportOut, tags=["models"])
    def get_passport(model: str, version: Optional[int] = None) -> Any:
        """A version's passport (default: the champion's)."""
        return ops.get_passport(ws, model, version)

    @router.get("/lineage", response_model=LineageOut, tags=["lineage"])
    def lineage() -> Any:
        """Datasets, their upstreams and open incidents, and the model versions trained on them."""
        return ops.lineage(ws)

    return router


def _write_routes(ws: Workspace, settings: ApiSettings) -> APIRouter:
    router = APIRouter(dependencies=[Depends(_token_check(settings))])

    @router.post("/pipelines/{name}/runs", response_model=RunStarted, status_code=202, tags=["pipelines"])
    def start_run(name: str, request: Request, body: Optional[RunRequest] = None) -> Any:
        """Start a run in the background; answers with its id at once. 409 if the pipeline has a run in progress."""
        body = body or RunRequest()
        run_id = ops.start_run(ws, name, body.policy, ops.parse_now(body.now))
        base = str(request.base_url).rstrip("/")
        return {"run_id": run_id, "pipeline": name, "run_url": f"{base}/runs/{run_id}",
                "events_url": f"{base}/runs/{run_id}/events", "stream_url": f"{base}/runs/{run_id}/events/stream"}

    @router.post("/runs/{run_id}/approve", response_model=RunOut, tags=["runs"])
    def approve(run_id: str, body: Optional[ApproveRequest] = None) -> Any:
        """Continue a run paused at a ratify gate; it may pause again at the next gate."""
        return ops.approve(ws, run_id, ops.parse_now((body or ApproveRequest()).now))

    @router.post("/runs/{run_id}/reject", response_model=RunOut, tags=["runs"])
    def reject(run_id: str, body: RejectRequest) -> Any:
        return ops.reject(ws, run_id, body.reason)

    @router.post("/runs/{run_id}/undo", response_model=RunOut, tags=["runs"])
    def undo(run_id: str) -> Any:
        return ops.undo(ws, run_id)

    @router.post("/models/{model}/versions/{version}/promote", response_model=PromoteOut, tags=["models"])
    def promote(model: str, version: int) -> Any:
        """Make a version champion, only if the gate APPROVED it; 409 otherwise."""
        return ops.promote(ws, model, version)

    @router.post("/drills", response_model=DrillOut, tags=["drills"])
    def drill(body: Optional[DrillRequest] = None) -> Any:
        """A chaos drill in throwaway estates (never this workspace); answers with the scoreboard when done."""
        body = body or DrillRequest()
        return {"drill": ops.drill(body.scenarios, body.seeds, body.controls, body.sweep_seeds)}

    return router


def _mcp_server(ws: Workspace, settings: ApiSettings) -> Any:
    from mcp_server.server import build_server

    return build_server(ws, read_only=settings.read_only)


class _BearerGate:
    """The MCP endpoint can change things: the same token as the API's write routes, compared in constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope.get("headers") or [])
        scheme, _, given = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scope["type"] == "http" and not (scheme.lower() == "bearer" and hmac.compare_digest(given.encode(),
                                                                                                  self.token)):
            response = error_response(401, Unauthorized.code, "the MCP endpoint needs the API token",
                                      "send `Authorization: Bearer $KINTSUGI_API_TOKEN`")
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _mount_mcp(app: FastAPI, server: Any, settings: ApiSettings) -> None:
    """MCP over streamable HTTP at /mcp; its session manager runs in the app's lifespan."""
    inner = server.streamable_http_app(streamable_http_path="/mcp", host=settings.host)
    endpoint: ASGIApp = next(r.endpoint for r in inner.routes if isinstance(r, Route) and r.path == "/mcp")
    if settings.token is not None and settings.mutating:
        endpoint = _BearerGate(endpoint, settings.token)
    app.router.routes.append(Route("/mcp", endpoint=endpoint, include_in_schema=False))
