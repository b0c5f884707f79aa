"""A person's decision carries a non-empty reason and the door's own name for who decided, at every door: the CLI
(the OS user or --as), HTTP (the token's name) and an MCP client session (the client's name from initialize). An
empty or whitespace-only reason is refused with one line naming the fix, and the run stays paused, untouched."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from mcp.client import Client
from mcp_types import Implementation

from controlplane.api.app import create_app
from controlplane.frontdoor.access import ApiSettings
from controlplane.pipeline import run_pipeline
from controlplane.runs.journal import RunRecord, load_run
from controlplane.spec import load_spec
from controlplane.vocab import Stage
from controlplane.workspace import Workspace
from mcp_server.server import build_server
from tests.support import APPROVE_AT, PIPELINE, RATIFY_AT, TOKEN, iso, kintsugi, ms, poison

EMPTY_REASONS = ["", "   \n\t "]


@pytest.fixture
def paused(demo_copy) -> tuple[Workspace, RunRecord]:
    """A poisoned table under policy ratify: the heal verifies and the run waits at the publish gate."""
    ws, _ = demo_copy
    poison(ws)
    record = run_pipeline(ws, load_spec(ws, PIPELINE), policy="ratify", now_ms=ms(RATIFY_AT))
    assert record.status == "paused" and record.checkpoint["gate"] == "publish", record.outcome
    return ws, record


def _untouched(ws: Workspace, before: RunRecord) -> None:
    after = load_run(ws, before.run_id)
    assert after.status == "paused" and len(after.events) == len(before.events)


def _approved_by(ws: Workspace, run_id: str) -> tuple[str, str]:
    event = load_run(ws, run_id).last_event(Stage.APPROVE)
    assert event is not None
    return event.evidence["by"], event.evidence["reason"]


@pytest.mark.parametrize("reason", EMPTY_REASONS)
def test_the_cli_refuses_a_decision_with_an_empty_reason_and_leaves_the_run_paused(paused, reason, monkeypatch, capsys):
    ws, record = paused
    for command in ("approve", "reject", "accept"):
        code, out, err = kintsugi(monkeypatch, capsys, command, record.run_id, "--reason", reason, "-w", str(ws.root))
        assert code == 2, (command, out, err)
        (line,) = err.splitlines()
        assert "reason is empty; say why in a few words" in line, line
    code, _, err = kintsugi(monkeypatch, capsys, "promote", PIPELINE, "1", "--reason", reason, "-w", str(ws.root))
    assert code == 2 and "the promotion's reason is empty" in err
    _untouched(ws, record)


def test_the_cli_records_the_person_named_with_as_and_a_pause_at_the_next_gate_exits_3(paused, monkeypatch, capsys):
    ws, record = paused
    code, out, err = kintsugi(
        monkeypatch,
        capsys,
        "approve",
        record.run_id,
        "--reason",
        "  the heal is right ",
        "--as",
        "ana",
        "--now",
        iso(APPROVE_AT),
        "-w",
        str(ws.root),
    )
    assert code == 3, out + err  # paused again at the promote gate: a person must decide
    assert load_run(ws, record.run_id).status == "paused"
    assert _approved_by(ws, record.run_id) == ("ana", "the heal is right")


def test_http_refuses_an_empty_reason_and_records_the_tokens_name(paused):
    ws, record = paused
    client = TestClient(create_app(ws, ApiSettings(token=TOKEN, token_name="release-bot")), base_url="http://127.0.0.1")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for reason in EMPTY_REASONS:
        for action in ("approve", "reject", "accept"):
            response = client.post(f"/runs/{record.run_id}/{action}", headers=auth, json={"reason": reason})
            assert response.status_code == 422, response.text
            error = response.json()["error"]
            assert error["code"] == "invalid_input" and "reason is empty" in error["message"], error
    missing = client.post(f"/runs/{record.run_id}/approve", headers=auth, json={})
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "invalid_input"
    _untouched(ws, record)
    body = {"reason": "the heal is right", "now": iso(APPROVE_AT)}
    approved = client.post(f"/runs/{record.run_id}/approve", headers=auth, json=body)
    assert approved.status_code == 200 and approved.json()["status"] == "paused", approved.text
    assert _approved_by(ws, record.run_id) == ("http:release-bot", "the heal is right")


def _call(ws: Workspace, name: str, client_name: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def session() -> list[Any]:
        info = Implementation(name=client_name, version="1.0")
        async with Client(build_server(ws), client_info=info) as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in calls]

    return anyio.run(session)


def test_an_mcp_session_refuses_an_empty_reason_and_records_the_clients_name(paused):
    ws, record = paused
    refusals = [
        (tool, {"run_id": record.run_id, "reason": reason})
        for reason in EMPTY_REASONS
        for tool in ("approve", "reject", "accept")
    ] + [("promote", {"model": PIPELINE, "version": 1, "reason": reason}) for reason in EMPTY_REASONS]
    for result in _call(ws, "approve", "release-agent", refusals):
        assert result.is_error
        assert result.structured_content["error"]["code"] == "invalid_input", result.content[0].text
        assert "reason is empty" in result.content[0].text
    _untouched(ws, record)
    arguments = {"run_id": record.run_id, "reason": "the heal is right", "now": iso(APPROVE_AT)}
    (approved,) = _call(ws, "approve", "release-agent", [("approve", arguments)])
    assert not approved.is_error and approved.structured_content["status"] == "paused", approved.content[0].text
    assert _approved_by(ws, record.run_id) == ("mcp:release-agent", "the heal is right")


def test_promote_on_a_version_waiting_for_review_names_the_run_to_decide(paused, monkeypatch, capsys):
    ws, record = paused
    code, _, _ = kintsugi(
        monkeypatch,
        capsys,
        "approve",
        record.run_id,
        "--reason",
        "heal ok",
        "--now",
        iso(APPROVE_AT),
        "-w",
        str(ws.root),
    )
    assert code == 3
    pause = load_run(ws, record.run_id).last_event(Stage.PROMOTE)
    assert pause is not None and pause.status == "paused"
    version = pause.evidence["version"]
    code, _, err = kintsugi(
        monkeypatch, capsys, "promote", PIPELINE, str(version), "--reason", "go", "-w", str(ws.root)
    )
    assert code == 2
    (line,) = err.splitlines()
    assert f"v{version} is APPROVED: run {record.run_id} waits at the promote gate for a person" in line, line
    assert f"kintsugi approve {record.run_id} --reason" in line
