"""The fault matrix: a run killed (SIGKILL, through the test-only crash point) at every stage boundary, inside
publish and inside undo — each followed by the invariants that make a PASS mean what it says:

  trained-on-passed  the champion was trained on bytes the guard passed (its signed passport says CLEAN)
  table-whole        the table is whole: the poisoned bytes or the verified heal, nothing in between
  consistent         one command (`recover`) brings the run to a finished state with no write left dangling
  stores-agree       DataHub tags exactly the version MLflow's alias points at
  one-incident       one incident per failure, never a duplicate

`test_the_invariant_table` prints the table (cases x invariants) for the closing note.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from datahub.metadata import schema_classes as s

from controlplane.models.passport import champions_agree, verify_passport
from controlplane.runs.identity import rebase_if_moved
from controlplane.runs.journal import list_runs, load_run
from controlplane.spec import load_spec
from controlplane.stages.pin import file_hash
from controlplane.takeback.recovery import recover_run
from controlplane.workspace import Workspace
from demo.seed import FEATURE_TABLE, PIPELINE
from tests.support import LATER, champion, clean_batch, incidents_on, kintsugi_process, poison, whole_cli

RUN_AT = (LATER + timedelta(minutes=5)).isoformat()
UNDO_AT = (LATER + timedelta(minutes=30)).isoformat()
ALL_RUN_POINTS = (
    "detect:BLOCKED",
    "incident:raised",
    "heal:healed",
    "verify:CLEAN",
    "publish:before-swap",
    "publish:after-swap",
    "publish:published",
    "resolve:resolved",
    "train:before-log",
    "train:trained",
    "conclude:after-datahub",
    "conclude:before-alias",
    "conclude:after-alias",
    "promote:APPROVED",
)
ALL_UNDO_POINTS = ("undo:before-restore", "undo:restored")
# `make test` kills at one point of each kind (a stage boundary, inside publish, inside training's writes, inside
# the conclusion, inside undo); `make test-faults` (run by CI too) kills at every one of them.
FULL = os.environ.get("KINTSUGI_FAULT_MATRIX") == "full"
RUN_POINTS = (
    ALL_RUN_POINTS
    if FULL
    else ("verify:CLEAN", "publish:after-swap", "publish:published", "train:trained", "conclude:after-alias")
)
UNDO_POINTS = ALL_UNDO_POINTS if FULL else ("undo:before-restore",)
# after its recovery, a case goes on: `undo`, `recover` again, then every command on the pipeline in a copy. A
# representative set (a run rolled back before publish, after publish, after training, mid-alias; one rolled
# forward), to keep `make test-faults` within minutes on two cores.
CHAIN_POINTS = (
    ("verify:CLEAN", "publish:published", "train:trained", "conclude:after-alias", "promote:APPROVED")
    if FULL
    else ("train:trained",)
)
# a recovery itself killed: (where the run was killed, where its recovery was), then recovered again
RECOVER_KILLS = (
    (("publish:published", "undo:before-restore"), ("conclude:after-alias", "conclude:after-alias"))
    if FULL
    else (("publish:published", "undo:before-restore"),)
)
INVARIANTS = ("trained-on-passed", "table-whole", "consistent", "stores-agree", "one-incident")
COMMANDS = "commands-start"  # a dry-run run, land of a clean batch, promote, watch --once: 0, 1 or 2, one line


@dataclass
class Killed:
    point: str
    ws: Workspace
    returncode: int
    stderr: str


def _kintsugi(ws: Workspace, *args: str, crash: str | None = None) -> subprocess.CompletedProcess:
    return kintsugi_process(ws, *args, crash=crash)


@pytest.fixture(scope="module")
def poisoned(demo_run, tmp_path_factory) -> Workspace:
    """The demo after its story, with a new batch landed in metres: the run ahead must heal it."""
    source, _ = demo_run
    ws = Workspace(tmp_path_factory.mktemp("faults") / "template")
    shutil.copytree(source.root, ws.root)
    rebase_if_moved(ws)
    poison(ws)
    return ws


@pytest.fixture(scope="module")
def healed_once(poisoned, tmp_path_factory) -> Workspace:
    """The poisoned workspace after one whole run: healed, published, promoted (what undo takes back)."""
    ws = _fork(poisoned, tmp_path_factory.mktemp("faults") / "healed")
    done = _kintsugi(ws, "run", PIPELINE, "--now", RUN_AT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return ws


def _fork(template: Workspace, target: Path) -> Workspace:
    shutil.copytree(template.root, target)
    ws = Workspace(target)
    rebase_if_moved(ws)
    return ws


@pytest.fixture(scope="module")
def killed(poisoned, healed_once, tmp_path_factory) -> dict[str, Killed]:
    """Every case, killed at its point: two at a time (each is a process of its own)."""
    root = tmp_path_factory.mktemp("killed")

    def kill_run(point: str) -> Killed:
        ws = _fork(poisoned, root / point.replace(":", "-"))
        done = _kintsugi(ws, "run", PIPELINE, "--now", RUN_AT, crash=point)
        return Killed(point, ws, done.returncode, done.stderr)

    def kill_undo(point: str) -> Killed:
        ws = _fork(healed_once, root / point.replace(":", "-"))
        run_id = list_runs(ws)[-1].run_id
        done = _kintsugi(ws, "undo", run_id, crash=point)
        return Killed(point, ws, done.returncode, done.stderr)

    def kill_recover(points: tuple[str, str]) -> Killed:
        ws = _fork(poisoned, root / "-".join(points).replace(":", "-"))
        done = _kintsugi(ws, "run", PIPELINE, "--now", RUN_AT, crash=points[0])
        assert done.returncode == -9, done.stderr[-2000:]
        done = _kintsugi(ws, "recover", list_runs(ws)[-1].run_id, crash=points[1])
        return Killed(_recover_label(points), ws, done.returncode, done.stderr)

    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(kill_run, RUN_POINTS)) + list(pool.map(kill_undo, UNDO_POINTS))
        runs += list(pool.map(kill_recover, RECOVER_KILLS))
    return {k.point: k for k in runs}


def _recover_label(points: tuple[str, str]) -> str:
    return f"{points[0]}, its recover killed at {points[1]}"


def _table_whole(ws: Workspace, allowed: set[str]) -> bool:
    path = load_spec(ws, PIPELINE).data
    pd.read_parquet(path)  # readable
    return file_hash(path) in allowed


def _invariants(ws: Workspace, allowed_tables: set[str]) -> dict[str, bool]:
    version = champion(ws)
    check = verify_passport(ws, PIPELINE, version)
    body = {}
    if check.ok:
        from controlplane.models.passport import show_passport

        body = show_passport(ws, PIPELINE, version)["body"]
    runs = list_runs(ws)
    unit_incidents = [i for i in incidents_on(ws, FEATURE_TABLE).values() if "unit_mismatch" in (i.title or "")]
    return {
        "trained-on-passed": check.ok and body["guard_at_training"]["verdict"] == "CLEAN",
        "table-whole": _table_whole(ws, allowed_tables),
        "consistent": all(r.status.finished for r in runs)
        and not any(e.state == "intended" for r in runs for e in r.ledger),
        "stores-agree": champions_agree(ws, PIPELINE)[0],
        # the demo's own (resolved) incident, and at most one more for this batch's failure, never active twice
        "one-incident": len(unit_incidents) <= 2
        and sum(i.status.state == s.IncidentStateClass.ACTIVE for i in unit_incidents) <= 1,
    }


def _allowed_tables(poisoned: Workspace, healed_once: Workspace) -> set[str]:
    return {file_hash(load_spec(poisoned, PIPELINE).data), file_hash(load_spec(healed_once, PIPELINE).data)}


def _recover(case: Killed) -> None:
    assert case.returncode == -9, f"{case.point}: the process was not killed ({case.returncode}): {case.stderr[-2000:]}"
    record = list_runs(case.ws)[-1]
    # as the killed process left it (a recovery stores `interrupted` while it works)
    assert record.status.value in ("running", "undoing", "interrupted"), record.status
    recovered = recover_run(case.ws, record.run_id)
    assert recovered.status.value in ("recovered", "promoted", "undone"), (case.point, recovered.outcome)


RESULTS: dict[str, dict[str, bool]] = {}


@pytest.mark.parametrize("point", RUN_POINTS + UNDO_POINTS)
def test_a_killed_process_leaves_a_state_recover_makes_consistent(point, killed, poisoned, healed_once):
    case = killed[point]
    _recover(case)
    held = _invariants(case.ws, _allowed_tables(poisoned, healed_once))
    RESULTS[point] = held
    assert all(held.values()), held


def _answers(ws: Workspace, *args: str) -> int:
    """`kintsugi ARGS` through the real composition root: its exit code, once it answered 0, 1 or 2 with at most
    one line on stderr (an exception escaping it fails the test with its traceback)."""
    code, out, err = whole_cli(*args, "-w", str(ws.root))
    assert code in (0, 1, 2) and len(err.splitlines()) <= 1, (args, code, out[-1000:], err[-1000:])
    assert "Traceback" not in out + err and "unexpected" not in err, (args, out[-1000:], err[-1000:])
    return code


def _every_command_starts(ws: Workspace, target: Path) -> bool:
    """In a copy: a dry-run run, land of a clean batch, promote of the champion, a watch pass each answer."""
    ws = _fork(ws, target)
    version = champion(ws)
    _answers(ws, "run", PIPELINE, "--now", UNDO_AT, "--policy", "dry-run")
    _answers(ws, "land", PIPELINE, str(clean_batch(ws, target.parent / f"{target.name}.parquet")), "--now", UNDO_AT)
    _answers(ws, "promote", PIPELINE, str(version or 1), "--reason", "by hand")
    _answers(ws, "watch", "--once", "--now", UNDO_AT)
    return True


@pytest.mark.parametrize("point", CHAIN_POINTS)
def test_after_recovery_undo_and_recover_again_hold_and_every_command_starts(
    point, killed, poisoned, healed_once, tmp_path
):
    case = killed[point]
    if point not in RESULTS:
        _recover(case)
    ws, allowed = _fork(case.ws, tmp_path / "chain"), _allowed_tables(poisoned, healed_once)
    run_id = next(r.run_id for r in reversed(list_runs(ws)) if r.kind.value == "run")
    for step, command in (("undo", "undo"), ("recover again", "recover")):
        code = _answers(ws, command, run_id)
        assert code in (0, 2), (point, step, code)  # undo of a run recovery rolled back: nothing to take back
        RESULTS[f"{point} -> {step}"] = held = _invariants(ws, allowed)
        assert all(held.values()), (point, step, held)
    RESULTS[f"{point} -> recover again"][COMMANDS] = _every_command_starts(ws, tmp_path / "commands")


@pytest.mark.parametrize("points", RECOVER_KILLS, ids=_recover_label)
def test_a_recovery_killed_mid_way_is_finished_by_the_next(points, killed, poisoned, healed_once, tmp_path):
    case = killed[_recover_label(points)]
    _recover(case)
    RESULTS[case.point] = held = _invariants(case.ws, _allowed_tables(poisoned, healed_once))
    assert all(held.values()), held
    held[COMMANDS] = _every_command_starts(case.ws, tmp_path / "commands")


def test_a_run_killed_past_publish_is_rolled_back_and_the_rerun_heals_again(killed, poisoned, healed_once):
    case = killed["publish:published"]
    if point_results := RESULTS.get(case.point):
        assert all(point_results.values())
    else:
        _recover(case)
    assert file_hash(load_spec(case.ws, PIPELINE).data) == file_hash(load_spec(poisoned, PIPELINE).data)
    rerun = _kintsugi(case.ws, "run", PIPELINE, "--now", (LATER + timedelta(minutes=40)).isoformat())
    assert rerun.returncode == 0, rerun.stdout[-2000:] + rerun.stderr[-2000:]
    record = list_runs(case.ws)[-1]
    incident = next(e for e in record.events if e.stage == "incident")
    assert [i["created"] for i in incident.evidence["incidents"]] == [False]  # the same incident, reopened
    assert "cleared at the source" not in " ".join(e.summary for e in record.events)
    assert record.status.value == "promoted" and all(
        _invariants(case.ws, _allowed_tables(poisoned, healed_once)).values()
    )


def test_the_invariant_table(killed):
    """Printed with -s: the cases x invariants table of the closing note (`-` where a step does not run the
    commands: they run after the last step of each chain, and after a killed recovery is finished)."""
    assert set(RUN_POINTS + UNDO_POINTS) <= set(RESULTS), "run the matrix tests first (same module)"
    columns = (*INVARIANTS, COMMANDS)
    lines = ["| killed at -> then | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    lines += [
        f"| {row} | " + " | ".join("-" if i not in held else "held" if held[i] else "BROKEN" for i in columns) + " |"
        for row, held in RESULTS.items()
    ]
    print("\n" + "\n".join(lines))
    assert all(all(row.values()) for row in RESULTS.values())


def test_an_interrupted_run_reads_as_interrupted_until_recovered(poisoned, tmp_path):
    from controlplane.frontdoor import services

    ws = _fork(poisoned, tmp_path / "ws")
    done = _kintsugi(ws, "run", PIPELINE, "--now", RUN_AT, crash="verify:CLEAN")
    assert done.returncode == -9
    run_id = list_runs(ws)[-1].run_id
    assert services.get_run(ws, run_id).status.value == "interrupted"  # its process is gone: said so
    undone = services.undo(ws, run_id)  # undo works on an interrupted run: it is rolled back first
    assert undone.status.value in ("recovered", "undone"), undone.outcome
    assert load_run(ws, run_id).status.finished


# the wedge of issue 30: a run killed after training, recovered (rolled back), then undone


@pytest.fixture(scope="module")
def recovered_after_training(poisoned, tmp_path_factory) -> tuple[Workspace, str]:
    """A run killed just after training (`train:trained`), then `kintsugi recover`ed: rolled back."""
    ws = _fork(poisoned, tmp_path_factory.mktemp("wedge") / "template")
    killed_run = _kintsugi(ws, "run", PIPELINE, "--now", RUN_AT, crash="train:trained")
    assert killed_run.returncode == -9, killed_run.stderr[-2000:]
    run_id = list_runs(ws)[-1].run_id
    done = _kintsugi(ws, "recover", run_id)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "interrupted after train; rolled back to a consistent state" in said, said
    return ws, run_id


def _starts_and_answers(ws: Workspace, *args: str) -> subprocess.CompletedProcess:
    """The command ran to its own answer: exit 0, 1 or 2, at most one line on stderr, never a traceback or a bug."""
    done = _kintsugi(ws, *args)
    said = done.stdout[-1000:] + done.stderr[-1000:]
    assert done.returncode in (0, 1, 2), (args, done.returncode, said)
    assert len(done.stderr.splitlines()) <= 1 and "Traceback" not in said and "unexpected" not in said, (args, said)
    return done


def test_undo_of_a_run_recover_rolled_back_says_there_is_nothing_to_undo(recovered_after_training, tmp_path):
    ws = _fork(recovered_after_training[0], tmp_path / "ws")
    run_id = recovered_after_training[1]
    undone = _starts_and_answers(ws, "undo", run_id)
    assert undone.returncode == 2 and "nothing left to take back" in undone.stderr, undone.stderr
    assert load_run(ws, run_id).status.value == "recovered"  # refused: nothing changed, its status included
    planned = _starts_and_answers(ws, "run", PIPELINE, "--now", UNDO_AT, "--policy", "dry-run")
    assert planned.returncode == 0, planned.stdout[-2000:]


def _leave_undoing(ws: Workspace, run_id: str, damage: tuple[str, str] | None = None) -> None:
    """The record as the undo of a recovered run left it before the fix: `undoing`, its undo's first write begun
    and never done (a half ledger); `damage` (kind, field): the run's first entry of that kind loses the field."""
    path = ws.run_dir(run_id) / "run.json"
    record = json.loads(path.read_text())
    version = next(e["result"]["version"] for e in record["ledger"] if e["kind"] == "mlflow-version")
    half = {"seq": len(record["ledger"]) + 1, "kind": "mlflow-tags", "target": f"{PIPELINE}/{version}"}
    record["ledger"].append({**half, "detail": {"tag": "kintsugi.undone"}, "state": "intended", "result": {}})
    if damage:
        kind, name = damage
        del next(e for e in record["ledger"] if e["kind"] == kind)["detail"][name]
    path.write_text(json.dumps({**record, "status": "undoing"}))


