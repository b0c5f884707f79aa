"""A version's trust score and its named deductions, read from its signed passport, at the CLI and over MCP."""

from __future__ import annotations

import anyio
from mcp.client import Client

from mcp_server.server import build_server
from tests.support import PIPELINE, kintsugi


def test_trust_prints_the_champions_score_and_each_named_deduction(demo_run, monkeypatch, capsys):
    ws, _ = demo_run
    code, out, err = kintsugi(monkeypatch, capsys, "trust", PIPELINE, "-w", str(ws.root))
    assert code == 0, err
    head, *deductions = out.splitlines()
    assert head.startswith(f"{PIPELINE} v2: trust ") and head.endswith("passport valid"), head
    assert any("healed by this run: unit_rescale on distance_km" in line for line in deductions), out
    assert all(line.startswith("  -") for line in deductions)
    stated = 100 - sum(int(line.split()[0].lstrip("-")) for line in deductions)
    assert f"trust {stated}/100" in head  # the score is 100 less the deductions it names


def test_an_agent_reads_the_same_trust_score_over_mcp(demo_run):
    ws, _ = demo_run

    async def session():
        async with Client(build_server(ws, read_only=True)) as client:
            return await client.call_tool("get_trust", {"model": PIPELINE, "version": 1})

    result = anyio.run(session)
    assert not result.is_error, result.content[0].text
    found = result.structured_content
    assert (found["version"], found["verification"]["status"]) == (1, "valid")
    assert found["score"] == 100 - sum(d["points"] for d in found["deductions"])
    assert any(d["reason"].startswith("no champion to measure a gain against") for d in found["deductions"])
