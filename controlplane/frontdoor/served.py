"""What a pipeline's models served, measured with and without the gate, kept for the operator console.

A measurement is made where the traffic can be replayed (the demo serves its next day: `demo.serving`): the spec's
metric of the model a team without the gate would serve on the feed as sent, of the champion the loop left serving
on the batch it healed, and of that champion on the batch as a working feed sends it. Each pipeline's newest one is
kept as `<workspace>/served/<pipeline>.json`, replaced whole (written aside, then renamed): evidence for people, read
by `GET /served`, never an input to a decision.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from controlplane.errors import DataError
from controlplane.workspace import Workspace
from profiles.records import Record

__all__ = ["ServedErrors", "keep_served", "read_served"]


@dataclass(frozen=True)
class ServedErrors(Record):
    pipeline: str
    metric: str  # the spec's metric, lower is better for an error
    rows: int  # the rows served
    without_gate: float  # a retrain without the gate, serving the feed as sent
    with_gate: float  # the champion after the loop's run, serving the batch the loop healed
    clean: float  # that champion, serving the batch as a working feed sends it
    champion: int  # the version that served with the gate
    measured_at_ms: int
    note: str  # what the gap measures, in words


def keep_served(ws: Workspace, served: ServedErrors) -> None:
    ws.served.mkdir(parents=True, exist_ok=True)
    path = ws.served / f"{served.pipeline}.json"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(served.to_dict(), indent=2, sort_keys=True))
    os.replace(temporary, path)


def read_served(ws: Workspace) -> tuple[ServedErrors, ...]:
    """Each pipeline's newest measurement, by name; none kept is an empty tuple, one unreadable a DataError."""
    if not ws.served.is_dir():
        return ()
    kept = []
    for path in sorted(ws.served.glob("*.json")):
        try:
            kept.append(ServedErrors.from_dict(json.loads(path.read_text())))
        except (OSError, ValueError, TypeError) as exc:
            raise DataError(
                f"the served-error record {ws.rel(path)} cannot be read ({type(exc).__name__}: {exc})",
                f"delete {ws.rel(path)}: it is evidence, measured again by the next `kintsugi demo`",
            ) from exc
    return tuple(kept)
