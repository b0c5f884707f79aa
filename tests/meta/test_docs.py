"""The documentation names only what exists: every `kintsugi COMMAND [SUBCOMMAND]` written in a code span or block of
README.md or docs/*.md is a command of the CLI a user installs, every `make TARGET` is a target of the Makefile, every
relative link stays inside the repository and reaches a file, and the README stays short enough to read."""

from __future__ import annotations

import importlib
import re
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Iterator

import pytest
import typer.main

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
README_MAX_LINES = 250

FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"`([^`]+)`")
WORD = r"[a-z][a-z0-9-]*"
KINTSUGI = re.compile(rf"(?<![\w.-])kintsugi[ \t]+({WORD})(?:[ \t]+({WORD}))?")
MAKE = re.compile(rf"(?<![\w/.-])make[ \t]+({WORD})")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def code_of(text: str) -> list[str]:
    """The text of every fenced block, then of every inline code span outside the blocks."""
    blocks = FENCE.findall(text)
    return [*blocks, *SPAN.findall(FENCE.sub("", text))]


def kintsugi_commands(text: str) -> set[tuple[str, str | None]]:
    """(command, the word after it) for each `kintsugi ...` in the code of a markdown text."""
    return {(first, second or None) for code in code_of(text) for first, second in KINTSUGI.findall(code)}


def make_targets(text: str) -> set[str]:
    return {target for code in code_of(text) for target in MAKE.findall(code)}


def cli_tree() -> dict[str, set[str] | None]:
    """Each top-level command of the installed `kintsugi` script: its subcommands for a group, None for a command.
    Built from the app behind the console script, plugins included, as click parses it."""
    (script,) = entry_points(group="console_scripts", name="kintsugi")
    app = importlib.import_module(script.module).app
    root: Any = typer.main.get_command(app)
    return {name: set(getattr(child, "commands", {})) or None for name, child in root.commands.items()}


def unknown_commands(text: str, tree: dict[str, set[str] | None]) -> list[str]:
    """`kintsugi` commands a text names that the CLI does not have. The word after a group must be one of its
    subcommands unless the group runs by itself (`kintsugi runs`) and the word is an argument, not a command name."""
    wrong = []
    for first, second in sorted(kintsugi_commands(text), key=str):
        if first not in tree:
            wrong.append(f"kintsugi {first}")
            continue
        subcommands = tree[first]
        if subcommands is not None and second is not None and second not in subcommands:
            wrong.append(f"kintsugi {first} {second}")
    return wrong


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9_.-]+)[ \t]*:(?!=)", text, re.MULTILINE)) - {".PHONY"}


@pytest.fixture(scope="module")
def tree() -> dict[str, set[str] | None]:
    return cli_tree()


def _doc_ids() -> Iterator[str]:
    return (str(path.relative_to(ROOT)) for path in DOCS)


def test_the_docs_are_there() -> None:
    assert {"README.md", "docs/guard.md", "docs/benchmarks.md", "docs/operations.md"} <= set(_doc_ids())


@pytest.mark.parametrize("doc", DOCS, ids=list(_doc_ids()))
def test_every_kintsugi_command_a_doc_names_exists(doc: Path, tree: dict[str, set[str] | None]) -> None:
    assert unknown_commands(doc.read_text(), tree) == []


@pytest.mark.parametrize("doc", DOCS, ids=list(_doc_ids()))
def test_every_make_target_a_doc_names_exists(doc: Path) -> None:
    assert sorted(make_targets(doc.read_text()) - makefile_targets()) == []


@pytest.mark.parametrize("doc", DOCS, ids=list(_doc_ids()))
def test_every_relative_link_stays_in_the_repository_and_reaches_a_file(doc: Path) -> None:
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path = (doc.parent / target).resolve()
        assert path.is_relative_to(ROOT), f"{doc.name} links outside the repository: {target}"
        assert path.exists(), f"{doc.name} links to a missing file: {target}"


def test_the_readme_is_at_most_250_lines() -> None:
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to docs/"


def test_the_checks_read_commands_and_targets_from_code_and_catch_a_made_up_one(
    tree: dict[str, set[str] | None],
) -> None:
    text = (
        "Run `kintsugi run PIPELINE` or `kintsugi runs show ID`, then `make smoke`.\n"
        "```sh\nkintsugi frobnicate --now T   # made up\nkintsugi passport frobnicate\nmake frobnicate\n```\n"
        "Prose is not code: kintsugi frobnicates nothing, and make sense of it.\n"
    )
    assert unknown_commands(text, tree) == ["kintsugi frobnicate", "kintsugi passport frobnicate"]
    assert make_targets(text) - makefile_targets() == {"frobnicate"}
    assert ("run", "pipeline") not in kintsugi_commands(text)  # an argument in capitals is not a word
    assert {"run", "guard", "runs", "passport", "chaos"} <= set(tree)


def test_the_operations_guide_lists_exactly_the_tools_the_mcp_server_serves():
    from mcp_server.server import MUTATING_TOOLS, READ_ONLY_TOOLS

    text = (ROOT / "docs" / "operations.md").read_text()
    listed = text[text.index("Tools: ") : text.index(". The skill comes with them")]
    assert set(re.findall(r"`([a-z_]+)`", listed)) == set(READ_ONLY_TOOLS + MUTATING_TOOLS)
