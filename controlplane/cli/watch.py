"""`kintsugi watch` and `kintsugi postmortem`: react to what DataHub learns after a model shipped."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from controlplane.cli.lazy import services
from controlplane.cli.options import JsonOption, NowOption, WorkspaceOption, require_estate
from controlplane.vocab import EXIT_BLOCKED, EXIT_ERROR

if TYPE_CHECKING:
    from controlplane.watch.follow import PassReport

__all__ = ["register"]


def watch(
    workspace: WorkspaceOption = None,
    once: Annotated[bool, typer.Option("--once", help="One reconcile pass, then exit (for cron and tests).")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between passes (without --once).", min=1.0)] = 60.0,
    policy: Annotated[
        Optional[str], typer.Option(help="auto | ratify | dry-run (default: each pipeline's spec).")
    ] = None,
    now: NowOption = None,
    json_out: JsonOption = False,
) -> None:
    """Follow DataHub: mark models at risk, roll an unsafe champion back (under the policy), retrain when the
    cause is resolved, write postmortems. With --once: exit 1 if a champion stays unsafe, 2 if a pipeline could not
    be watched (busy, or its spec unreadable), else 0."""
    ws = require_estate(workspace)
    now_ms = services.parse_now(now)
    try:
        while True:
            report = services.watch(ws, policy, now_ms)
            if json_out:
                typer.echo(json.dumps(_as_json(report), indent=2, default=str))
            else:
                typer.echo("\n".join(report.lines()))
            if once:
                raise typer.Exit(EXIT_BLOCKED if report.unsafe else EXIT_ERROR if report.errors else 0)
            time.sleep(interval)
    except KeyboardInterrupt:  # Ctrl-C between passes (or in one: its records are finished by the next writer)
        raise typer.Exit(0) from None


def _as_json(report: PassReport) -> dict[str, object]:
    return {
        "now_ms": report.now_ms,
        "changes": report.changes,
        "retrains": report.retrains,
        "postmortems": report.postmortems,
        "errors": report.errors,
        "unsafe": report.unsafe,
        "champions": [{**asdict(c), "decision": asdict(c.decision)} for c in report.champions],
    }


def postmortem(
    incident: Annotated[str, typer.Argument(help="The incident's URN (see `kintsugi incidents`).")],
    workspace: WorkspaceOption = None,
) -> None:
    """Print a resolved incident's postmortem (markdown): the one DataHub holds, else built now."""
    text, held = services.postmortem(require_estate(workspace), incident)
    typer.echo(text, nl=False)
    if not held:
        typer.echo("(built now: not yet in DataHub; `kintsugi watch --once` writes it there)", err=True)


def register(app: typer.Typer) -> None:
    app.command()(watch)
    app.command()(postmortem)
