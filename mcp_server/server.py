"""The bundled MCP server: the CLI's operations for agents, through `controlplane.operations` and the same gates.

Every tool returns a typed, structured result (the SDK declares its outputSchema from the return annotation).
A `KintsugiError` becomes a tool error whose text is the message and the fix, with the same
`{"error": {code, message, fix}}` as structured content. In read-only mode the mutating tools are not
registered, and a call to one is refused with a message saying so.
"""
from __future__ import annotations

import functools
import itertools
import logging
from typing import Annotated, Any, Callable, Literal, Optional

import anyio.from_thread
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from controlplane import operations as ops
from controlplane.api.schemas import (
    DrillOut,
    GuardOut,
    IncidentList,
    PassportOut,
    PipelineList,
    PromoteOut,
    RunList,
    RunOut,
)
from controlplane.api.settings import read_only_refusal
from controlplane.errors import KintsugiError
from controlplane.journal import Event
from controlplane.workspace import Workspace

__all__ = ["build_server", "error_result", "READ_ONLY_TOOLS", "MUTATING_TOOLS"]

log = logging.getLogger(__name__)

READ_ONLY_TOOLS = ("list_pipelines", "list_runs", "get_run", "guard", "list_incidents", "get_passport")
MUTATING_TOOLS = tuple(sorted(ops.MUTATING))

INSTRUCTIONS = (
    "Kintsugi guards the data a retrain uses and promotes only a model version its deterministic gate APPROVED. "
    "Start with list_pipelines, then guard a pipeline; run drives the whole loop (detect, incident, heal, verify, "
    "resolve, train, promote). A run under policy ratify pauses at a gate: read it with get_run, then approve or "
    "reject it. promote moves `champion` only to an APPROVED version; undo takes a run back. Errors say what to do."
)

Pipeline = Annotated[str, Field(description="Pipeline name, as list_pipelines gives it (e.g. delivery-eta)")]
RunId = Annotated[str, Field(description="A run id, as list_runs or run gives it")]
Now = Annotated[Optional[str], Field(description="Evaluate as of this ISO-8601 instant (default: the current "
                                                 "time), e.g. 2026-11-01T12:00:00+00:00")]
Policy = Annotated[Optional[Literal["auto", "ratify", "dry-run"]],
                   Field(description="auto: heal and promote on the gate's verdict; ratify: pause at each gate for "
                                     "approve; dry-run: detect and plan, write nothing (default: the spec's)")]


def error_result(exc: KintsugiError) -> CallToolResult:
    """A KintsugiError as a tool error: the message and the fix as text, the error as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=f"{exc.message}; {exc.fix} [{exc.code}]")],
                          structured_content={"error": {"code": exc.code, "message": exc.message, "fix": exc.fix}},
                          is_error=True)


def _mapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The one place this front door translates the error tree."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KintsugiError as exc:
            return error_result(exc)

    return call


def _notifier(ctx: Context[Any, Any]) -> Callable[[float, str], None]:
    """MCP progress notifications (when the client asked for progress), sent from the tool's worker thread.

    A notification that cannot be sent (the client went away, say) never disturbs the run it reports on."""

    def notify(progress: float, message: str) -> None:
        try:
            anyio.from_thread.run(ctx.report_progress, progress, None, message)
        except Exception:
            log.debug("progress notification %s not sent", progress, exc_info=True)

    return notify


def _progress(ctx: Context[Any, Any]) -> Callable[[Event], None]:
    """Each journal event of a run as a progress notification: its seq, stage, status and summary."""
    notify = _notifier(ctx)
    return lambda event: notify(event.seq, f"{event.stage} {event.status}: {event.summary}")


def _say(ctx: Context[Any, Any]) -> Callable[[str], None]:
    """A drill's progress lines as progress notifications, counted."""
    notify, counter = _notifier(ctx), itertools.count(1)
    return lambda line: notify(next(counter), line)


