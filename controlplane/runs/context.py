"""What every stage of a run works with: the workspace, the spec, the metadata port, the run's journal and the
engine its table is profiled and healed with (a Spark session, when the spec says spark, started on first use and
stopped when the stretch of the run ends)."""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.port import MetadataPort
from controlplane.errors import InternalError, KintsugiError, tag_run, unexpected
from controlplane.runs.engine import TableEngine
from controlplane.runs.identity import check_datahub, rebase_if_moved
from controlplane.runs.journal import Event, RunJournal, RunRecord
from controlplane.spec import PipelineSpec
from controlplane.vocab import Policy, RunStatus, Stage
from controlplane.workspace import Workspace

__all__ = ["RunContext", "open_run", "crash_point", "CRASH_ENV"]

CRASH_ENV = "KINTSUGI_TEST_CRASH_AT"


@dataclass
class RunContext:
    ws: Workspace
    spec: PipelineSpec
    metadata: MetadataPort
    journal: RunJournal
    engine: TableEngine = field(default_factory=TableEngine)

    @property
    def record(self) -> RunRecord:
        return self.journal.record

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def policy(self) -> Policy:
        return self.record.policy

    @property
    def now_ms(self) -> int:
        return self.record.now_ms

    @property
    def writes(self) -> bool:
        return self.policy.writes

    def event(self, stage: Stage, status: str, summary: str, **evidence: Any) -> Event:
        recorded = self.journal.event(stage, status, summary, **evidence)
        crash_point(f"{stage.value}:{status}")  # every stage boundary is a point the fault-matrix tests kill at
        return recorded

    def finish(self, status: RunStatus, outcome: str) -> RunRecord:
        self.journal.finish(status, outcome)
        return self.record


@contextmanager
def open_run(
    ws: Workspace,
    spec: PipelineSpec,
    record: RunRecord,
    listener: Callable[[Event], None] | None = None,
    *,
    on_error: RunStatus | None = RunStatus.FAILED,
) -> Iterator[RunContext]:
    """Open the stores for one stretch of a run. An error is recorded in the run and re-raised, tagged with the
    run's id; the run ends `on_error` (FAILED), or keeps its status when None (an undo in progress stays UNDOING,
    to be finished). Ctrl-C or a signal leaves the record as a kill does: running on paper with its lock gone, it
    reads as interrupted and `kintsugi recover` (or the pipeline's next writer) makes it consistent."""
    journal = RunJournal(ws, record, listener)
    engine: TableEngine | None = None
    try:
        engine = TableEngine.of(spec)
        rebase_if_moved(ws)
        with metadata_session(ws, read_only=not record.policy.writes) as metadata:
            check_datahub(ws, metadata)
            yield RunContext(ws, spec, metadata, journal, engine)
    except Exception as exc:
        tag_run(exc, record.run_id)
        _record_failure(journal, exc, on_error)
        raise
    finally:
        if engine is not None:
            engine.close()


def _record_failure(journal: RunJournal, exc: Exception, on_error: RunStatus | None) -> None:
    """The error as the run's last event and, unless the run is to be finished later, its one-line outcome."""
    code = exc.code if isinstance(exc, KintsugiError) else InternalError.code
    what = str(exc) if isinstance(exc, KintsugiError) else unexpected(exc)
    try:
        journal.event(Stage.ERROR, "failed", what, code=code)
    finally:  # even when the event cannot be told (a listener that fails), the record ends
        if on_error is not None:
            journal.finish(on_error, what)


def crash_point(name: str) -> None:
    """Test-only: kill this process with SIGKILL at the named point when KINTSUGI_TEST_CRASH_AT names it.

    The fault-matrix suite uses it to prove that a run killed at any stage boundary leaves a state that
    `kintsugi recover` brings back to consistency. It does nothing unless the variable is set."""
    if os.environ.get(CRASH_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
