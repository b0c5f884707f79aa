"""The run record: a timeline of stage results and a ledger of every external write, kept as JSON."""
from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from controlplane.errors import RunError
from controlplane.workspace import Workspace

__all__ = ["Event", "LedgerEntry", "RunRecord", "RunJournal", "new_run_id", "load_run", "list_runs"]


def new_run_id(now_ms: int) -> str:
    stamp = datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


@dataclass
class Event:
    seq: int
    stage: str
    status: str
    summary: str
    evidence: dict[str, Any]
    at_ms: int


@dataclass
class LedgerEntry:
    kind: str  # datahub-aspect | mlflow-version | mlflow-alias | mlflow-run | publish
    target: str
    detail: dict[str, Any]


@dataclass
class RunRecord:
    run_id: str
    pipeline: str
    policy: str
    started_ms: int
    status: str = "running"  # running | paused | promoted | clean | blocked | rejected | failed
    outcome: str = ""
    events: list[Event] = field(default_factory=list)
    ledger: list[LedgerEntry] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        return cls(**{**data, "events": [Event(**e) for e in data["events"]],
                      "ledger": [LedgerEntry(**e) for e in data["ledger"]]})


class RunJournal:
    """Appends events and ledger entries, saving the record atomically after each one."""

    def __init__(self, ws: Workspace, record: RunRecord, listener: Callable[[Event], None] | None = None) -> None:
        self.ws = ws
        self.record = record
        self.listener = listener

    @property
    def path(self) -> Path:
        return self.ws.run_dir(self.record.run_id) / "run.json"

    def event(self, stage: str, status: str, summary: str, **evidence: Any) -> Event:
        entry = Event(len(self.record.events) + 1, stage, status, summary, evidence, int(time.time() * 1000))
        self.record.events.append(entry)
        self.save()
        if self.listener:
            self.listener(entry)
        return entry

    def ledger(self, kind: str, target: str, **detail: Any) -> None:
        self.record.ledger.append(LedgerEntry(kind, target, detail))
        self.save()

    def finish(self, status: str, outcome: str) -> None:
        self.record.status, self.record.outcome = status, outcome
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(self.record.to_dict(), indent=2, sort_keys=True, default=str))
        os.replace(temporary, self.path)


def load_run(ws: Workspace, run_id: str) -> RunRecord:
    path = ws.run_dir(run_id) / "run.json"
    if not path.is_file():
        raise RunError(f"no run {run_id!r} in {ws.root}", "list runs with `kintsugi runs`")
    try:
        return RunRecord.from_dict(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError) as exc:
        raise RunError(f"run record {path} is unreadable ({exc})", "inspect or remove that run folder") from exc


def list_runs(ws: Workspace) -> list[RunRecord]:
    if not ws.runs.is_dir():
        return []
    records = [load_run(ws, p.name) for p in sorted(ws.runs.iterdir()) if (p / "run.json").is_file()]
    return sorted(records, key=lambda r: r.started_ms)