def test_a_run_left_undoing_stops_no_command_and_recover_finishes_it(recovered_after_training, tmp_path):
    ws = _fork(recovered_after_training[0], tmp_path / "ws")
    run_id = recovered_after_training[1]
    _leave_undoing(ws, run_id)
    planned = _starts_and_answers(ws, "run", PIPELINE, "--now", UNDO_AT, "--policy", "dry-run")
    assert planned.returncode == 0, planned.stdout[-2000:]
    assert load_run(ws, run_id).status.value == "undone"  # the dry run's recovery finished the undo
    version = champion(ws)
    for command in (
        ("land", PIPELINE, str(clean_batch(ws, tmp_path / "batch.parquet")), "--now", UNDO_AT),
        ("promote", PIPELINE, str(version), "--reason", "by hand"),
        ("watch", "--once", "--now", UNDO_AT),
        ("recover", run_id),
    ):
        done = _starts_and_answers(ws, *command)
        assert done.returncode == 0, (command, done.stdout[-2000:] + done.stderr[-2000:])
    assert load_run(ws, run_id).status.value == "undone" and champion(ws) == version
    assert all(_invariants(ws, {file_hash(load_spec(ws, PIPELINE).data)}).values())


def test_a_damaged_run_record_is_reported_and_stops_no_other_command(recovered_after_training, tmp_path):
    ws = _fork(recovered_after_training[0], tmp_path / "ws")
    run_id = recovered_after_training[1]
    _leave_undoing(ws, run_id, damage=("publish", "before_hash"))
    planned = _starts_and_answers(ws, "run", PIPELINE, "--now", UNDO_AT, "--policy", "dry-run")
    assert planned.returncode == 0, planned.stdout[-2000:]
    assert run_id in planned.stderr and "damaged" in planned.stderr, planned.stderr  # reported, on one line
    watched = _starts_and_answers(ws, "watch", "--once", "--now", UNDO_AT)
    assert watched.returncode == 0, watched.stdout[-2000:] + watched.stderr
    recovered = _starts_and_answers(ws, "recover", run_id)  # the run's own command says what is wrong and the fix
    assert recovered.returncode == 2 and run_id in recovered.stderr and "before_hash" in recovered.stderr
    assert load_run(ws, run_id).status.value == "undoing"  # nothing was changed
