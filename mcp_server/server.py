"""The bundled MCP server: the CLI's operations for agents, through `controlplane.frontdoor.services` and the same gates.

Every tool returns a typed, structured result (the SDK declares its outputSchema from the return annotation;
the shapes are `controlplane.frontdoor.views`'). A `KintsugiError` becomes a tool error whose text is the message and the
fix, with `{"error": {code, message, fix}}` as structured content (`error_result`, the one place this front
door maps the error tree); any other exception (a bug) is one too, on the CLI's one line (`unexpected_result`),
and the session goes on. In read-only mode the mutating tools are not registered, and a call to one is refused.
Tool descriptions say only what the tests prove.
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

from chaos.drill.service import drill as run_drill
from controlplane.errors import InternalError, KintsugiError, report_fix, unexpected
from controlplane.frontdoor import services, views
from controlplane.frontdoor.access import read_only_refusal
from controlplane.runs.journal import Event
from controlplane.workspace import Workspace
from mcp_server.skill import SKILL_NAME, SKILL_URI, skill_text

__all__ = ["build_server", "client_actor", "error_result", "unexpected_result", "READ_ONLY_TOOLS", "MUTATING_TOOLS"]

log = logging.getLogger(__name__)

READ_ONLY_TOOLS = (
    "list_pipelines",
    "list_runs",
    "get_run",
    "get_run_detail",
    "guard",
    "list_incidents",
    "get_passport",
    "get_trust",
    "governance",
)
MUTATING_TOOLS = ("accept", "approve", "drill", "promote", "recover", "reject", "run", "undo")

INSTRUCTIONS = (
    "Kintsugi guards the data a retrain uses and promotes only a model version its deterministic gate APPROVED. "
    "Start with list_pipelines, then guard a pipeline; run drives the whole loop (detect, incident, heal, verify, "
    "resolve, train, promote). A run under policy ratify (or a NEEDS_REVIEW candidate) pauses at a gate: read it "
    "with get_run, then approve (with a reason) or reject it. promote moves `champion` only to an APPROVED version; "
    f"undo takes a run back. Errors say what to do. The skill says it all: read {SKILL_URI} (or the prompt "
    "promote_gate) first."
)

Pipeline = Annotated[str, Field(max_length=64, description="Pipeline name, as list_pipelines gives it")]
RunId = Annotated[str, Field(max_length=64, description="A run id, as list_runs or run gives it")]
Reason = Annotated[str, Field(max_length=services.MAX_TEXT, description="Why (kept in the run and the passport)")]
Now = Annotated[
    Optional[str],
    Field(
        max_length=64,
        description="Evaluate as of this ISO-8601 instant (default: the current time), e.g. 2026-11-01T12:00:00+00:00",
    ),
]
Policy = Annotated[
    Optional[Literal["auto", "ratify", "dry-run"]],
    Field(
        description="auto: heal and promote on the gate's verdict; ratify: pause at each gate for "
        "approve; dry-run: detect and plan, write nothing (default: the spec's)"
    ),
]


def error_result(exc: KintsugiError) -> CallToolResult:
    """A KintsugiError as a tool error: the message and the fix as text, the error as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"{exc.message}; {exc.fix} [{exc.code}]")],
        structured_content={"error": views.error_body(exc)},
        is_error=True,
    )


def unexpected_result(exc: Exception, tool: str) -> CallToolResult:
    """A bug in a tool as a tool error (code `internal`), said as the CLI says it, and one line in the log."""
    error = InternalError(unexpected(exc, tool), report_fix(exc))
    log.error("%s; %s", error.message, error.fix, exc_info=exc if log.isEnabledFor(logging.DEBUG) else None)
    return error_result(error)


def _mapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KintsugiError as exc:
            return error_result(exc)
        except Exception as exc:
            return unexpected_result(exc, fn.__name__)

    return call


def client_actor(ctx: Context[Any, Any]) -> str:
    """Who decides over MCP: the client's own name from `initialize` (empty when it gave none: refused)."""
    params = ctx.session.client_params
    name = params.client_info.name if params is not None and params.client_info is not None else ""
    return f"mcp:{name}" if name.strip() else ""


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
    notify, counter = _notifier(ctx), itertools.count(1)
    return lambda line: notify(next(counter), line)


