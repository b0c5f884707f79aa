"""Scheduled retraining: a pipeline whose spec carries a cron `schedule` runs when due, under its policy.

`controlplane.watch.cron.due` decides (pure: schedules, last runs and an instant in, names out); `Scheduler` is the
plumbing that `kintsugi serve` runs in one small thread. Times are UTC. A fire time missed while nothing was serving is
not replayed: the scheduler counts from its own start, so a restart never fires a burst of runs.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone
from typing import Callable

from controlplane.errors import KintsugiError
from controlplane.frontdoor import services
from controlplane.runs.journal import list_runs
from controlplane.spec import list_specs, load_spec
from controlplane.watch.cron import due
from controlplane.watch.retrain import is_loop_run
from controlplane.workspace import Workspace

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Scheduler:
    """Every `interval_s`, start the due pipelines' runs (in their own threads, through `operations`)."""

    def __init__(self, ws: Workspace, *, interval_s: float = 30.0, clock: Callable[[], datetime] = _utc_now) -> None:
        self.ws = ws
        self.interval_s = interval_s
        self.clock = clock
        self.started_at = clock()
        self.attempts: dict[str, datetime] = {}
        self.last_error: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def schedules(self) -> dict[str, str]:
        """Pipelines with a valid schedule; a spec that does not load is left out (and logged), never guessed."""
        found = {}
        for name in list_specs(self.ws):
            try:
                schedule = load_spec(self.ws, name).schedule
            except KintsugiError as exc:
                log.warning("scheduler: pipeline %s skipped: %s", name, exc)
                continue
            if schedule:
                found[name] = schedule
        return found

    def last_runs(self, names: list[str]) -> dict[str, datetime | None]:
        """For each pipeline, the latest of: its last run's start, the last attempt here, this scheduler's start."""
        started = {
            r.pipeline: datetime.fromtimestamp(r.started_ms / 1000, tz=timezone.utc)
            for r in list_runs(self.ws)
            if is_loop_run(r)
        }  # a watch pass, a promote, an init or a land is not a run of the schedule
        return {
            n: max(t for t in (started.get(n), self.attempts.get(n), self.started_at) if t is not None) for n in names
        }

    def tick(self, now: datetime | None = None) -> list[str]:
        """Start every due pipeline; returns the names started. A refused start is logged, not raised."""
        now = now or self.clock()
        schedules = self.schedules()
        started = []
        for name in due(schedules, self.last_runs(list(schedules)), now):
            self.attempts[name] = now
            try:
                run_id = services.start_run(self.ws, name)
            except KintsugiError as exc:
                self.last_error[name] = str(exc)
                log.warning("scheduler: %s was due but did not start: %s", name, exc)
                continue
            self.last_error.pop(name, None)
            log.info("scheduler: started run %s of %s (schedule %s)", run_id, name, schedules[name])
            started.append(name)
        return started

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="kintsugi-scheduler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.tick()
            except Exception:  # the scheduler outlives one bad tick (an unreadable run record, say)
                log.exception("scheduler: tick failed")
