"""`kintsugi accept RUN_ID --finding KIND:COLUMN --reason TEXT` on a run the guard blocked: two charges step up to a
new tariff in a batch (drift far beyond their natural variation, no cause explains it: a block).
Accepted, the batch joins the reference, so the next batch like it passes; the acceptance is read back from the
workspace, from DataHub and from the next champion's passport; `--undo` takes the batch out again, and the block
returns. Through the real CLI, with the real stores (DataHub Lite, MLflow, the workspace)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.incidents import read_incidents
from controlplane.datahub.notes import read_memory_links
from controlplane.onboard.accept_block import ACCEPTED_URL
from controlplane.spec import load_spec
from controlplane.stages.acceptances import acceptances_path, load_acceptances
from controlplane.stages.kept_reference import load_state
from controlplane.workspace import Workspace

from onboard_support import INIT_AT, NAME, RUN_AT, cli, copy_ws, weather

REASON = "the new tariff raised both charges, by design"
BLOCKED_RUN_AT, NEXT_LAND_AT, NEXT_RUN_AT = (
    "2013-02-01T07:00:00+00:00",
    "2013-03-01T06:00:00+00:00",
    "2013-03-01T07:00:00+00:00",
)


def _with_fees(frame: pd.DataFrame, *, raised: bool) -> pd.DataFrame:
    """Two charges near 10 and 5 on every row, or (`raised`) stepped up to near 40 and 25: a new tariff, thirty and
    twenty times their day-to-day spread above anything the reference held."""
    frame = frame.copy()
    rng = np.random.default_rng(len(frame))
    frame["fee"] = (rng.normal(40 if raised else 10, 1, len(frame))).round(2)
    frame["surcharge"] = (rng.normal(25 if raised else 5, 1, len(frame))).round(2)
    return frame


def _land(ws: Workspace, frame: pd.DataFrame, name: str, at: str) -> None:
    path = ws.root.parent / f"{name}.parquet"
    frame.to_parquet(path, index=False)
    code, _, err = cli("land", NAME, str(path), "--now", at, workspace=ws.root)
    assert code == 0, err


def _run(ws: Workspace, at: str) -> tuple[int, dict]:
    code, out, err = cli("run", NAME, "--now", at, "--json", workspace=ws.root)
    assert code in (0, 1), err
    return code, json.loads(out)


def _detect(record: dict) -> dict:
    return [e for e in record["events"] if e["stage"] == "detect"][-1]["evidence"]


def _blocks(record: dict) -> list[str]:
    return sorted(f"{f['kind']}:{f['column']}" for f in _detect(record)["findings"] if f["severity"] == "block")


@pytest.fixture(scope="module")
def blocked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str]:
    """A year of daily rows at the old tariff (init, a first run), then a month at the new one: BLOCKED."""
    ws = Workspace(tmp_path_factory.mktemp("accept") / "ws")
    (ws.root / "data").mkdir(parents=True)
    _with_fees(weather(), raised=False).to_parquet(ws.root / "data" / "daily.parquet", index=False)
    init = ["init", NAME, "--data", str(ws.root / "data" / "daily.parquet"), "--target", "temp_max"]
    code, _, err = cli(*init, "--time-column", "date", "--now", INIT_AT, "--yes", workspace=ws.root)
    assert code == 0, err
    assert _run(ws, RUN_AT)[0] == 0
    _land(ws, _with_fees(weather("2013-01-01", "2013-02-01"), raised=True), "first-month", "2013-02-01T06:00:00+00:00")
    code, record = _run(ws, BLOCKED_RUN_AT)
    assert code == 1 and record["status"] == "blocked", record["outcome"]
    assert _blocks(record) == ["drift:fee", "drift:surcharge"]
    return ws, record["run_id"]


def _copy(blocked: tuple[Workspace, str], tmp_path: Path) -> tuple[Workspace, str]:
    return copy_ws(blocked[0], tmp_path / "ws"), blocked[1]


ACCEPT_AT = "2013-02-01T09:00:00+00:00"  # after the blocked run, before the next batch lands (DataHub keeps as_of)
UNDO_AT, RERUN_AT = "2013-02-01T09:30:00+00:00", "2013-02-01T10:00:00+00:00"


def _accept(ws: Workspace, run_id: str, *args: str) -> tuple[int, str, str]:
    return cli("accept", run_id, "--reason", REASON, "--as", "operator", "--now", ACCEPT_AT, *args, workspace=ws.root)


def test_an_accepted_block_lets_its_batch_into_the_reference_and_the_next_batch_like_it_passes(blocked, tmp_path):
    ws, run_id = _copy(blocked, tmp_path)
    before = load_state(ws, NAME)
    assert before is not None
    code, out, err = _accept(ws, run_id, "--finding", "drift:fee", "--finding", "drift:surcharge")
    assert code == 0, err
    batch = f"after-{before.watermark_ms}"
    assert out == (
        f"accepted as the new normal by operator (run {run_id}, batch {batch}): drift on fee, drift on surcharge — "
        f"{REASON}; the batch joined the reference\n"
    )
    after = load_state(ws, NAME)
    assert after is not None and after.batches == (*before.batches, batch)
    assert after.watermark_ms is not None and after.watermark_ms > before.watermark_ms

    (fee, surcharge) = load_acceptances(ws, NAME)
    assert (fee.run_id, fee.kind.value, fee.column, fee.by, fee.reason, fee.batch) == (
        run_id,
        "drift",
        "fee",
        "operator",
        REASON,
        batch,
    )
    assert fee.in_force and surcharge.finding == "drift:surcharge"
    with metadata_session(ws, read_only=True) as metadata:
        (note,) = read_memory_links(metadata, load_spec(ws, NAME).feature_table, prefix=ACCEPTED_URL)
        incidents = {r.urn: r for r in read_incidents(metadata)}
    assert note.by == "urn:li:corpuser:operator" and "drift on fee, drift on surcharge" in note.description
    assert REASON in note.description
    assert fee.incident and surcharge.incident and fee.incident != surcharge.incident
    assert incidents[fee.incident].state == "RESOLVED" and REASON in incidents[fee.incident].message

    _land(ws, _with_fees(weather("2013-02-01", "2013-03-01"), raised=True), "second-month", NEXT_LAND_AT)
    code, record = _run(ws, NEXT_RUN_AT)
    assert code == 0, record["outcome"]
    assert _detect(record)["findings"] == []  # unaccepted, the charges would block here again
    assert record["status"] == "promoted", record["outcome"]

    code, out, err = cli("passport", "show", NAME, workspace=ws.root)
    assert code == 0, err
    named = json.loads(out)["body"]["acceptances"]
    assert [(a["run_id"], a["kind"], a["column"], a["by"], a["reason"]) for a in named] == [
        (run_id, "drift", "fee", "operator", REASON),
        (run_id, "drift", "surcharge", "operator", REASON),
    ]
    code, out, err = cli("passport", "verify", NAME, workspace=ws.root)
    assert code == 0, out + err

    code, out, err = _accept(ws, run_id, "--undo")  # a later batch was kept on top of it: refused, nothing moves
    assert (code, out) == (2, "")
    assert err == (
        f"error: batches were kept after batch {batch} of run {run_id}; undo the later runs first, newest first; "
        "nothing was changed\n"
    )
    assert all(a.in_force for a in load_acceptances(ws, NAME))


def test_a_block_is_refused_while_another_block_of_the_run_is_not_named(blocked, tmp_path):
    ws, run_id = _copy(blocked, tmp_path)
    state, run_json = load_state(ws, NAME), (ws.run_dir(run_id) / "run.json").read_text()
    code, out, err = _accept(ws, run_id, "--finding", "drift:fee")
    assert (code, out) == (2, "")
    assert err == (
        f"error: run {run_id} is also blocked by drift:surcharge: its batch cannot join the reference while another "
        "failure stands; name each with --finding if it too is the new normal, or fix it upstream and run again\n"
    )
    assert load_state(ws, NAME) == state and not acceptances_path(ws, NAME).exists()
    assert (ws.run_dir(run_id) / "run.json").read_text() == run_json


def test_a_finding_the_guard_did_not_block_on_is_refused_with_the_blocks_named(blocked, tmp_path):
    ws, run_id = _copy(blocked, tmp_path)
    state = load_state(ws, NAME)
    code, out, err = _accept(ws, run_id, "--finding", "drift:fee", "--finding", "volume_drop")
    assert (code, out) == (2, "")
    assert err == (
        f"error: run {run_id} was not blocked by the guard on volume_drop; its blocking findings: drift:fee, "
        "drift:surcharge\n"
    )
    assert load_state(ws, NAME) == state and not acceptances_path(ws, NAME).exists()


def test_undo_takes_the_batch_out_of_the_reference_and_the_block_returns(blocked, tmp_path):
    ws, run_id = _copy(blocked, tmp_path)
    before = load_state(ws, NAME)
    assert _accept(ws, run_id, "--finding", "drift:fee", "--finding", "drift:surcharge")[0] == 0
    code, out, err = cli(
        "accept",
        run_id,
        "--undo",
        "--reason",
        "the campaign was a mistake",
        "--as",
        "operator",
        "--now",
        UNDO_AT,
        workspace=ws.root,
    )
    assert code == 0, err
    assert out.startswith(f"withdrawn by operator (run {run_id}, batch after-")
    assert out.endswith("the campaign was a mistake; the batch left the reference\n")
    assert load_state(ws, NAME) == before

    acceptances = load_acceptances(ws, NAME)
    assert len(acceptances) == 2 and not any(a.in_force for a in acceptances)  # kept on record, marked withdrawn
    assert {(a.withdrawn.by, a.withdrawn.reason) for a in acceptances if a.withdrawn} == {
        ("operator", "the campaign was a mistake")
    }
    with metadata_session(ws, read_only=True) as metadata:
        notes = read_memory_links(metadata, load_spec(ws, NAME).feature_table, prefix=ACCEPTED_URL)
        states = {r.urn: r.state for r in read_incidents(metadata)}
    assert {states[a.incident] for a in acceptances} == {"ACTIVE"}  # the blocks' incidents are open again
    assert [n.description.split(" (")[0] for n in notes] == [
        "accepted as the new normal by operator",
        "withdrawn by operator",
    ]

    code, record = _run(ws, RERUN_AT)  # the same rows, guarded again without them
    assert code == 1 and _blocks(record) == ["drift:fee", "drift:surcharge"]

    code, _, err = cli("accept", run_id, "--undo", "--reason", "again", workspace=ws.root)
    assert code == 2 and err == f"error: run {run_id} has no acceptance in force to take back; see `kintsugi runs`\n"


def test_a_run_blocked_nowhere_by_the_guard_keeps_todays_warning_refusal(blocked, tmp_path):
    ws, _ = _copy(blocked, tmp_path)
    (first,) = [p.name for p in sorted(ws.runs.iterdir()) if p.name.startswith("20130101T07")]
    code, out, err = cli("accept", first, "--reason", REASON, "--finding", "drift:fee", workspace=ws.root)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: run {first} raised no warning to accept")


def test_a_block_of_a_healed_run_is_refused_it_was_corrected_not_accepted(blocked, tmp_path):
    ws, run_id = _copy(blocked, tmp_path)
    assert _accept(ws, run_id, "--finding", "drift:fee", "--finding", "drift:surcharge")[0] == 0
    converted = _with_fees(weather("2013-02-01", "2013-03-01"), raised=True)
    converted["temp_min"] = converted["temp_min"] * 9 / 5 + 32  # another unit on every row: the heal converts back
    _land(ws, converted, "converted-month", NEXT_LAND_AT)
    code, record = _run(ws, NEXT_RUN_AT)
    assert code == 0 and _blocks(record) == ["unit_mismatch:temp_min"], record["outcome"]
    healed, state, kept = record["run_id"], load_state(ws, NAME), load_acceptances(ws, NAME)
    code, out, err = _accept(ws, healed, "--finding", "unit_mismatch:temp_min")
    assert (code, out) == (2, "")
    assert err == (
        f"error: run {healed} was healed: its blocks were corrected in the data, not a new normal; accept its "
        f"warnings, or take the heal back with `kintsugi undo {healed}`\n"
    )
    assert load_state(ws, NAME) == state and load_acceptances(ws, NAME) == kept
