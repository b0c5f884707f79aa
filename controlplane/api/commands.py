"""`kintsugi mcp` and `kintsugi serve`: the command functions the CLI registers.

    app.command("mcp")(mcp_command)
    app.command("serve")(serve_command)
"""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from controlplane.errors import KintsugiError
from controlplane.options import WorkspaceOption, require_estate

__all__ = ["mcp_command", "serve_command", "run_mcp_cli"]

ReadOnlyOption = Annotated[bool, typer.Option("--read-only", help="Offer only what reads: no run, approve, reject, "
                           "promote, undo or drill (also KINTSUGI_READ_ONLY=1).")]


def mcp_command(workspace: WorkspaceOption = None, read_only: ReadOnlyOption = False) -> None:
    """Serve the MCP server over stdio, for an agent (Claude Code, Cursor...) to drive Kintsugi."""
    from controlplane.api.settings import env_read_only
    from mcp_server.server import build_server

    build_server(require_estate(workspace), read_only=read_only or env_read_only()).run("stdio")


def serve_command(workspace: WorkspaceOption = None,
                  host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
                  port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
                  insecure_local: Annotated[bool, typer.Option("--insecure-local", help="Accept changes without "
                                            "KINTSUGI_API_TOKEN; only on a loopback --host.")] = False,
                  read_only: ReadOnlyOption = False,
                  schedule: Annotated[bool, typer.Option("--schedule/--no-schedule", help="Run pipelines whose "
                                      "spec has a cron `schedule` when due.")] = True) -> None:
    """Serve the HTTP API, the MCP server (/mcp), the operator page (/) and scheduled retraining."""
    import uvicorn

    from controlplane.api.app import create_app
    from controlplane.api.settings import resolve_settings
    from controlplane.scheduler import Scheduler

    ws = require_estate(workspace)
    settings = resolve_settings(host=host, read_only=read_only, insecure_local=insecure_local)
    scheduler = Scheduler(ws) if schedule and settings.mutating else None
    app = create_app(ws, settings, scheduler=scheduler)
    where = f"http://{'[' + host + ']' if ':' in host else host}:{port}"
    typer.echo(f"kintsugi serving {ws.root} at {where}  (page /, API docs /docs, MCP {where}/mcp"
               + (", read-only" if settings.read_only else "") + (", scheduler on" if scheduler else "") + ")",
               err=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def run_mcp_cli() -> None:
    """`python -m mcp_server`: `kintsugi mcp` without the rest of the CLI; errors print one line and exit 2."""
    app = typer.Typer(add_completion=False)
    app.command()(mcp_command)
    try:
        code = app(standalone_mode=False)
    except KintsugiError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.TyperException as exc:  # usage errors and bad parameters
        typer.echo(f"error: {exc.format_message() if hasattr(exc, 'format_message') else exc}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
