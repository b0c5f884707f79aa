"""`kintsugi demo`, registered into the CLI through the `kintsugi.commands` entry point."""

from __future__ import annotations

import shutil
import time
from typing import Annotated

import typer

from controlplane.cli.options import WorkspaceOption, echo_event
from controlplane.datahub.config import load_gms_config
from controlplane.errors import WorkspaceError
from controlplane.frontdoor.render import timeline
from controlplane.workspace import resolve_workspace

__all__ = ["demo", "register"]


def demo(
    workspace: WorkspaceOption = None,
    seed: Annotated[int, typer.Option(help="Generator seed.")] = 7,
    reset: Annotated[bool, typer.Option(help="Wipe the workspace first.")] = False,
    to_gms: Annotated[
        bool, typer.Option("--to-gms", help="Seed the synthetic estate into the configured DataHub GMS.")
    ] = False,
) -> None:
    """Seed the estate, promote a champion, inject a unit failure, heal it, and show the impact."""
    from demo.story import run_demo

    ws = resolve_workspace(workspace)
    if load_gms_config(ws) is not None and not to_gms:
        raise WorkspaceError(
            "a DataHub GMS is configured; the demo would write a synthetic estate into it",
            "unset DATAHUB_GMS_URL for the demo, or pass --to-gms",
        )
    if ws.datahub_db.exists() and not reset:
        raise WorkspaceError(
            f"workspace {ws.root} already holds an estate",
            "pass --reset to start over, or --workspace DIR for a new one",
        )
    if reset and ws.root.exists():
        shutil.rmtree(ws.root)
    started = time.monotonic()
    result = run_demo(ws.ensure(), seed=seed, say=typer.echo, listener=echo_event)
    typer.echo("\n=== first run (clean data) ===\n" + timeline(result.first, with_ledger=False))
    typer.echo("\n=== second run (distance written in metres) ===\n" + timeline(result.healed))
    typer.echo("\n=== customer impact: holdout ETA error (MAE, minutes) ===")
    typer.echo(f"  model trained on poisoned data: {result.mae_poisoned:6.2f} min")
    typer.echo(f"  model trained on healed data:   {result.mae_healed:6.2f} min")
    typer.echo(f"\nworkspace {ws.root}  ({time.monotonic() - started:.0f} s)")


def register(app: typer.Typer) -> None:
    app.command()(demo)
