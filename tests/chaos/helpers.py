"""Helpers shared by the chaos tests: the guard instant and the chaos CLI as the composition root registers it."""

from __future__ import annotations

from datetime import timedelta

import typer
from typer.testing import CliRunner

from tests.support import DEMO_NOW, whole_cli  # noqa: F401 - the chaos tests call it from here

GUARD_NOW_MS = int((DEMO_NOW + timedelta(minutes=5)).timestamp() * 1000)


def kintsugi(*args: str) -> tuple[int, str, str]:
    """The chaos commands as the composition root registers them, errors mapped as `controlplane.cli.main` does."""
    from chaos.cli import chaos_app, drill_command
    from controlplane.errors import KintsugiError

    app = typer.Typer()
    app.add_typer(chaos_app, name="chaos")
    app.command("drill")(drill_command)
    result = CliRunner().invoke(app, list(args))
    if isinstance(result.exception, KintsugiError):
        return 2, result.stdout, f"error: {result.exception}\n"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr
