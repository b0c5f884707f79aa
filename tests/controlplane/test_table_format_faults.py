"""The fault matrix on Delta Lake and Iceberg tables: a run killed around its heal's commit, an undo killed around
its time travel, and a writer's commit between the pin and the publish. After each, `recover` (or the refusal)
leaves:

  table-whole        the table holds the poisoned rows or the verified heal's, by content, nothing in between
  trained-on-passed  the champion was trained on rows the guard passed (its signed passport says CLEAN)
  consistent         every run finished, no write left intended
  stores-agree       DataHub tags exactly the version MLflow's alias points at
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from controlplane.models.passport import champions_agree, show_passport, verify_passport
from controlplane.runs.identity import rebase_if_moved
from controlplane.runs.journal import list_runs
from controlplane.spec import load_spec
from controlplane.takeback.recovery import recover_run
from controlplane.workspace import Workspace
from demo.feature_tables import append_rows, read_table
from demo.seed import PIPELINE
from demo.story import run_demo
from tests.support import DEMO_NOW, LATER, champion, clean_batch, kintsugi_process, poison

RUN_AT = (LATER + pd.Timedelta(minutes=5)).isoformat()
FULL = os.environ.get("KINTSUGI_FAULT_MATRIX") == "full"
RUN_POINTS = ("publish:before-swap", "publish:after-swap", "publish:published") if FULL else ("publish:after-swap",)
UNDO_POINTS = ("undo:before-restore", "undo:restored") if FULL else ("undo:before-restore",)


def _fork(template: Workspace, target: Path) -> Workspace:
    shutil.copytree(template.root, target)
    ws = Workspace(target)
    rebase_if_moved(ws)
    return ws


def _content(ws: Workspace) -> str:
    """The table's rows by content, whatever files and versions hold them."""
    rows = read_table(ws, load_spec(ws, PIPELINE)).sort_values("order_id", kind="stable").reset_index(drop=True)
    return hashlib.sha256(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes()).hexdigest()


@pytest.fixture(scope="module", params=["delta", "iceberg"])
def estate(request, tmp_path_factory) -> tuple[Workspace, Workspace]:
    """The demo told on a table format, then a new batch landed in metres (`poisoned`), and a copy of it after one
    whole run healed, published and promoted it (`healed`)."""
    root = tmp_path_factory.mktemp(f"faults-{request.param}")
    demo = Workspace(root / "demo").ensure()
    run_demo(demo, now=DEMO_NOW, table_format=request.param)
    poisoned = _fork(demo, root / "poisoned")
    poison(poisoned)
    healed = _fork(poisoned, root / "healed")
    done = kintsugi_process(healed, "run", PIPELINE, "--now", RUN_AT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return poisoned, healed


def _invariants(ws: Workspace, allowed: set[str]) -> dict[str, bool]:
    version = champion(ws)
    check = verify_passport(ws, PIPELINE, version)
    body = show_passport(ws, PIPELINE, version)["body"] if check.ok else {}
    runs = list_runs(ws)
    return {
        "table-whole": _content(ws) in allowed,
        "trained-on-passed": check.ok and body["guard_at_training"]["verdict"] == "CLEAN",
        "consistent": all(r.status.finished for r in runs)
        and not any(e.state == "intended" for r in runs for e in r.ledger),
        "stores-agree": champions_agree(ws, PIPELINE)[0],
    }


@pytest.mark.parametrize("point", RUN_POINTS)
def test_a_run_killed_around_the_heals_commit_is_recovered_whole(point, estate, tmp_path):
    poisoned, healed = estate
    ws = _fork(poisoned, tmp_path / "ws")
    done = kintsugi_process(ws, "run", PIPELINE, "--now", RUN_AT, crash=point)
    assert done.returncode == -9, done.stderr[-2000:]
    recovered = recover_run(ws, list_runs(ws)[-1].run_id)
    assert recovered.status.value in ("recovered", "promoted"), recovered.outcome
    held = _invariants(ws, {_content(poisoned), _content(healed)})
    assert all(held.values()), held


@pytest.mark.parametrize("point", UNDO_POINTS)
def test_an_undo_killed_around_its_time_travel_is_finished_by_recover(point, estate, tmp_path):
    poisoned, healed = estate
    ws = _fork(healed, tmp_path / "ws")
    run_id = list_runs(ws)[-1].run_id
    done = kintsugi_process(ws, "undo", run_id, crash=point)
    assert done.returncode == -9, done.stderr[-2000:]
    assert recover_run(ws, run_id).status.value == "undone"
    assert _content(ws) == _content(poisoned)  # back to exactly the rows the run found
    held = _invariants(ws, {_content(poisoned)})
    assert all(held.values()), held


def test_a_writers_commit_between_the_pin_and_the_publish_leaves_the_table_as_the_writer_made_it(estate, tmp_path):
    poisoned, _ = estate
    ws = _fork(poisoned, tmp_path / "ws")
    paused = kintsugi_process(ws, "run", PIPELINE, "--now", RUN_AT, "--policy", "ratify")
    assert paused.returncode == 3, paused.stdout[-2000:] + paused.stderr[-2000:]  # the heal waits at the gate
    spec = load_spec(ws, PIPELINE)
    batch = pd.read_parquet(clean_batch(ws, tmp_path / "clean.parquet"))
    append_rows(ws, spec, read_table(ws, spec), batch)  # a writer's commit while the run waits
    written = _content(ws)
    run_id = list_runs(ws)[-1].run_id
    approved = kintsugi_process(ws, "approve", run_id, "--reason", "the heal verifies")
    assert approved.returncode == 1 and len(approved.stderr.splitlines()) <= 1, approved.stdout + approved.stderr
    assert "changed since run" in approved.stdout + approved.stderr
    assert _content(ws) == written  # the writer's rows, untouched by the heal
    record = json.loads(kintsugi_process(ws, "runs", "show", run_id, "--json").stdout)
    assert record["status"] == "blocked", record["status"]
