"""The `kintsugi` app as a user reads it: every command's help."""

from __future__ import annotations

from typing import Any

import typer
from typer.testing import CliRunner

from controlplane.cli.main import build_app


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command's path, groups included (typer's click commands: a group holds `commands`)."""
    found = [path]
    for name, command in sorted(getattr(group, "commands", {}).items()):
        found += _commands(command, (*path, name))
    return found


def test_no_flag_shows_a_value_to_give() -> None:
    """A flag (`--json`, `--help`, `--undo`) takes no value, so its help shows no `<bool>` type."""
    app = build_app()
    paths = _commands(typer.main.get_command(app))
    assert len(paths) > 20
    runner = CliRunner()
    shown = {" ".join(p) or "kintsugi": runner.invoke(app, [*p, "--help"], terminal_width=200).output for p in paths}
    assert all("Usage:" in text and "--help" in text for text in shown.values())
    assert [name for name, text in shown.items() if "<bool>" in text] == []
