"""`kintsugi mcp` and `kintsugi serve`, registered into the CLI through the `kintsugi.commands` entry point.

`serve` is where the servers are composed: the HTTP API (`controlplane.api`), this package's MCP server mounted
at /mcp, the drill route (`chaos.api`) and the scheduler.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from controlplane.cli.errors import run_cli
from controlplane.cli.options import WorkspaceOption, require_estate
from controlplane.frontdoor.access import ApiSettings, env_read_only, resolve_settings, token_warning
from controlplane.workspace import Workspace

__all__ = ["mcp_command", "serve_command", "register", "run_mcp_cli", "build_app", "server_watcher"]

ReadOnlyOption = Annotated[
    bool,
    typer.Option(
        "--read-only",
        help="Offer only what reads: no run, approve, reject, "
        "promote, undo, recover or drill (also KINTSUGI_READ_ONLY=1).",
    ),
]


def mcp_command(workspace: WorkspaceOption = None, read_only: ReadOnlyOption = False) -> None:
    """Serve the MCP server over stdio, for an agent (Claude Code, Cursor...) to drive Kintsugi."""
    from mcp_server.server import build_server

    build_server(require_estate(workspace), read_only=read_only or env_read_only()).run("stdio")


def build_app(ws: Workspace, settings: ApiSettings, scheduler: Any = None, watcher: Any = None) -> Any:
    """The served app: the HTTP API, the MCP server at /mcp (streamable HTTP), the drill route, the scheduler and
    the watch of DataHub (`controlplane.watch.follow.Watcher`), which run while the server does."""
    from starlette.routing import Route

    from chaos.api import drill_router
    from controlplane.api.app import create_app
    from mcp_server.server import build_server

    server = build_server(ws, read_only=settings.read_only)
    inner = server.streamable_http_app(streamable_http_path="/mcp", host=settings.host)
    endpoint = next(r.endpoint for r in inner.routes if isinstance(r, Route) and r.path == "/mcp")
    return create_app(
        ws,
        settings,
        scheduler=scheduler,
        routers=[drill_router(ws)] if settings.mutating else [],
        endpoints=[("/mcp", endpoint)],
        lifespans=[server.session_manager.run, *([watcher.lifespan] if watcher is not None else [])],
    )


def serve_command(
    workspace: WorkspaceOption = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    insecure_local: Annotated[
        bool,
        typer.Option("--insecure-local", help="Accept changes without KINTSUGI_API_TOKEN; only on a loopback --host."),
    ] = False,
    read_only: ReadOnlyOption = False,
    schedule: Annotated[
        bool, typer.Option("--schedule/--no-schedule", help="Run pipelines whose spec has a cron `schedule` when due.")
    ] = True,
    watch: Annotated[
        bool, typer.Option("--watch/--no-watch", help="Follow DataHub (`kintsugi watch`) while serving.")
    ] = True,
    watch_interval: Annotated[float, typer.Option(help="Seconds between watch passes.", min=1.0)] = 60.0,
) -> None:
    """Serve the HTTP API, the MCP server (/mcp), the operator page (/), scheduled retraining and the watch."""
    import uvicorn

    from controlplane.api.server import server_config
    from controlplane.frontdoor.scheduler import Scheduler

    ws = require_estate(workspace)
    settings = resolve_settings(host=host, read_only=read_only, insecure_local=insecure_local)
    scheduler = Scheduler(ws) if schedule and settings.mutating else None
    watcher = server_watcher(ws, watch_interval) if watch and settings.mutating else None
    app = build_app(ws, settings, scheduler, watcher)
    where = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    warning = token_warning(settings)
    if warning:
        typer.echo(warning, err=True)
    typer.echo(
        f"kintsugi serving at {where}  (page /, API docs /docs, MCP {where}/mcp"
        + (", read-only" if settings.read_only else "")
        + (", scheduler on" if scheduler else "")
        + (", watching DataHub" if watcher else "")
        + ")",
        err=True,
    )
    uvicorn.Server(server_config(app, host=host, port=port, log_level="warning")).run()


def server_watcher(ws: Workspace, interval_s: float) -> Any:
    """The watch of `kintsugi serve`: a pass every `interval_s`; a retrain starts in its own thread."""
    from controlplane.frontdoor import services
    from controlplane.watch.follow import Watcher

    return Watcher(
        ws, lambda w, pipeline, now_ms: services.start_run(w, pipeline, now_ms=now_ms), interval_s=interval_s
    )


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_command)
    app.command("serve")(serve_command)


def run_mcp_cli() -> None:
    """`python -m mcp_server`: `kintsugi mcp` without the rest of the CLI; errors print one line and exit 2."""
    app = typer.Typer(add_completion=False)
    app.command("mcp")(mcp_command)
    run_cli(app)
