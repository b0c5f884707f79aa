"""The run record: a timeline of stage results, a write-ahead ledger of every external write, a checkpoint.

`run.json` is rewritten atomically after each change. A write is recorded as `intended` before it is made and
marked `done` after, so a process killed at any instant leaves a record from which `kintsugi recover` can tell
what happened and roll forward or back. Paths are workspace-relative.

The run statuses, as the code moves them (every writer holds the pipeline's lock; a second one is refused busy):

    running       a command's record from its first instant: `run` (the loop), a watch pass, `promote`,
                  `init`, `land`; and a paused run its approve or reject has claimed. It ends:
                    loop      planned (dry-run) | blocked (the guard, a heal that does not verify, the table
                              changed) | paused (a ratify gate) | promoted, needs-review, blocked, rejected (the
                              gate's verdict) | failed (an error)
                    watch     watched | rolled-back | blocked (a champion flagged) | paused (the rollback gate)
                    promote   promoted | failed;  init: onboarded | failed;  land: landed | failed
    paused        at a gate: `approve` or `reject` claim it (running again) and end it as above; reject ends
                  it rejected. `undo` refuses it (reject it instead).
    interrupted   what `running` or `undoing` reads as once no live process holds the pipeline's lock for it
                  (`runs`, the API); stored while a recovery works, so a recovery cut short reads the same.
    undoing       an undo under way; a kill or an error mid-way leaves it so, and recovery finishes it.
    promoted, needs-review, blocked, rejected, failed, rolled-back
                  finished; `undo` takes back a run that published or moved the champion: undoing, then
                  undone (one that did neither: refused, nothing to undo).
    planned, watched, onboarded, landed
                  finished, nothing to take back (`undo` refuses, one line).
    recovered     rolled back by recovery (an init or a land: settled, run it again); `undo` refuses it:
                  nothing is left to take back.
    undone        taken back; `undo` refuses it: already undone.

`accept` keeps the status it finds: it notes the warnings of any run but a running, undoing or interrupted one,
and accepts the blocks of a run blocked at the guard.

Recovery runs for every run left mid-way — running, undoing or interrupted, or failed with a write whose outcome
is unknown — at the start of every writer of its pipeline (`run`, dry-run included, `promote`, `watch`, `land`,
`init` again, `undo`) and by `kintsugi recover RUN_ID`: a loop run whose verdict was recorded is rolled forward
to it (promoted, needs-review, blocked, rejected); any other is rolled back (recovered); an undoing run is
finished (undone); an init or a land is settled (recovered; a land's append begun and not recorded done is
recorded done when the table is no longer the bytes it found, so landing the batch again changes nothing). `undo`
of a running or interrupted run is that recovery, its versions marked undone (undone).

The champion in a take-back (recovery rolling back, undo): only a run whose own alias entries (not those marked
`restore`, a take-back's) say it moved the champion has it moved back, and only while the champion is one the run
put there or the one it found: back to `previous` of its first alias entry (the newest eligible version when that
one can no longer be champion), MLflow's alias and DataHub's tag both written. A watch rollback recovered is never
moved back onto the champion it was leaving: DataHub is made to tag what MLflow's alias says.

A publish whose table changed since (a producer's write, no later run's): every writer refuses the take-back, one
line naming the ways out, and the run keeps its status; `undo RUN --table restore` restores the kept bytes over the
change (undone), `recover RUN --table keep` keeps the change and takes back the rest (recovered). A change a later
run published is refused whatever is asked: undo the later runs first.

A run whose record is damaged (a ledger entry lacks what its write recorded: `RunRecord.need`) is refused before
anything is changed and keeps its status: its own `recover` and `undo` exit 2 with one line naming the run and the
fix; every other writer reports it on one line and goes on.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Self

from controlplane.errors import DamagedRecord, RunNotFound, RunStateError
from controlplane.runs.facts import Impact, Pinned, Rollback, lift_facts
from controlplane.vocab import LedgerKind, Policy, RunKind, RunStatus, Stage
from controlplane.workspace import Workspace
from profiles.records import Record, from_record

__all__ = [
    "Event",
    "LedgerEntry",
    "RunRecord",
    "RunJournal",
    "new_run_id",
    "load_run",
    "list_runs",
    "scan_runs",
    "UnreadableRun",
    "valid_run_id",
    "INTENDED",
    "DONE",
    "ROLLED_BACK",
]

log = logging.getLogger(__name__)

INTENDED, DONE, ROLLED_BACK = "intended", "done", "rolled-back"
_MAX_RUN_ID = 64


def new_run_id(now_ms: int) -> str:
    stamp = datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{secrets.token_hex(3)}"


def valid_run_id(run_id: str) -> bool:
    """A run id names a folder under runs/: no separators, no dot files, bounded length."""
    return (
        0 < len(run_id) <= _MAX_RUN_ID
        and "/" not in run_id
        and "\\" not in run_id
        and not run_id.startswith(".")
        and run_id.isprintable()
    )


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
    seq: int
    kind: str
    target: str
    detail: dict[str, Any]
    state: str = INTENDED
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.state == DONE


@dataclass
class RunRecord(Record):
    run_id: str
    pipeline: str
    policy: Policy
    started_ms: int
    now_ms: int = 0  # the instant the run evaluates at (freshness, SLAs, training instant)
    status: RunStatus = RunStatus.RUNNING
    outcome: str = ""
    events: list[Event] = field(default_factory=list)
    ledger: list[LedgerEntry] = field(default_factory=list)
    checkpoint: dict[str, Any] | None = None  # a paused run's typed checkpoint (controlplane.stages.checkpoint)
    pid: int = 0
    kind: RunKind = RunKind.LOOP
    # what later commands need, each set by the stage or command that knows it
    pinned: Pinned | None = None  # detect: the run's immutable view of its table (impact re-reads it)
    incidents: tuple[str, ...] = ()  # incident: the urns raised, one per blocking finding
    memory: dict[str, dict[str, Any]] = field(default_factory=dict)  # incident: urn -> what memory recalled
    published_hash: str = ""  # publish: the table's content hash after the heal went in
    resolved: tuple[str, ...] = ()  # resolve: the incidents it resolved (or cleared at the source)
    impact: Impact | None = None  # the heal's measured impact, for the postmortem
    version: int | None = None  # promote: the version made champion by hand
    rollback: Rollback | None = None  # rollback: from which version to which, and why
    postmortems: tuple[str, ...] = ()  # watch: the incidents it wrote a postmortem of
    dataset: str = ""  # init: the dataset it registered
    batch: str = ""  # land: the batch it appended

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        if "facts" in data:  # written before the facts were typed
            data = {**{k: v for k, v in data.items() if k != "facts"}, **lift_facts(data["facts"] or {})}
        return from_record(cls, data)

    def entries(self, kind: LedgerKind, *, done_only: bool = True) -> list[LedgerEntry]:
        return [e for e in self.ledger if e.kind == kind.value and (e.done or not done_only)]

    def last_event(self, stage: Stage) -> Event | None:
        return next((e for e in reversed(self.events) if e.stage == stage.value), None)

    def need(self, entry: LedgerEntry, key: str, *, result: bool = False) -> Any:
        """A field the entry's write recorded (in its `detail`, or its `result`); a missing one is a damaged record."""
        fields = entry.result if result else entry.detail
        if key not in fields:
            raise self.damaged(entry, f"lacks {'result' if result else 'detail'} {key!r}")
        return fields[key]

    def damaged(self, entry: LedgerEntry, what: str) -> DamagedRecord:
        """The error for an entry that cannot be acted on: the run, the entry, what is wrong with it, the fix."""
        return DamagedRecord(
            f"the record of run {self.run_id} is damaged: ledger entry {entry.seq} ({entry.kind} {entry.target}) "
            + what,
            f"nothing was changed; put it right (`kintsugi runs show {self.run_id}` shows the ledger) and run "
            f"`kintsugi recover {self.run_id}`, or move runs/{self.run_id} out of runs/ to set the run aside",
        )


