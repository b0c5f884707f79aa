"""The run record's typed fields: a record written with the old free `facts` dict reads into them, and a record
reads back as it was saved."""

from __future__ import annotations

import json

from controlplane.runs.facts import Impact, Rollback
from controlplane.runs.journal import RunJournal, RunRecord, load_run
from controlplane.stages.pin import Pinned
from controlplane.vocab import Policy, RunKind, RunStatus
from controlplane.workspace import Workspace

PINNED = {"table": "runs/r/snapshot/t.parquet", "table_hash": "sha256:a", "content_hash": "sha256:b", "location": "t"}


def _legacy(run_id: str, facts: dict) -> dict:
    return {
        "run_id": run_id,
        "pipeline": "p",
        "policy": "auto",
        "started_ms": 1,
        "now_ms": 2,
        "status": "promoted",
        "outcome": "",
        "events": [],
        "ledger": [],
        "checkpoint": None,
        "pid": 0,
        "facts": facts,
    }


def _write(ws: Workspace, data: dict) -> RunRecord:
    (ws.run_dir(data["run_id"]) / "run.json").parent.mkdir(parents=True)
    (ws.run_dir(data["run_id"]) / "run.json").write_text(json.dumps(data))
    return load_run(ws, data["run_id"])


def test_a_loop_run_written_with_free_facts_reads_into_the_typed_fields(tmp_path):
    ws = Workspace(tmp_path)
    memory = {"urn:li:incident:x": {"key": ["d", "unit_mismatch", "c"], "summary": "first seen"}}
    impact = {"metric": "mae", "poisoned": 2.5, "healed": 2.0, "holdout_rows": 10, "version": 2}
    facts = {"pinned": PINNED, "incidents": ["urn:li:incident:x"], "memory": memory, "published_hash": "sha256:c"}
    record = _write(ws, _legacy("loop", {**facts, "resolved": ["urn:li:incident:x"], "impact": impact}))
    assert record.kind is RunKind.LOOP and record.pinned == Pinned(**PINNED)
    assert record.incidents == record.resolved == ("urn:li:incident:x",) and record.memory == memory
    assert record.published_hash == "sha256:c" and record.impact == Impact("mae", 2.0, 2.5, 10, 2)


def test_every_other_command_written_with_free_facts_keeps_its_kind_and_subject(tmp_path):
    ws = Workspace(tmp_path)
    rollback = {"kind": "rollback", "from_version": 2, "to_version": 1, "causes": ["urn:li:incident:u"]}
    records = {
        "init": _write(ws, _legacy("init", {"command": "init", "dataset": "urn:d"})),
        "land": _write(ws, _legacy("land", {"command": "land", "batch": "/b.parquet"})),
        "promote": _write(ws, _legacy("promote", {"kind": "promote", "version": 3})),
        "watch": _write(ws, _legacy("watch", {"kind": "watch", "postmortems": ["urn:li:incident:u"]})),
        "rollback": _write(ws, _legacy("rollback", rollback)),
    }
    assert {name: r.kind.value for name, r in records.items()} == {name: name for name in records}
    assert records["init"].dataset == "urn:d" and records["land"].batch == "/b.parquet"
    assert records["promote"].version == 3 and records["watch"].postmortems == ("urn:li:incident:u",)
    assert records["rollback"].rollback == Rollback(2, 1, ("urn:li:incident:u",))
    assert records["init"].kind.command and records["land"].kind.command and not records["promote"].kind.command


def test_a_record_reads_back_as_it_was_saved(tmp_path):
    ws = Workspace(tmp_path)
    record = RunRecord("r", "p", Policy.AUTO, 1, 2, status=RunStatus.ROLLED_BACK, kind=RunKind.ROLLBACK)
    record.rollback, record.pinned = Rollback(2, None, ("u",)), Pinned(**PINNED)
    record.impact = Impact("mae", 2.0, error="the poisoned table could not be trained on")
    RunJournal(ws, record).save()
    assert load_run(ws, "r") == record
    saved = (ws.run_dir("r") / "run.json").read_text()
    RunJournal(ws, load_run(ws, "r")).save()
    assert (ws.run_dir("r") / "run.json").read_text() == saved and '"facts"' not in saved
