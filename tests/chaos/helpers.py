"""Helpers shared by the chaos tests: the guard instant and the chaos CLI as the composition root registers it."""

from __future__ import annotations

from datetime import timedelta

import typer
from typer.testing import CliRunner

from tests.support import DEMO_NOW

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


def whole_cli(*args: str) -> tuple[int, str, str]:
    """`kintsugi ARGS` through the real composition root (`controlplane.cli.main`), in this process."""
    import io
    import sys
    from contextlib import redirect_stderr, redirect_stdout

    from controlplane.cli import main

    out, err, saved = io.StringIO(), io.StringIO(), sys.argv
    sys.argv = ["kintsugi", *args]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.argv = saved
    return code, out.getvalue(), err.getvalue()
