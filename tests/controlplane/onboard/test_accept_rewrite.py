"""`kintsugi accept RUN_ID --finding history_changed --reason TEXT`: rows that passed earlier, restated by their
producer since, block every later run (`history_changed`: no check can tell a restatement from a silent rewrite).
A person who knows the restatement is right accepts it as the history: the next run is CLEAN and trains with no
other command; `--undo` puts the kept profile back and the block returns. Through the real CLI, with the real
stores (DataHub Lite, MLflow, the workspace)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.incidents import read_incidents
from controlplane.datahub.notes import read_memory_links
from controlplane.onboard.accept_block import ACCEPTED_URL
from controlplane.spec import load_spec
from controlplane.stages.acceptances import load_acceptances
from controlplane.stages.kept_reference import batch_text, load_state
from controlplane.workspace import Workspace

from onboard_support import INIT_AT, NAME, RUN_AT, cli, copy_ws, weather

REASON = "the station restated its readings for those days"
LAND_AT, BLOCKED_AT = "2013-02-01T06:00:00+00:00", "2013-02-01T07:00:00+00:00"
ACCEPT_AT, UNDO_AT, NEXT_AT = "2013-02-01T08:00:00+00:00", "2013-02-01T08:30:00+00:00", "2013-02-01T09:00:00+00:00"


def _run(ws: Workspace, at: str) -> tuple[int, dict]:
    code, out, err = cli("run", NAME, "--now", at, "--json", workspace=ws.root)
    assert code in (0, 1), err
    return code, json.loads(out)


def _history_blocks(record: dict) -> list[dict]:
    detect = [e for e in record["events"] if e["stage"] == "detect"][-1]["evidence"]
    return [f for f in detect["findings"] if f["severity"] == "block" and f["kind"] == "history_changed"]


@pytest.fixture(scope="module")
def restated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str, str]:
    """A year of daily rows (init, a first run); the producer restates a fortnight of it (a few tenths of a degree,
    as a recalibration would) and a new month lands: BLOCKED on history_changed alone."""
    ws = Workspace(tmp_path_factory.mktemp("rewrite") / "ws")
    (ws.root / "data").mkdir(parents=True)
    table = ws.root / "data" / "daily.parquet"
    weather().to_parquet(table, index=False)
    init = ["init", NAME, "--data", str(table), "--target", "temp_max", "--time-column", "date"]
    code, _, err = cli(*init, "--now", INIT_AT, "--yes", workspace=ws.root)
    assert code == 0, err
    assert _run(ws, RUN_AT)[0] == 0
    frame = pd.read_parquet(table)
    days = (frame["date"] >= "2012-06-03") & (frame["date"] < "2012-06-17")
    frame.loc[days, "temp_min"] = (frame.loc[days, "temp_min"] + 0.3).round(1)
    pd.concat([frame, weather("2013-01-01", "2013-02-01")]).to_parquet(table, index=False)
    code, record = _run(ws, BLOCKED_AT)
    assert code == 1 and record["status"] == "blocked", record["outcome"]
    blocks = _history_blocks(record)
    assert blocks and all(f["kind"] == "history_changed" for f in blocks), record["outcome"]
    assert f"kintsugi accept {record['run_id']} --finding history_changed" in record["outcome"], record["outcome"]
    return ws, record["run_id"], blocks[0]["params"]["batch"]


def test_a_restated_batch_accepted_as_the_history_lets_the_next_run_train_and_undo_brings_the_block_back(
    restated, tmp_path
):
    ws, run_id, batch = copy_ws(restated[0], tmp_path / "ws"), restated[1], restated[2]
    kept_before = batch_text(ws, NAME, batch)
    code, out, err = cli(
        "accept", run_id, "--finding", "history_changed", "--reason", REASON, "--as", "operator", "--now", ACCEPT_AT,
        workspace=ws.root,
    )  # fmt: skip
    assert code == 0, err
    accepted = [a for a in load_acceptances(ws, NAME) if a.run_id == run_id]
    assert [(a.kind.value, a.batch, a.by, a.in_force) for a in accepted] == [
        ("history_changed", batch, "operator", True)
    ]
    assert batch_text(ws, NAME, batch) != kept_before  # the batch is kept as the table holds it now
    spec = load_spec(ws, NAME)
    with metadata_session(ws, read_only=True) as metadata:
        links = read_memory_links(metadata, spec.feature_table)
        assert any(link.url.startswith(ACCEPTED_URL) and REASON in link.description for link in links)
        raised = [i for i in read_incidents(metadata) if i.key is not None and i.key[1] == "history_changed"]
        assert raised and all(i.state == "RESOLVED" for i in raised)
    state = load_state(ws, NAME)
    assert state is not None and batch in state.batches

    code, record = _run(ws, NEXT_AT)  # the same table, no other command: the restated rows are the history now
    assert code == 0 and record["status"] in ("promoted", "kept", "unchanged"), record["outcome"]
    assert not _history_blocks(record)
    assert any(e["stage"] == "train" for e in record["events"]), record["outcome"]


def test_an_accepted_rewrite_taken_back_puts_the_kept_profile_back_and_the_block_returns(restated, tmp_path):
    ws, run_id, batch = copy_ws(restated[0], tmp_path / "ws"), restated[1], restated[2]
    kept_before = batch_text(ws, NAME, batch)
    accept = ["accept", run_id, "--reason", REASON, "--as", "operator"]
    assert cli(*accept, "--finding", "history_changed", "--now", ACCEPT_AT, workspace=ws.root)[0] == 0
    code, _, err = cli(*accept, "--undo", "--now", UNDO_AT, workspace=ws.root)
    assert code == 0, err
    assert batch_text(ws, NAME, batch) == kept_before
    assert [a.in_force for a in load_acceptances(ws, NAME) if a.run_id == run_id] == [False]
    code, record = _run(ws, NEXT_AT)
    assert code == 1 and _history_blocks(record), record["outcome"]


def test_a_rewrite_named_with_a_finding_the_run_was_not_blocked_by_is_refused_and_nothing_is_written(
    restated, tmp_path
):
    ws, run_id = copy_ws(restated[0], tmp_path / "ws"), restated[1]
    before = {p: p.read_bytes() for p in sorted((ws.root / "references").rglob("*")) if p.is_file()}
    code, _, err = cli(
        "accept", run_id, "--finding", "history_changed", "--finding", "drift:temp_max", "--reason", REASON,
        "--as", "operator", workspace=ws.root,
    )  # fmt: skip
    assert code != 0 and err.count("\n") <= 2, err
    after = {p: p.read_bytes() for p in sorted((ws.root / "references").rglob("*")) if p.is_file()}
    assert after == before


def test_a_rewrite_is_accepted_and_taken_back_at_the_http_door_and_accepted_in_an_mcp_session(restated, tmp_path):
    """One rule at every door: HTTP (the token's name) and an MCP client session (the client's name) reach the same
    acceptance as the CLI, read back from the kept acceptances and the batch's kept profile."""
    import anyio
    from fastapi.testclient import TestClient
    from mcp.client import Client
    from mcp_types import Implementation

    from controlplane.api.app import create_app
    from controlplane.frontdoor.access import ApiSettings
    from mcp_server.server import build_server
    from tests.support import TOKEN

    ws, run_id, batch = copy_ws(restated[0], tmp_path / "http"), restated[1], restated[2]
    kept_before = batch_text(ws, NAME, batch)
    client = TestClient(create_app(ws, ApiSettings(token=TOKEN, token_name="release-bot")), base_url="http://127.0.0.1")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = {"reason": REASON, "findings": ["history_changed"]}
    accepted = client.post(f"/runs/{run_id}/accept", headers=auth, json=body)
    assert accepted.status_code == 200, accepted.text
    assert [(a.by, a.in_force) for a in load_acceptances(ws, NAME)] == [("http:release-bot", True)]
    assert batch_text(ws, NAME, batch) != kept_before
    taken_back = client.post(f"/runs/{run_id}/accept", headers=auth, json={"reason": REASON, "undo": True})
    assert taken_back.status_code == 200, taken_back.text
    assert batch_text(ws, NAME, batch) == kept_before

    ws = copy_ws(restated[0], tmp_path / "mcp")

    async def session() -> object:
        async with Client(build_server(ws), client_info=Implementation(name="release-agent", version="1.0")) as mcp:
            arguments = {"run_id": run_id, "reason": REASON, "findings": ["history_changed"]}
            return await mcp.call_tool("accept", arguments)

    result = anyio.run(session)
    assert not result.is_error, result.content[0].text  # type: ignore[attr-defined]
    assert [(a.by, a.batch) for a in load_acceptances(ws, NAME)] == [("mcp:release-agent", batch)]
    assert batch_text(ws, NAME, batch) != kept_before
