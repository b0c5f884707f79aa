"""What every command shares: the --workspace, --now and --as options and the check that an estate lives there."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated, Optional

import typer

from controlplane.datahub.config import load_gms_config
from controlplane.errors import WorkspaceError
from controlplane.frontdoor.render import event_line
from controlplane.runs.journal import Event
from controlplane.workspace import Workspace, resolve_workspace

__all__ = [
    "WorkspaceOption",
    "UnreadWorkspaceOption",
    "NowOption",
    "JsonOption",
    "ActorOption",
    "ReasonOption",
    "actor",
    "require_estate",
    "echo_event",
]

WorkspaceOption = Annotated[
    Optional[Path],
    typer.Option(
        "--workspace", "-w", help="Workspace folder (default: $KINTSUGI_HOME or ./.kintsugi).", show_default=False
    ),
]
UnreadWorkspaceOption = Annotated[
    Optional[Path],
    typer.Option(
        "--workspace",
        "-w",
        help="Accepted as by every command; this one reads no workspace (its answer is the same in each).",
        show_default=False,
    ),
]
NowOption = Annotated[
    Optional[str],
    typer.Option("--now", help="Evaluate as of this ISO-8601 instant (default: the current time).", show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ActorOption = Annotated[
    Optional[str],
    typer.Option(
        "--as",
        help="Who decides (default: the OS user); kept in the run, the passport and DataHub.",
        show_default=False,
    ),
]
ReasonOption = Annotated[
    str, typer.Option("--reason", help="Why, in a few words (kept in the run, the passport and DataHub).")
]


def actor(option: str | None) -> str:
    """The person deciding through the CLI: `--as NAME`, else the OS user (empty when the system names nobody)."""
    if option is not None:
        return option
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return ""


def require_estate(option: Path | None) -> Workspace:
    """The chosen workspace, or one line naming the fix when no estate is there."""
    ws = resolve_workspace(option)
    if not ws.datahub_db.exists() and load_gms_config(ws) is None:
        raise WorkspaceError(
            f"no Kintsugi estate in {ws.root}",
            "onboard a pipeline with `kintsugi init`, run `kintsugi demo`, or pass --workspace DIR",
        )
    return ws


def echo_event(event: Event) -> None:
    typer.echo(event_line(event))
