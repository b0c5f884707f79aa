"""Cron schedules, pure: when a pipeline is due. Times are UTC."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Mapping

from croniter import croniter

__all__ = ["due", "next_fire", "latest_fire"]


def latest_fire(schedule: str, now: datetime) -> datetime:
    """The latest fire time at or before `now`."""
    return croniter(schedule, now + timedelta(microseconds=1)).get_prev(datetime)


def next_fire(schedule: str, now: datetime) -> datetime:
    """The first fire time after `now`."""
    return croniter(schedule, now).get_next(datetime)


def due(spec_schedules: Mapping[str, str], last_runs: Mapping[str, datetime | None], now: datetime) -> list[str]:
    """Pipelines with a fire time in (last run, now], by name; a pipeline that never ran is due at once.

    However many fire times were missed, a due pipeline runs once.
    """
    return sorted(
        name
        for name, schedule in spec_schedules.items()
        if (last := last_runs.get(name)) is None or latest_fire(schedule, now) > last
    )
