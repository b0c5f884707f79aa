"""A run killed after publish, whose table a producer has since rewritten, is refused by every writer with one
line naming the two ways out — and each of them ends it: `recover --table keep` (the producer's bytes stay, the
rest is taken back), `undo --table restore` (the run's kept bytes go back over them). A `land` killed after its
append, landed again as recovery says, does not put the batch in twice. Each command in a process of its own."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pandas as pd
import pytest

from controlplane.models.passport import champions_agree
from controlplane.runs.identity import rebase_if_moved
from controlplane.runs.journal import list_runs, load_run
from controlplane.spec import load_spec
from controlplane.stages.pin import file_hash
from controlplane.workspace import Workspace
from tests.support import LATER, PIPELINE, champion, clean_batch, iso, kintsugi_process, poison

RUN_AT = iso(LATER + timedelta(minutes=5))
LATER_AT = iso(LATER + timedelta(minutes=30))


def _fork(source: Workspace, target) -> Workspace:
    shutil.copytree(source.root, target)
    ws = Workspace(target)
    rebase_if_moved(ws)
    return ws


@pytest.fixture(scope="module")
def rewritten(demo_run, tmp_path_factory) -> tuple[Workspace, str, str]:
    """A run killed just after it published its heal, then the table rewritten in place by its producer:
    (workspace, run id, the hash of the bytes the run found)."""
    ws = _fork(demo_run[0], tmp_path_factory.mktemp("changed") / "template")
    poison(ws)
    path = load_spec(ws, PIPELINE).data
    original = file_hash(path)
    killed = kintsugi_process(ws, "run", PIPELINE, "--now", RUN_AT, crash="publish:published")
    assert killed.returncode == -9, killed.stderr[-2000:]
    table = pd.read_parquet(path)
    table.iloc[: len(table) - 1].to_parquet(path, index=False)  # the producer's own write, in place
    return ws, list_runs(ws)[-1].run_id, original


def _refused_naming_the_way_out(ws: Workspace, run_id: str) -> None:
    planned = kintsugi_process(ws, "run", PIPELINE, "--now", LATER_AT, "--policy", "dry-run")
    assert planned.returncode == 2 and len(planned.stderr.splitlines()) == 1, planned.stderr
    assert f"kintsugi undo {run_id} --table restore" in planned.stderr, planned.stderr
    assert f"kintsugi recover {run_id} --table keep" in planned.stderr, planned.stderr


def test_recover_keeping_the_producers_bytes_ends_the_run(rewritten, tmp_path):
    ws = _fork(rewritten[0], tmp_path / "ws")
    run_id = rewritten[1]
    producers = file_hash(load_spec(ws, PIPELINE).data)
    _refused_naming_the_way_out(ws, run_id)
    kept = kintsugi_process(ws, "recover", run_id, "--table", "keep")
    assert kept.returncode == 0 and "kept as changed since" in kept.stdout, kept.stdout + kept.stderr
    assert load_run(ws, run_id).status == "recovered"
    assert file_hash(load_spec(ws, PIPELINE).data) == producers
    assert champion(ws) == 2 and champions_agree(ws, PIPELINE)[0]
    planned = kintsugi_process(ws, "run", PIPELINE, "--now", LATER_AT, "--policy", "dry-run")
    assert planned.returncode in (0, 1) and "Traceback" not in planned.stderr, planned.stderr


def test_undo_restoring_the_kept_bytes_ends_the_run(rewritten, tmp_path):
    ws = _fork(rewritten[0], tmp_path / "ws")
    run_id, original = rewritten[1], rewritten[2]
    _refused_naming_the_way_out(ws, run_id)
    restored = kintsugi_process(ws, "undo", run_id, "--table", "restore")
    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert load_run(ws, run_id).status in ("undone", "recovered")
    assert file_hash(load_spec(ws, PIPELINE).data) == original
    assert champion(ws) == 2 and champions_agree(ws, PIPELINE)[0]


def test_a_land_killed_after_its_append_and_landed_again_puts_the_batch_in_once(demo_copy, tmp_path):
    ws, _ = demo_copy
    path = load_spec(ws, PIPELINE).data
    rows = len(pd.read_parquet(path))
    batch = clean_batch(ws, tmp_path / "batch.parquet")
    batch_rows = len(pd.read_parquet(batch))
    killed = kintsugi_process(ws, "land", PIPELINE, str(batch), "--now", LATER_AT, crash="land:appended")
    assert killed.returncode == -9, killed.stderr[-2000:]
    recovered = kintsugi_process(ws, "recover", list_runs(ws)[-1].run_id)
    assert recovered.returncode == 0 and "landing it again changes nothing" in recovered.stdout, recovered.stdout
    again = kintsugi_process(ws, "land", PIPELINE, str(batch), "--now", LATER_AT)
    assert again.returncode == 0 and "landed already" in again.stdout, again.stdout + again.stderr
    assert len(pd.read_parquet(path)) == rows + batch_rows