class RunJournal:
    """Appends events and ledger entries, saving the record atomically after each one."""

    def __init__(self, ws: Workspace, record: RunRecord, listener: Callable[[Event], None] | None = None) -> None:
        self.ws = ws
        self.record = record
        self.listener = listener

    @property
    def path(self) -> Path:
        return self.ws.run_dir(self.record.run_id) / "run.json"

    @property
    def run_dir(self) -> Path:
        return self.ws.run_dir(self.record.run_id)

    def event(self, stage: Stage, status: str, summary: str, **evidence: Any) -> Event:
        entry = Event(len(self.record.events) + 1, stage.value, status, summary, evidence, int(time.time() * 1000))
        self.record.events.append(entry)
        self.save()
        if self.listener:
            self.listener(entry)
        return entry

    def intend(self, kind: LedgerKind, target: str, **detail: Any) -> LedgerEntry:
        """Record a write before it is made."""
        entry = LedgerEntry(len(self.record.ledger) + 1, kind.value, target, detail)
        self.record.ledger.append(entry)
        self.save()
        return entry

    def done(self, entry: LedgerEntry, **result: Any) -> None:
        entry.state, entry.result = DONE, {**entry.result, **result}
        self.save()

    @contextmanager
    def writing(self, kind: LedgerKind, target: str, **detail: Any) -> Iterator[LedgerEntry]:
        """`with journal.writing(...) as entry:` the write; it is `done` only if the block completes."""
        entry = self.intend(kind, target, **detail)
        yield entry
        self.done(entry)

    def finish(self, status: RunStatus, outcome: str) -> None:
        self.record.status, self.record.outcome = status, outcome
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(self.record.to_dict(), indent=2, sort_keys=True, default=str))
        os.replace(temporary, self.path)


