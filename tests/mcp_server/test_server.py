"""The bundled MCP server driven by the SDK's own client, over stdio (a spawned server) and over streamable HTTP
(the API's /mcp mount under uvicorn): tools with output schemas, the guard, the promotion gate, ratify gates."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from controlplane.frontdoor.access import ApiSettings
from controlplane.workspace import Workspace
from mcp_server.commands import build_app
from mcp_server.server import MUTATING_TOOLS, READ_ONLY_TOOLS, build_server
from mcp_server.skill import SKILL_NAME, SKILL_URI
from tests.support import (
    APPROVE_AT,
    BLOCKED_AT,
    GUARD_AT,
    PIPELINE,
    RATIFY_AT,
    TOKEN,
    iso,
    poison,
    served,
    use_estimator,
)

ROOT = Path(__file__).resolve().parents[2]
STAGES_HEALED = ["detect", "incident", "heal", "verify", "publish"]


def _stdio(ws: Workspace, **env: str) -> Client:
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "controlplane", "mcp", "--workspace", str(ws.root)],
            cwd=str(ROOT),
            env=env or None,
        )
    )


def _ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return result.structured_content


async def _agent_story(client: Client, ws: Workspace) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert sorted(tools) == sorted(READ_ONLY_TOOLS + MUTATING_TOOLS)
    assert all(t.output_schema and t.output_schema.get("type") == "object" for t in tools.values())
    assert "verdict" in tools["guard"].output_schema["properties"]

    guard = _ok(await client.call_tool("guard", {"pipeline": PIPELINE, "now": iso(GUARD_AT)}))
    assert guard["verdict"] == "CLEAN" and guard["findings"] == [] and guard["checks"] > 0

    # a worse candidate is trained and the gate keeps the champion; promoting it through MCP is refused all the same
    champion = _ok(await client.call_tool("get_passport", {"model": PIPELINE}))["version"]
    with use_estimator(ws, "sklearn.dummy.DummyRegressor"):
        blocked = _ok(await client.call_tool("run", {"pipeline": PIPELINE, "now": iso(BLOCKED_AT)}))
    assert blocked["status"] == "kept", blocked["outcome"]
    version = next(e for e in blocked["events"] if e["stage"] == "promote")["evidence"]["version"]
    refused = await client.call_tool("promote", {"model": PIPELINE, "version": version, "reason": "try it"})
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == "gate_refused"
    assert refused.content[0].text == (
        f"{PIPELINE} v{version}: its signed verdict is BLOCKED: it cannot be promoted; only a version the gate "
        "APPROVED can be promoted; fix the evidence and run the loop again [gate_refused]"
    )
    assert _ok(await client.call_tool("get_passport", {"model": PIPELINE}))["version"] == champion

    # ratify: the run pauses at the publish gate, then at the promote gate, and completes once approved
    poison(ws)
    progress: list[tuple[float, str]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message or ""))

    paused = _ok(
        await client.call_tool(
            "run", {"pipeline": PIPELINE, "policy": "ratify", "now": iso(RATIFY_AT)}, progress_callback=on_progress
        )
    )
    assert (paused["status"], paused["gate"]) == ("paused", "publish")
    assert [s["stage"] for s in paused["stages"]] == STAGES_HEALED
    waiting = await client.call_tool("get_run", {"run_id": paused["run_id"]})
    assert len(waiting.content[0].text.encode()) < 2048  # the decision first, in under 2 KB
    decision = _ok(waiting)
    assert decision["status"] == "paused" and "publish gate waits" in decision["to_decide"]
    assert decision["next"].startswith(f"approve(run_id={paused['run_id']!r}, reason=...)")
    assert [(n, m.split()[0]) for n, m in progress] == list(enumerate(STAGES_HEALED, start=1))  # live, per stage
    run_id = paused["run_id"]
    first = _ok(await client.call_tool("approve", {"run_id": run_id, "now": iso(APPROVE_AT), "reason": "heal checked"}))
    assert (first["status"], first["gate"]) == ("paused", "promote")
    draft = _ok(await client.call_tool("get_passport", {"model": PIPELINE, "version": first["candidate"]}))
    assert draft["verification"]["status"] == "draft" and draft["passport"]["draft"]["run_id"] == run_id
    assert draft["passport"]["body"]["approval"] is None and draft["passport"]["body"]["trust"]["score"] > 0
    done = _ok(await client.call_tool("approve", {"run_id": run_id, "now": iso(APPROVE_AT), "reason": "it beats v1"}))
    assert done["status"] == "promoted", done["outcome"]
    decided = _ok(await client.call_tool("get_run", {"run_id": run_id}))
    assert (decided["verdict"], decided["to_decide"]) == ("APPROVED", None)
    assert any(r.startswith("ratified by mcp:") for r in decided["reasons"]), decided["reasons"]
    assert decided["comparison"]["candidate_version"] and decided["comparison"]["champion_version"] == champion
    timeline = _ok(await client.call_tool("get_run_detail", {"run_id": run_id}))
    assert [(s["stage"], s["status"]) for s in timeline["stages"]][-2:] == [
        ("approve", "approved"),
        ("promote", "APPROVED"),
    ]
    signed = _ok(await client.call_tool("get_passport", {"model": PIPELINE}))
    new_champion = signed["version"]
    assert new_champion not in (champion, version) and new_champion == first["candidate"]
    assert signed["verification"]["status"] == "valid"
    approval = signed["passport"]["body"]["approval"]
    assert approval["reason"] == "it beats v1" and approval["by"].startswith("mcp:"), approval
    again = await client.call_tool("approve", {"run_id": run_id, "reason": "once more"})
    assert again.is_error and "is promoted; approve needs it paused" in again.content[0].text


def test_agent_over_stdio(demo_copy):
    ws, _ = demo_copy

    async def story() -> None:
        async with _stdio(ws) as client:
            await _agent_story(client, ws)

    anyio.run(story)


def test_agent_over_streamable_http_on_the_api(demo_copy):
    ws, _ = demo_copy
    app = build_app(ws, ApiSettings(token=TOKEN))

    async def story(url: str) -> None:
        async with httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {TOKEN}"}, timeout=httpx2.Timeout(30, read=300)
        ) as http:
            async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
                await _agent_story(client, ws)

    with served(app) as url:
        anyio.run(story, url)


async def _the_skill_is_served(client: Client) -> None:
    """The skill comes over MCP itself, as a resource and as a prompt: an agent needs nothing else."""
    skill = (ROOT / "skills" / SKILL_NAME / "SKILL.md").read_text()
    resources = (await client.list_resources()).resources
    assert [(str(r.uri), r.mime_type) for r in resources] == [(SKILL_URI, "text/markdown")]
    read = await client.read_resource(SKILL_URI)
    assert read.contents[0].text == skill
    assert [p.name for p in (await client.list_prompts()).prompts] == ["promote_gate"]
    prompt = await client.get_prompt("promote_gate")
    assert prompt.messages[0].content.text == skill


def test_read_only_mode_hides_and_refuses_every_mutating_tool(demo_copy):
    ws, _ = demo_copy
    runs_before = sorted(p.name for p in ws.runs.iterdir())

    async def story() -> None:
        async with _stdio(ws, KINTSUGI_READ_ONLY="1") as client:
            listed = sorted(t.name for t in (await client.list_tools()).tools)
            assert listed == sorted(READ_ONLY_TOOLS)
            await _the_skill_is_served(client)
            for name, arguments in [
                ("run", {"pipeline": PIPELINE}),
                ("approve", {"run_id": "x", "reason": "r"}),
                ("accept", {"run_id": "x", "reason": "r"}),
                ("reject", {"run_id": "x", "reason": "r"}),
                ("undo", {"run_id": "x"}),
                ("promote", {"model": PIPELINE, "version": 1, "reason": "r"}),
                ("drill", {}),
                ("recover", {"run_id": "x"}),
            ]:
                result = await client.call_tool(name, arguments)
                assert result.is_error, name
                assert result.structured_content["error"]["code"] == "read_only", name
                assert "read-only" in result.content[0].text
            assert _ok(await client.call_tool("list_pipelines", {}))["pipelines"][0]["name"]

    anyio.run(story)
    assert sorted(p.name for p in ws.runs.iterdir()) == runs_before
    assert set(MUTATING_TOOLS) == {"run", "approve", "reject", "accept", "undo", "promote", "recover", "drill"}


def test_drill_errors_name_the_fix(demo_copy):
    ws, _ = demo_copy

    async def story() -> Any:
        async with Client(build_server(ws)) as client:
            return await client.call_tool("drill", {"scenarios": ["no_such_scenario"]})

    unknown = anyio.run(story)
    assert unknown.is_error and unknown.structured_content["error"]["code"] == "invalid_input"
    assert "unknown drill scenario(s): no_such_scenario; use some of: unit_km_to_m" in unknown.content[0].text


def test_an_unexpected_error_in_a_tool_is_a_tool_error_with_one_line(tmp_path, monkeypatch):
    from controlplane.frontdoor import services

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(services, "get_run", boom)

    async def call() -> None:
        async with Client(build_server(Workspace(tmp_path))) as client:
            failed = await client.call_tool("get_run", {"run_id": "r1"})
            assert failed.is_error
            assert failed.content[0].text == (
                "unexpected RuntimeError in get_run: boom second line; report it with the run id [internal]"
            )
            assert failed.structured_content["error"]["code"] == "internal"
            assert _ok(await client.call_tool("list_runs", {}))["runs"] == []  # the session goes on

    anyio.run(call)


def test_a_run_tool_that_fails_in_training_names_the_run_it_failed(demo_copy, monkeypatch):
    from controlplane.runs.journal import load_run

    ws, _ = demo_copy

    def train(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("controlplane.pipeline.train", train)

    async def call() -> None:
        async with Client(build_server(ws)) as client:
            failed = await client.call_tool("run", {"pipeline": PIPELINE, "now": iso(GUARD_AT)})
            assert failed.is_error
            text = failed.content[0].text
            prefix = "unexpected RuntimeError in run: boom; report it with the run id "
            assert text.startswith(prefix) and text.endswith(" [internal]"), text
            run_id = text[len(prefix) : -len(" [internal]")]
            assert load_run(ws, run_id).status == "failed"

    anyio.run(call)
