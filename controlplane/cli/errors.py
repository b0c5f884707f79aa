"""The one place the command line translates errors: one line on stderr — what was wrong; what to do — and exit 2.

Exit codes: 0 nothing wrong with the data (promoted, planned, paused, needs review), 1 blocked (a verdict:
a scheduler should not retry), 2 an error (the line says what to do).
"""

from __future__ import annotations

import sys
from typing import Callable

import typer

from controlplane.errors import KintsugiError
from controlplane.vocab import EXIT_ERROR

__all__ = ["run_cli", "exit_code_of"]


def exit_code_of(exc: KintsugiError) -> int:
    """Every error of the tree ends a command with exit 2: it is not a verdict on the data."""
    return EXIT_ERROR


def run_cli(app: Callable[..., object]) -> None:
    try:
        code = app(standalone_mode=False)  # click returns a command's Exit code instead of raising it
    except KintsugiError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exit_code_of(exc))
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(EXIT_ERROR)
    except typer.TyperException as exc:  # usage errors and bad parameters
        typer.echo(f"error: {exc.format_message() if hasattr(exc, 'format_message') else exc}", err=True)
        sys.exit(EXIT_ERROR)
    except PermissionError as exc:  # a read-only workspace, say: still one line, still exit 2
        typer.echo(
            f"error: permission denied on {exc.filename or 'a workspace file'}; check the workspace's "
            "permissions, or pass --workspace DIR",
            err=True,
        )
        sys.exit(EXIT_ERROR)
    sys.exit(code if isinstance(code, int) else 0)