@dataclass(frozen=True)
class UnreadableRun:
    run_id: str
    why: str


def load_run(ws: Workspace, run_id: str) -> RunRecord:
    if not valid_run_id(run_id):
        raise RunNotFound(f"{run_id[:80]!r} is not a run id", "list runs with `kintsugi runs`")
    path = ws.run_dir(run_id) / "run.json"
    if not path.is_file():
        raise RunNotFound(f"no run {run_id!r} in {ws.root}", "list runs with `kintsugi runs`")
    try:
        return RunRecord.from_dict(json.loads(path.read_text()))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise RunStateError(
            f"run record {ws.rel(path)} is unreadable ({type(exc).__name__}: {exc})",
            "inspect that run folder; move it out of runs/ to set it aside",
        ) from exc


def scan_runs(ws: Workspace) -> tuple[list[RunRecord], list[UnreadableRun]]:
    """Every run, oldest first, and the run folders whose record cannot be read (never fatal to the listing)."""
    if not ws.runs.is_dir():
        return [], []
    records, unreadable = [], []
    for folder in sorted(ws.runs.iterdir()):
        if not (folder / "run.json").is_file():
            continue
        try:
            records.append(load_run(ws, folder.name))
        except (RunStateError, RunNotFound) as exc:
            unreadable.append(UnreadableRun(folder.name, exc.message))
            log.warning("skipping run %s: %s", folder.name, exc.message)
    return sorted(records, key=lambda r: (r.started_ms, r.run_id)), unreadable


def list_runs(ws: Workspace) -> list[RunRecord]:
    """Every readable run, oldest first."""
    return scan_runs(ws)[0]


def raise_if_not(record: RunRecord, *allowed: RunStatus, action: str, fix: str) -> None:
    if record.status not in allowed:
        raise RunStateError(
            f"run {record.run_id} is {record.status.value}; {action} needs it " + " or ".join(s.value for s in allowed),
            fix,
        )
