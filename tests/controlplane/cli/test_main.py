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


def test_every_command_is_listed_by_its_whole_first_sentence() -> None:
    """A group's help lists each command by its docstring's first paragraph: a line of that listing ends only where
    the next word would not fit (typer keeps the source's line breaks in that paragraph: `accept`'s is two)."""
    app = build_app()
    runner = CliRunner()
    early = []
    for path in _commands(typer.main.get_command(app)):
        panel = runner.invoke(app, [*path, "--help"]).output.split("Commands ─", 1)[1:]
        rows = [row for row in "".join(panel).splitlines() if row.startswith("│ ") and row.endswith("│")]
        if not rows:
            continue
        start = len(rows[0]) - len(rows[0][2:].lstrip().split(" ", 1)[1].lstrip()) - 1  # the summaries' column
        width = len(rows[0]) - 2 - start
        for row, after in zip(rows, rows[1:]):
            said, next_word = row[start:-1].rstrip(), after[start:-1].split()
            if after[1:start].strip() == "" and next_word and len(said) + 1 + len(next_word[0]) <= width:
                early.append(f"{' '.join(path) or 'kintsugi'}: {said!r} / {next_word[0]!r}")
    assert early == []