async def _refuse_mutating(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Read-only mode: a call to a mutating tool is answered with a refusal before any lookup."""
    name = (ctx.params or {}).get("name")
    if ctx.method == "tools/call" and name in MUTATING_TOOLS:
        return error_result(read_only_refusal(f"tool {name!r}"))
    return await call_next(ctx)


def build_server(ws: Workspace, *, read_only: bool = False) -> MCPServer:
    """An MCP server over one workspace; `read_only` leaves out (and refuses) every mutating tool."""
    server: MCPServer = MCPServer("kintsugi", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING")
    _offer_the_skill(server)
    for fn in _read_tools(ws):
        server.add_tool(_mapped(fn), annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    if read_only:
        server.middleware.append(_refuse_mutating)
        return server
    for fn in _write_tools(ws):
        server.add_tool(_mapped(fn), annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False))
    return server


def _offer_the_skill(server: MCPServer) -> None:
    """The skill as a resource to read and a prompt to start from: how to use these tools, and what never to do."""

    @server.resource(
        SKILL_URI,
        name=SKILL_NAME,
        title="How an agent uses Kintsugi on the promote path",
        description="The skill: the loop, the gates, what each status means, what never to do; read it first.",
        mime_type="text/markdown",
    )
    def skill() -> str:
        return skill_text()

    @server.prompt(
        name="promote_gate",
        title="Work on the promote path with Kintsugi",
        description="Starts a session with the skill: guard, run, read the decision, approve or reject with a reason.",
    )
    def promote_gate() -> str:
        return skill_text()


def _read_tools(ws: Workspace) -> list[Callable[..., Any]]:
    def list_pipelines() -> views.PipelineList:
        """Pipelines with their schedule and last run (guard verdict at detect, status, outcome)."""
        return views.PipelineList.model_validate(views.pipelines_out(services.pipelines(ws)))

    def list_runs(pipeline: Optional[str] = None, limit: Annotated[int, Field(ge=1, le=500)] = 20) -> views.RunList:
        """Runs, newest first, with their stage timeline (optionally of one pipeline)."""
        return views.RunList.model_validate(views.runs_out(services.runs(ws, pipeline, limit)))

    def get_run(run_id: RunId) -> views.RunDecision:
        """A run's decision first, in under 2 KB: status, the blocking findings, the gate's verdict and reasons,
        candidate vs champion, what a person must decide, and the next call. Evidence: `get_run_detail`."""
        return views.RunDecision.model_validate(views.run_decision(services.get_run(ws, run_id)))

    def get_run_detail(run_id: RunId) -> views.RunOut:
        """A run's whole timeline: every event with its evidence, the ledger of writes, the gate a paused run waits
        at."""
        return views.RunOut.model_validate(views.run_out(services.get_run(ws, run_id)))

    def guard(pipeline: Pipeline, now: Now = None) -> views.GuardOut:
        """Check a pipeline's data against its contract and lineage, read-only: CLEAN or BLOCKED with findings."""
        return views.GuardOut.model_validate(
            views.guard_out(services.guard(ws, pipeline, None, services.parse_now(now)))
        )

    def list_incidents(active_only: bool = False) -> views.IncidentList:
        """DataHub incidents, with the models downstream of each (at risk)."""
        return views.IncidentList.model_validate(views.incidents_out(services.incidents(ws, active_only=active_only)))

    def get_passport(
        model: Annotated[str, Field(max_length=64, description="Model (pipeline) name")],
        version: Annotated[Optional[int], Field(ge=1)] = None,
    ) -> views.PassportOut:
        """A model version's passport as DataHub holds it (default: the champion's): data, heals, metrics, verdict,
        and its verification now. A candidate paused at the promote gate shows its draft (status `draft`): what
        approving it would sign."""
        return views.PassportOut.model_validate(views.passport_out(services.passport(ws, model, version)))

    def get_trust(
        model: Annotated[str, Field(max_length=64, description="Model (pipeline) name")],
        version: Annotated[Optional[int], Field(ge=1)] = None,
    ) -> views.TrustOut:
        """A version's trust score (default: the champion's) with its named deductions, as its signed passport
        states it, and whether that passport verifies now."""
        return views.TrustOut.model_validate(views.trust_out(services.trust(ws, model, version)))

    def governance(pipeline: Pipeline) -> views.GovernanceOut:
        """The governance scan of a pipeline's training lineage as DataHub holds it now, read-only and before any
        training: PII or restricted data on a trained column, lineage leakage, deprecations, with their severity."""
        return views.GovernanceOut.model_validate(views.governance_out(pipeline, services.governance(ws, pipeline)))

    return [
        list_pipelines,
        list_runs,
        get_run,
        get_run_detail,
        guard,
        list_incidents,
        get_passport,
        get_trust,
        governance,
    ]


def _write_tools(ws: Workspace) -> list[Callable[..., Any]]:
    def run(pipeline: Pipeline, ctx: Context[Any, Any], policy: Policy = None, now: Now = None) -> views.RunOut:
        """Run the loop for a pipeline to its end (or a gate) and return the run's timeline; each stage is
        reported as a progress notification. The model trains on exactly the bytes the guard passed."""
        record = services.run(ws, pipeline, policy, services.parse_now(now), listener=_progress(ctx))
        return views.RunOut.model_validate(views.run_out(record))

    def approve(run_id: RunId, reason: Reason, ctx: Context[Any, Any], now: Now = None) -> views.RunOut:
        """Continue a run paused at a gate, with a reason (an empty one is refused); the client's name is kept as
        who approved. The current state (the table's hash, the champion, incidents) is read again and the gate
        decides anew; the reason is kept in the passport. It may pause at the next gate."""
        now_ms = services.parse_now(now)
        record = services.approve(ws, run_id, reason, now_ms, listener=_progress(ctx), actor=client_actor(ctx))
        return views.RunOut.model_validate(views.run_out(record))

    def reject(run_id: RunId, reason: Reason, ctx: Context[Any, Any]) -> views.RunOut:
        """Stop a run paused at a gate, with a reason: nothing more is published or promoted."""
        record = services.reject(ws, run_id, reason, actor=client_actor(ctx))
        return views.RunOut.model_validate(views.run_out(record))

    def accept(
        run_id: RunId,
        reason: Reason,
        ctx: Context[Any, Any],
        findings: Annotated[
            Optional[list[str]],
            Field(
                max_length=100,
                description="KIND:COLUMN (or KIND) of each finding; default: every warning; "
                "history_changed alone: keep rows restated since they passed as the history",
            ),
        ] = None,
    ) -> views.RunOut:
        """Accept a run's warnings (or its named blocks) as the new normal, with a reason; kept in DataHub with
        the client's name and the reason, and named in the next passport."""
        record = services.accept(ws, run_id, reason, findings, actor=client_actor(ctx))
        return views.RunOut.model_validate(views.run_out(record))

    def promote(
        model: Annotated[str, Field(max_length=64, description="Model (pipeline) name")],
        version: Annotated[int, Field(ge=1, description="The version to make champion")],
        reason: Reason,
        ctx: Context[Any, Any],
    ) -> views.PromoteOut:
        """Make a version the champion, with a reason, only if the promotion gate APPROVED it and it was not
        undone."""
        record = services.promote(ws, model, version, reason, actor=client_actor(ctx))
        return views.PromoteOut.model_validate(views.promote_out(record))

    def undo(run_id: RunId) -> views.RunOut:
        """Take back a run: the previous bytes of the table (checked before anything is touched), its versions
        (never champion again), the champion, the incidents it resolved."""
        return views.RunOut.model_validate(views.run_out(services.undo(ws, run_id)))

    def recover(run_id: RunId) -> views.RunOut:
        """Bring an interrupted run (its process died) to a consistent state: rolled back, or forward if it had
        concluded."""
        return views.RunOut.model_validate(views.run_out(services.recover(ws, run_id)))

    def drill(
        ctx: Context[Any, Any],
        scenarios: Annotated[Optional[list[str]], Field(description="Scenario names (default: all)")] = None,
        seeds: Annotated[int, Field(ge=1, le=10)] = 1,
        controls: Annotated[int, Field(ge=0, le=50, description="Clean control runs (false alarms)")] = 2,
        sweep_seeds: Annotated[int, Field(ge=0, le=10, description="Seeds with a magnitude sweep")] = 0,
    ) -> views.DrillOut:
        """A chaos drill: seeded silent failures in throwaway estates (never this workspace) through the real loop,
        scored. Slow: minutes for all scenarios; progress is reported as it goes."""
        board = run_drill(scenarios, seeds, controls, sweep_seeds, _say(ctx))
        return views.DrillOut.model_validate({"drill": board})

    return [run, approve, reject, accept, promote, undo, recover, drill]
