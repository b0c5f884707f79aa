"""No state the loop cannot leave: a run that sets rows aside, killed (SIGKILL, through the test-only crash point)
after its publish, then recovered and undone, leaves nothing that blocks for good. The next run heals the same
batch again and trains, and the next clean batch after it is CLEAN, names nothing in the batch that passed, and
trains, with no other command. `make test` kills at one point; `make test-faults` at each point past the publish."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest

from controlplane.runs.journal import list_runs
from controlplane.spec import load_spec
from controlplane.stages.kept_reference import set_aside_rules
from controlplane.vocab import Stage
from controlplane.workspace import Workspace
from demo.story import land_batch
from tests.controlplane.stages.test_rows_set_aside import _land_with_placeholders
from tests.support import LATER, PIPELINE, kintsugi_process

FULL = os.environ.get("KINTSUGI_FAULT_MATRIX") == "full"
POINTS = (
    ("publish:after-swap", "publish:published", "resolve:resolved", "train:trained", "conclude:after-alias")
    if FULL
    else ("publish:published",)
)
KILLED_AT, HEALED_AT = (LATER + timedelta(minutes=5)).isoformat(), (LATER + timedelta(minutes=20)).isoformat()
NEXT = LATER + timedelta(days=5)


def _run(ws: Workspace, at: str, *, crash: str | None = None) -> tuple[int, str]:
    done = kintsugi_process(ws, "run", PIPELINE, "--now", at, crash=crash)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("point", POINTS)
def test_a_quarantine_killed_recovered_and_undone_leaves_no_block_behind(demo_copy, point):
    ws, _ = demo_copy
    _land_with_placeholders(ws)
    code, said = _run(ws, KILLED_AT, crash=point)
    assert code == -9, said[-2000:]
    killed = list_runs(ws)[-1].run_id
    done = kintsugi_process(ws, "recover", killed)
    assert done.returncode == 0, done.stdout + done.stderr
    done = kintsugi_process(ws, "undo", killed, "--table", "keep")
    assert done.returncode in (0, 2) and done.stderr.count("\n") <= 1, done.stdout + done.stderr  # 2: nothing left

    code, said = _run(ws, HEALED_AT)  # the same batch: healed again, not read as a rewrite of what passed
    healed = list_runs(ws)[-1]
    assert code == 0, said[-2000:]
    heal = healed.last_event(Stage.HEAL)
    assert heal is not None and heal.status == "healed", healed.outcome
    assert healed.last_event(Stage.TRAIN) is not None, healed.outcome
    assert len(set_aside_rules(ws, PIPELINE)) == 1

    land_batch(ws, load_spec(ws, PIPELINE), seed=8, anchor=NEXT, metres=False)
    code, said = _run(ws, (NEXT + timedelta(minutes=5)).isoformat())
    record = list_runs(ws)[-1]
    detect = record.last_event(Stage.DETECT)
    assert code == 0 and detect is not None and detect.status == "CLEAN", detect.summary if detect else said[-2000:]
    trained = record.last_event(Stage.TRAIN)
    assert trained is not None and trained.status == "trained", record.outcome
