"""Recovery and undo touch the champion only where the run moved it: back to exactly the champion the run found
(journaled before its first move), in MLflow and DataHub both — never over a move made since, never back onto
the unsafe champion a killed watch rollback was moving away from. Read back from the real MLflow store and
DataHub Lite, each command in a process of its own (the kills are real SIGKILLs)."""

from __future__ import annotations

from datetime import timedelta

from controlplane.models.passport import champions_agree
from controlplane.runs.journal import list_runs, load_run
from tests.controlplane.watch.test_watch import WATCH_AT, raise_upstream_incident
from tests.support import LATER, PIPELINE, champion, iso, kintsugi_process, poison

RUN_AT = iso(LATER + timedelta(minutes=5))


def _agree(ws) -> bool:
    return champions_agree(ws, PIPELINE)[0]


def test_undo_leaves_a_champion_promoted_since_where_it_is(demo_copy):
    ws, _ = demo_copy
    poison(ws)
    assert champion(ws) == 2
    ran = kintsugi_process(ws, "run", PIPELINE, "--now", RUN_AT)
    assert ran.returncode == 0 and champion(ws) == 3, ran.stdout[-2000:] + ran.stderr[-2000:]
    run_id = list_runs(ws)[-1].run_id
    promoted = kintsugi_process(
        ws, "promote", PIPELINE, "1", "--reason", "back to the first"
    )  # a person's move after the run
    assert promoted.returncode == 0, promoted.stderr
    undone = kintsugi_process(ws, "undo", run_id)
    assert undone.returncode == 0, undone.stdout[-2000:] + undone.stderr[-2000:]
    assert load_run(ws, run_id).status == "undone"
    assert champion(ws) == 1 and _agree(ws)  # not v2 (the newest still eligible): the person's word stands


def test_an_undo_killed_between_its_two_champion_writes_ends_with_the_stores_agreeing(demo_copy):
    ws, _ = demo_copy
    poison(ws)
    ran = kintsugi_process(ws, "run", PIPELINE, "--now", RUN_AT)
    assert ran.returncode == 0 and champion(ws) == 3, ran.stdout[-2000:] + ran.stderr[-2000:]
    run_id = list_runs(ws)[-1].run_id
    killed = kintsugi_process(ws, "undo", run_id, crash="conclude:after-alias")  # MLflow moved, DataHub not yet
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert champion(ws) == 2 and not _agree(ws)
    recovered = kintsugi_process(ws, "recover", run_id)
    assert recovered.returncode == 0, recovered.stdout[-2000:] + recovered.stderr[-2000:]
    assert load_run(ws, run_id).status == "undone"
    assert champion(ws) == 2 and _agree(ws), champions_agree(ws, PIPELINE)[1]
    again = kintsugi_process(ws, "undo", run_id)
    assert again.returncode == 2 and "already undone" in again.stderr, again.stderr
    assert champion(ws) == 2 and _agree(ws)


def test_a_watch_rollback_killed_mid_way_is_not_put_back_on_the_unsafe_champion(demo_copy):
    ws, _ = demo_copy
    assert champion(ws) == 2
    raise_upstream_incident(ws)
    killed = kintsugi_process(ws, "watch", "--once", "--now", iso(WATCH_AT), crash="conclude:after-alias")
    assert killed.returncode == -9, killed.stderr[-2000:]
    rollback = next(r for r in list_runs(ws) if r.kind == "rollback")
    assert champion(ws) == 1 and not _agree(ws)  # MLflow moved off v2, DataHub still tags it
    recovered = kintsugi_process(ws, "recover", rollback.run_id)
    assert recovered.returncode == 0, recovered.stdout[-2000:] + recovered.stderr[-2000:]
    assert champion(ws) == 1 and _agree(ws), champions_agree(ws, PIPELINE)[1]
    watched = kintsugi_process(ws, "watch", "--once", "--now", iso(WATCH_AT + timedelta(minutes=5)))
    assert watched.returncode in (0, 1) and len(watched.stderr.splitlines()) <= 1, watched.stderr
    assert champion(ws) == 1 and _agree(ws)
