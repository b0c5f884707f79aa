"""`approve` and `reject` are writers like `run`, `land`, `promote` and `undo`: before they act on a paused run,
a run of the pipeline that was killed mid-way is brought to a consistent state, so they never decide on (or build
on) a half-finished publish."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from controlplane.runs.journal import list_runs, load_run
from controlplane.takeback.recovery import needs_recovery
from demo.seed import PIPELINE
from tests.support import LATER, poison
from tests.support import kintsugi_process as _kintsugi  # the real CLI in its own process, killable

PAUSED_AT = (LATER + timedelta(minutes=5)).isoformat()
KILLED_AT = (LATER + timedelta(minutes=6)).isoformat()


@pytest.mark.parametrize("command", ["approve", "reject"])
def test_a_gate_command_first_makes_a_killed_run_consistent(demo_copy, command):
    ws, _ = demo_copy
    poison(ws)
    paused = _kintsugi(ws, "run", PIPELINE, "--policy", "ratify", "--now", PAUSED_AT, "--json")
    assert paused.returncode == 3, paused.stderr[-2000:]  # paused at the publish gate: a person must decide
    paused_id = json.loads(paused.stdout)["run_id"]
    assert load_run(ws, paused_id).status == "paused"
    killed = _kintsugi(ws, "run", PIPELINE, "--now", KILLED_AT, crash="publish:published")
    assert killed.returncode != 0  # killed right after its publish: the live table holds its heal, mid-run
    (killed_run,) = [r for r in list_runs(ws) if r.run_id != paused_id and r.pipeline == PIPELINE and needs_recovery(r)]

    answer = _kintsugi(ws, command, paused_id, "--reason", "checked")
    assert answer.returncode in (0, 1, 3), answer.stderr[-2000:]
    assert "Traceback" not in answer.stderr
    assert not needs_recovery(load_run(ws, killed_run.run_id))  # made consistent before the gate was acted on
    decided = load_run(ws, paused_id)
    assert "changed" not in decided.outcome, decided.outcome  # decided on the table as it stands, not mid-publish
    assert decided.status == ("rejected" if command == "reject" else decided.status)
    assert all(not needs_recovery(r) for r in list_runs(ws) if r.pipeline == PIPELINE)