async def _refuse_mutating(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Read-only mode: a call to a mutating tool is answered with a refusal before any lookup."""
    name = (ctx.params or {}).get("name")
    if ctx.method == "tools/call" and name in ops.MUTATING:
        return error_result(read_only_refusal(f"tool {name!r}"))
    return await call_next(ctx)


def build_server(ws: Workspace, *, read_only: bool = False) -> MCPServer:
    """An MCP server over one workspace; `read_only` leaves out (and refuses) every mutating tool."""
    server: MCPServer = MCPServer("kintsugi", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING")
    for fn in _read_tools(ws):
        server.add_tool(_mapped(fn), annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    if read_only:
        server.middleware.append(_refuse_mutating)
        return server
    for fn in _write_tools(ws):
        server.add_tool(_mapped(fn), annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False))
    return server


def _read_tools(ws: Workspace) -> list[Callable[..., Any]]:
    def list_pipelines() -> PipelineList:
        """Pipelines with their schedule and last run (guard verdict, status, outcome)."""
        return PipelineList.model_validate({"pipelines": ops.list_pipelines(ws)})

    def list_runs(pipeline: Optional[str] = None,
                  limit: Annotated[int, Field(ge=1, le=500)] = 20) -> RunList:
        """Runs, newest first, with their stage timeline (optionally of one pipeline)."""
        return RunList.model_validate({"runs": ops.list_runs(ws, pipeline, limit)})

    def get_run(run_id: RunId) -> RunOut:
        """A run's timeline: every event with its evidence, the ledger of writes, and the gate a paused run waits at."""
        return RunOut.model_validate(ops.get_run(ws, run_id))

    def guard(pipeline: Pipeline, now: Now = None) -> GuardOut:
        """Check a pipeline's data against its contract and lineage, read-only: CLEAN or BLOCKED with findings."""
        return GuardOut.model_validate(ops.guard(ws, pipeline, ops.parse_now(now)))

    def list_incidents(active_only: bool = False) -> IncidentList:
        """DataHub incidents, with the models downstream of each (at risk)."""
        return IncidentList.model_validate({"incidents": ops.list_incidents(ws, active_only)})

    def get_passport(model: Annotated[str, Field(description="Model (pipeline) name")],
                     version: Optional[int] = None) -> PassportOut:
        """A model version's signed passport (default: the champion's): data, heals, metrics, verdict."""
        return PassportOut.model_validate(ops.get_passport(ws, model, version))

    return [list_pipelines, list_runs, get_run, guard, list_incidents, get_passport]


def _write_tools(ws: Workspace) -> list[Callable[..., Any]]:
    def run(pipeline: Pipeline, ctx: Context[Any, Any], policy: Policy = None, now: Now = None) -> RunOut:
        """Run the loop for a pipeline to its end (or its ratify gate) and return the run's timeline.

        Each stage is reported as a progress notification while the run goes on."""
        return RunOut.model_validate(ops.run(ws, pipeline, policy, ops.parse_now(now), listener=_progress(ctx)))

    def approve(run_id: RunId, ctx: Context[Any, Any], now: Now = None) -> RunOut:
        """Continue a run paused at a ratify gate; the heal is re-verified first. It may pause at the next gate."""
        return RunOut.model_validate(ops.approve(ws, run_id, ops.parse_now(now), listener=_progress(ctx)))

    def reject(run_id: RunId, reason: Annotated[str, Field(description="Why the run is stopped")]) -> RunOut:
        """Stop a run paused at a ratify gate: nothing more is published or promoted."""
        return RunOut.model_validate(ops.reject(ws, run_id, reason))

    def promote(model: Annotated[str, Field(description="Model (pipeline) name")],
                version: Annotated[int, Field(description="The model version to make champion")]) -> PromoteOut:
        """Make a version the champion, only if the promotion gate APPROVED it (the same gate as the CLI)."""
        return PromoteOut.model_validate(ops.promote(ws, model, version))

    def undo(run_id: RunId) -> RunOut:
        """Take back a run: restore the exact bytes it replaced, move `champion` back, reopen its incidents."""
        return RunOut.model_validate(ops.undo(ws, run_id))

    def drill(ctx: Context[Any, Any],
              scenarios: Annotated[Optional[list[str]], Field(description="Scenario names (default: all)")] = None,
              seeds: Annotated[int, Field(ge=1, le=10)] = 1,
              controls: Annotated[int, Field(ge=0, le=50, description="Clean control runs (false alarms)")] = 2,
              sweep_seeds: Annotated[int, Field(ge=0, le=10, description="Seeds with a magnitude sweep")] = 0
              ) -> DrillOut:
        """A chaos drill: inject seeded silent failures in throwaway estates (never this workspace), run the real
        loop on each, and score it. Slow: minutes for all scenarios; progress is reported as it goes."""
        say = _say(ctx)
        return DrillOut.model_validate({"drill": ops.drill(scenarios, seeds, controls, sweep_seeds, say)})

    return [run, approve, reject, promote, undo, drill]
