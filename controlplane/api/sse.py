"""A run's events as server-sent events, tailed from its persisted run.json (any process's run can be streamed).

Each event carries `id: <seq>`, so a client that reconnects with `Last-Event-ID` gets exactly what it missed.
The stream ends with an `end` event when the run is finished, paused at a gate, or found interrupted
(its process died).
"""

from __future__ import annotations

import json
import time
from typing import Any, AsyncIterator

import anyio

from controlplane.errors import InputError
from controlplane.frontdoor import services, views
from controlplane.vocab import RunStatus
from controlplane.workspace import Workspace

__all__ = ["tail_events", "format_event", "parse_last_event_id"]

RETRY_MS = 2000


def parse_last_event_id(value: str | None) -> int:
    """The last `seq` the client saw; absent means from the start."""
    if value is None or value.strip() == "":
        return 0
    try:
        seq = int(value)
    except ValueError:
        raise InputError(
            f"Last-Event-ID {value!r} is not an event seq",
            "send the `id` of the last event received, or omit the header",
        ) from None
    if seq < 0:
        raise InputError(f"Last-Event-ID {seq} is negative", "send the `id` of the last event received")
    return seq


def format_event(data: dict[str, Any], *, event_id: int | None = None, event: str | None = None) -> str:
    lines = [f"id: {event_id}"] if event_id is not None else []
    lines += [f"event: {event}"] if event else []
    lines.append("data: " + json.dumps(data, sort_keys=True))
    return "\n".join(lines) + "\n\n"


async def tail_events(
    ws: Workspace, run_id: str, after: int, *, poll_s: float = 0.2, heartbeat_s: float = 15.0
) -> AsyncIterator[str]:
    """Events with seq > `after` as they are persisted; an `end` event once the run is no longer running."""
    yield f"retry: {RETRY_MS}\n\n"
    beat = time.monotonic()
    while True:
        record = await anyio.to_thread.run_sync(services.get_run, ws, run_id)
        batch = views.run_events_out(record, after)
        for event in batch["events"]:
            after = event["seq"]
            yield format_event(event, event_id=after)
        if record.status not in (RunStatus.RUNNING, RunStatus.UNDOING):
            yield format_event(
                {"run_id": run_id, "status": batch["status"], "outcome": batch["outcome"]}, event_id=after, event="end"
            )
            return
        if time.monotonic() - beat > heartbeat_s:
            beat = time.monotonic()
            yield ": keep-alive\n\n"
        await anyio.sleep(poll_s)
