"""What every command shares: the --workspace option and the check that an estate lives there."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from controlplane.datahub.config import load_gms_config
from controlplane.errors import WorkspaceError
from controlplane.workspace import Workspace, resolve_workspace

__all__ = ["WorkspaceOption", "require_estate"]

WorkspaceOption = Annotated[Optional[Path], typer.Option("--workspace", "-w", help="Workspace folder "
                            "(default: $KINTSUGI_HOME or ./.kintsugi).", show_default=False)]


def require_estate(option: Path | None) -> Workspace:
    """The chosen workspace, or one line naming the fix when no estate is there."""
    ws = resolve_workspace(option)
    if not ws.datahub_db.exists() and load_gms_config(ws) is None:
        raise WorkspaceError(f"no Kintsugi estate in {ws.root}",
                             "run `kintsugi demo` first, or pass --workspace DIR / set KINTSUGI_HOME")
    return ws
