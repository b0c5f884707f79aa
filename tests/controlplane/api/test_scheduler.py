"""Scheduled retraining: the pure `due` decision, cron schedules in pipeline specs, and one real scheduler tick."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from controlplane.errors import SpecError
from controlplane.frontdoor.scheduler import Scheduler
from controlplane.frontdoor.services import pipelines
from controlplane.frontdoor.views import pipelines_out
from controlplane.runs.journal import list_runs
from controlplane.spec import load_spec
from controlplane.watch.cron import due, latest_fire, next_fire
from tests.support import PIPELINE

T = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
DAILY = "0 2 * * *"


def test_a_fire_time_after_the_last_run_makes_a_pipeline_due():
    yesterday_run = datetime(2026, 10, 31, 2, 0, 5, tzinfo=timezone.utc)
    assert due({"eta": DAILY}, {"eta": yesterday_run}, T) == ["eta"]  # today's 02:00 came after it


def test_no_fire_time_since_the_last_run_is_not_due():
    todays_run = datetime(2026, 11, 1, 2, 0, 5, tzinfo=timezone.utc)
    assert due({"eta": DAILY}, {"eta": todays_run}, T) == []
    assert due({"eta": DAILY}, {"eta": todays_run}, T + timedelta(hours=13, minutes=59)) == []
    assert due({"eta": DAILY}, {"eta": todays_run}, T + timedelta(hours=14)) == ["eta"]  # 02:00 the next day


def test_edge_cases_never_ran_exact_instant_missed_fires_and_order():
    assert due({"b": DAILY, "a": DAILY}, {}, T) == ["a", "b"]  # never ran: due at once, by name
    at_fire = datetime(2026, 11, 1, 2, 0, tzinfo=timezone.utc)
    assert due({"eta": DAILY}, {"eta": at_fire - timedelta(seconds=1)}, at_fire) == ["eta"]  # the fire instant counts
    assert due({"eta": DAILY}, {"eta": at_fire}, at_fire) == []  # a run at the fire instant covers it
    a_week_ago = T - timedelta(days=7)
    assert due({"eta": DAILY}, {"eta": a_week_ago}, T) == ["eta"]  # seven missed fires: one run
    assert latest_fire(DAILY, T) == at_fire and next_fire(DAILY, T) == at_fire + timedelta(days=1)


def _schedule(ws, schedule, policy="dry-run"):
    path = ws.pipelines / f"{PIPELINE}.yaml"
    raw = yaml.safe_load(path.read_text())
    raw.update(schedule=schedule, policy=policy)
    path.write_text(yaml.safe_dump(raw))


def test_a_spec_carries_a_valid_cron_schedule_or_is_refused(demo_copy):
    ws, _ = demo_copy
    assert load_spec(ws, PIPELINE).schedule is None
    _schedule(ws, "*/15 * * * *")
    assert load_spec(ws, PIPELINE).schedule == "*/15 * * * *"
    row = next(p for p in pipelines_out(pipelines(ws, now=T))["pipelines"] if p["name"] == PIPELINE)
    assert row["schedule"] == "*/15 * * * *"
    assert row["next_run_ms"] == int((T + timedelta(minutes=15)).timestamp() * 1000)
    _schedule(ws, "every night")
    with pytest.raises(SpecError, match="has schedule 'every night', not a cron expression"):
        load_spec(ws, PIPELINE)


def test_a_tick_starts_the_due_pipeline_once_under_its_policy(demo_copy):
    ws, _ = demo_copy
    _schedule(ws, "* * * * *")
    before = len(list_runs(ws))
    scheduler = Scheduler(ws)
    assert scheduler.tick(scheduler.started_at) == []  # nothing fires at start: counted from the scheduler's start
    later = scheduler.started_at + timedelta(minutes=2)
    assert scheduler.tick(later) == [PIPELINE]
    deadline = time.monotonic() + 60
    while any(r.status == "running" for r in list_runs(ws)) and time.monotonic() < deadline:
        time.sleep(0.1)
    runs = list_runs(ws)
    assert len(runs) == before + 1 and runs[-1].pipeline == PIPELINE and runs[-1].policy == "dry-run"
    assert runs[-1].status != "running"
    assert scheduler.tick(later) == []  # the same fire time does not start a second run
