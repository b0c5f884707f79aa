"""The agent skill `skills/kintsugi-promote-gate/SKILL.md` says only what is true: its front matter names it and
says when to load it; every `kintsugi` command in its code blocks runs against a real workspace (a run paused at a
gate) and ends 0 or 1, never 2 nor a traceback; every command it names inline exists with the flags it gives; every
MCP tool it names is listed by the real server (`kintsugi mcp` over stdio, through the SDK's client) and takes the
arguments it names."""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import anyio
import pytest
import yaml
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from controlplane.frontdoor import services
from controlplane.runs.identity import rebase_if_moved
from controlplane.vocab import RunStatus
from tests.support import PIPELINE, RATIFY_AT, champion, copy_workspace, kintsugi, ms, poison

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "skills" / "kintsugi-promote-gate" / "SKILL.md"
TEXT = SKILL.read_text()
FRONT, BODY = re.fullmatch(r"---\n(.*?)\n---\n(.*)", TEXT, re.S).groups()  # type: ignore[union-attr]
BLOCKS = re.findall(r"```[a-z]*\n(.*?)```", BODY, re.S)
RUNNABLE = [line.strip() for block in BLOCKS for line in block.splitlines() if line.strip().startswith("kintsugi ")]
INLINE = sorted(set(re.findall(r"`(kintsugi [^`]+)`", BODY)))
TOOL_CALLS = re.findall(r"`([a-z_]+)\(([^)`]*)\)`", BODY)
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$")


def test_the_front_matter_names_the_skill_and_says_when_to_load_it():
    front = yaml.safe_load(FRONT)
    assert set(front) == {"name", "description"}
    assert front["name"] == SKILL.parent.name == "kintsugi-promote-gate"
    description = front["description"]
    assert isinstance(description, str) and 40 < len(description) <= 1024
    assert 1 <= description.count(". ") + description.endswith(".") <= 2  # one or two sentences
    assert "Load this" in description


@pytest.fixture(scope="module")
def paused(demo_run, tmp_path_factory):
    """The demo estate with a poisoned batch and a run under ratify paused at the publish gate."""
    source, _ = demo_run
    ws = copy_workspace(source, tmp_path_factory.mktemp("skill") / "ws")
    rebase_if_moved(ws)
    poison(ws)
    record = services.run(ws, PIPELINE, "ratify", ms(RATIFY_AT))
    assert record.status is RunStatus.PAUSED, record.outcome
    return ws, record.run_id


def _bound(command: str, run_id: str, version: int) -> list[str]:
    """The command's words with its placeholders bound to the workspace's pipeline, paused run and champion."""
    values = {"PIPELINE": PIPELINE, "MODEL": PIPELINE, "RUN_ID": run_id, "VERSION": str(version)}
    words = shlex.split(command, comments=True)[1:]
    unbound = [w for w in words if PLACEHOLDER.match(w) and w not in values]
    assert not unbound, f"{command}: no value for {unbound}"
    return [values.get(w, w) for w in words]


def test_the_skill_shows_the_procedure_in_commands():
    verbs = {" ".join(w for w in shlex.split(c, comments=True)[1:3] if w.islower()) for c in RUNNABLE}
    assert {"guard", "run", "runs show", "approve", "reject", "passport show"} <= verbs


@pytest.mark.parametrize("command", RUNNABLE, ids=[c.split("#")[0].strip() for c in RUNNABLE])
def test_every_command_in_a_code_block_runs_and_ends_in_a_verdict(command, paused, tmp_path, monkeypatch, capsys):
    source, run_id = paused
    ws = copy_workspace(source, tmp_path / "ws")  # each command on its own copy: the paused run is there for each
    rebase_if_moved(ws)
    args = _bound(command, run_id, champion(ws) or 1)
    code, out, err = kintsugi(monkeypatch, capsys, *args, "--workspace", str(ws.root))
    assert code in (0, 1), f"{command}: exit {code}: {err.strip() or out[-500:]}"
    assert "Traceback" not in out + err


@pytest.mark.parametrize("command", INLINE)
def test_every_command_named_inline_exists_with_its_flags(command, monkeypatch, capsys):
    words = shlex.split(command)[1:]
    lead = next((i for i, w in enumerate(words) if w.startswith("-") or PLACEHOLDER.match(w)), len(words))
    path = words[:lead]  # the command's own words, before its arguments and flags
    monkeypatch.setenv("COLUMNS", "200")
    code, out, err = kintsugi(monkeypatch, capsys, *path, "--help")
    assert code == 0, f"{command}: {err}"
    for flag in (w for w in words if w.startswith("--")):
        assert re.search(re.escape(flag) + r"(?![\w-])", out), f"{command}: `kintsugi {' '.join(path)}` has no {flag}"


def test_every_mcp_tool_it_names_is_served_with_the_arguments_it_names(demo_copy):
    ws, _ = demo_copy
    named = {name: [a.strip() for a in args.split(",") if a.strip()] for name, args in TOOL_CALLS}
    assert len(named) >= 13

    async def listed() -> dict[str, set[str]]:
        server = StdioServerParameters(
            command=sys.executable, args=["-m", "controlplane", "mcp", "--workspace", str(ws.root)], cwd=str(ROOT)
        )
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            return {t.name: set(t.input_schema.get("properties", {})) for t in tools}

    served = anyio.run(listed)
    assert set(named) == set(served), "the skill names every tool the server lists, and no other"
    for name, arguments in named.items():
        assert set(arguments) <= served[name], f"{name}({', '.join(arguments)}): takes {sorted(served[name])}"


def test_the_package_ships_the_skill_the_readme_points_to():
    import tomllib

    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    assert [str(SKILL.relative_to(ROOT))] in shipped.values()
    assert str(SKILL.relative_to(ROOT)) in (ROOT / "README.md").read_text()
