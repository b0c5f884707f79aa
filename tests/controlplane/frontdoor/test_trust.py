"""A version's trust score and its named deductions, read from its signed passport, and the governance scan of a
pipeline's training lineage, at the CLI and over MCP."""

from __future__ import annotations

from datetime import timedelta

import anyio
from fastapi.testclient import TestClient
from mcp.client import Client

from controlplane.api.app import create_app
from controlplane.frontdoor.access import ApiSettings
from controlplane.pipeline import run_pipeline
from controlplane.spec import load_spec
from controlplane.vocab import Policy, RunStatus
from demo.story import land_batch, ms
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


def test_governance_scans_the_training_lineage_read_only_at_the_cli_and_over_mcp(demo_run, monkeypatch, capsys):
    ws, _ = demo_run
    code, out, err = kintsugi(monkeypatch, capsys, "governance", PIPELINE, "-w", str(ws.root))
    assert code == 0, err  # only noted: nothing the gate would block on
    assert out.startswith("noted     pii: PII in the lineage on a column the model does not train on"), out

    async def session():
        async with Client(build_server(ws, read_only=True)) as client:
            return await client.call_tool("governance", {"pipeline": PIPELINE})

    result = anyio.run(session)
    assert not result.is_error, result.content[0].text
    (finding,) = result.structured_content["findings"]
    assert (finding["kind"], finding["severity"], finding["column"]) == ("pii", "noted", None)


def test_a_candidate_paused_at_the_promote_gate_shows_its_draft_trust_at_the_cli_and_http_not_as_signed(
    demo_copy, monkeypatch, capsys
):
    ws, result = demo_copy
    spec = load_spec(ws, PIPELINE)
    day = result.now + timedelta(days=1)
    land_batch(ws, spec, seed=7, anchor=day, metres=False)
    paused = run_pipeline(ws, spec, now_ms=ms(day + timedelta(minutes=5)), policy=Policy.RATIFY)
    assert paused.status is RunStatus.PAUSED, paused.outcome
    candidate = int(paused.checkpoint["trained"]["version"])
    code, out, err = kintsugi(monkeypatch, capsys, "trust", PIPELINE, str(candidate), "-w", str(ws.root))
    assert code == 1, err  # a draft is not a signed passport
    assert out.splitlines()[0].endswith("passport draft"), out
    http = (
        TestClient(create_app(ws, ApiSettings(read_only=True)), base_url="http://127.0.0.1")
        .get(f"/models/{PIPELINE}/passport?version={candidate}")
        .json()
    )
    assert http.get("verification", {}).get("status") == "draft", http
    assert http["passport"]["draft"]["run_id"] == paused.run_id
    assert f"waits at the promote gate of run {paused.run_id}" in http["verification"]["reasons"][0]
