"""Detect: pin the table, gather what the guard needs from DataHub, run the guard once, record its history."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.datahub.assertions import VolumeLimits, assertion_mcps
from controlplane.datahub.contracts import read_raw_contract
from controlplane.datahub.port import MetadataPort
from controlplane.documents.odcs import contract_of
from controlplane.errors import DataError
from controlplane.runs.context import RunContext
from controlplane.spec import PipelineSpec
from controlplane.stages.guarding import Guarded, guard_table
from controlplane.stages.pin import Pinned, pin_table, reading_pinned
from controlplane.vocab import LedgerKind, Stage
from controlplane.workspace import Workspace
from guard.checks.volume import volume_limits
from guard.context import GuardContext
from guard.contract import Contract
from guard.findings import GuardReport
from profiles.engines.keys import KeyHashes
from profiles.profile import BatchProfile, DatasetProfile
from profiles.records import Record
from remediations.aside import SetAside

__all__ = ["Detected", "TrainingView", "detect", "summary", "pin_reading_contract"]


@dataclass(frozen=True)
class TrainingView(Record):
    """The exact bytes training may read, and the guard report that passed them."""

    table: str  # workspace-relative parquet file: the pinned table, or the healed copy
    table_hash: str  # its bytes' sha256, checked before every read
    location_hash: str  # what the table's location holds when these bytes are the table ("" until published)
    report: GuardReport  # the guard on exactly these bytes (detect when clean, verify after a heal)
    profile: DatasetProfile | None = field(default=None, compare=False)  # their profile (not persisted)
    batch: BatchProfile | None = field(default=None, compare=False)  # their new batch, kept once it passes
    keys: KeyHashes | None = field(default=None, compare=False)  # its keys, hashed, for the key index (`Guarded.keys`)
    # rows this run set aside (rules), and the workspace-relative table they stay in (what is published)
    set_aside: tuple[SetAside, ...] = field(default=(), compare=False)
    published: str = field(default="", compare=False)
    location_version: str = ""  # the table format's own name of that version ("delta version 3"); "" for files

    _omit = ("profile", "batch", "keys", "set_aside", "published")  # not persisted


@dataclass(frozen=True)
class Detected:
    pinned: Pinned
    guarded: Guarded

    @property
    def context(self) -> GuardContext:
        return self.guarded.context

    @property
    def report(self) -> GuardReport:
        return self.guarded.report

    @property
    def view(self) -> TrainingView:
        profile = self.context.snapshot.profile if self.context.snapshot is not None else None
        return TrainingView(
            self.pinned.table,
            self.pinned.table_hash,
            self.pinned.content_hash,
            self.report,
            profile,
            self.guarded.batch,
            self.guarded.keys,
            location_version=self.pinned.snapshot,
        )


def detect(run: RunContext) -> Detected:
    spec = run.spec
    pinned, contract_read = pin_reading_contract(run.ws, run.metadata, spec, run.journal.run_dir / "snapshot")
    with reading_pinned(run.ws, pinned.table, pinned.table_hash, "the guard", by_path=run.engine.spark) as table:
        guarded = guard_table(
            run.ws,
            run.metadata,
            spec,
            table,
            run.now_ms,
            engine=run.engine,
            keep_caches=run.writes,
            contract_read=contract_read,
        )
    if guarded.context.snapshot is None:  # an unreadable table: an error before anything is written
        fix = f"replace the table at {pinned.location} with a readable one"
        if run.engine.spark:
            fix += f", or check the Spark master {spec.spark_master} (`kintsugi doctor`)"
        raise DataError(guarded.context.snapshot_error or "the table could not be read", fix)
    report, snapshot = guarded.report, guarded.context.snapshot
    run.record.pinned = pinned
    if run.writes:
        mcps = assertion_mcps(
            report, run.run_id, run.now_ms, contract=guarded.context.contract, volume=_volume_limits(guarded)
        )
        with run.journal.writing(LedgerKind.DATAHUB, spec.feature_table, what="assertions+run events", count=len(mcps)):
            run.metadata.emit(mcps, run.now_ms)
    run.event(
        Stage.DETECT,
        report.verdict.value,
        summary(report),
        verdict=report.verdict.value,
        findings=[f.to_dict() for f in report.findings],
        closest_calls=[c.to_dict() for c in report.closest_calls],
        rows=snapshot.profile.row_count,
        snapshot=pinned.table,
        content_hash=pinned.content_hash,
        **_batch_evidence(guarded),
    )
    return Detected(pinned, guarded)


def pin_reading_contract(
    ws: Workspace, metadata: MetadataPort, spec: PipelineSpec, into: Path
) -> tuple[Pinned, tuple[Contract | None, str | None]]:
    """The table pinned, and its contract as `read_contract` gives it, parsed (units looked up: a fixed cost of a
    fresh process) while the table's bytes are copied and hashed, off the guard's critical path."""
    raw = read_raw_contract(metadata, spec.feature_table)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="contract") as beside:
        parsed = beside.submit(contract_of, raw, spec.feature_table)
        pinned = pin_table(ws, spec, into)
        return pinned, parsed.result()


def _batch_evidence(guarded: Guarded) -> dict[str, object]:
    """The new batch the guard judged (its id and the rows after which it starts): what an accepted block keeps."""
    batch = guarded.batch
    if batch is None or batch.window is None:
        return {}
    return {"batch": batch.batch_id, "batch_after_ms": batch.window.after_ms}


def _volume_limits(guarded: Guarded) -> VolumeLimits | None:
    """The rows the volume check accepted of what it guarded, for its native assertion in DataHub."""
    limits = volume_limits(guarded.context)
    return VolumeLimits(*limits, of_batch=guarded.batch is not None) if limits is not None else None


def summary(report: GuardReport) -> str:
    if not report.findings:
        return f"guard CLEAN: {len(report.outcomes)} checks passed"
    return f"guard {report.verdict.value}: " + "; ".join(f.message for f in report.findings)
