"""Detect: pin the table, gather what the guard needs from DataHub, run the guard once, record its history."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from controlplane.context import RunContext
from controlplane.datahub.assertions import assertion_mcps
from controlplane.datahub.contracts import read_contract
from controlplane.datahub.datasets import read_profile, walk_upstream
from controlplane.datahub.port import MetadataPort
from controlplane.errors import DataError
from controlplane.snapshot import Pinned, pin_table, verify_file
from controlplane.vocab import LedgerKind, Stage
from controlplane.workspace import Workspace
from guard.context import GuardContext
from guard.findings import GuardReport
from guard.profile import DatasetProfile
from guard.runner import run_guard
from guard.snapshot import Snapshot, SnapshotError, read_snapshot

__all__ = ["Detected", "TrainingView", "detect", "guard_context", "read_pinned", "summary"]


@dataclass(frozen=True)
class TrainingView:
    """The exact bytes training may read, and the guard report that passed them."""

    table: str  # workspace-relative parquet file: the pinned table, or the healed copy
    table_hash: str  # its bytes' sha256, checked before every read
    location_hash: str  # what the table's location holds when these bytes are the table ("" until published)
    report: GuardReport  # the guard on exactly these bytes (detect when clean, verify after a heal)
    profile: DatasetProfile | None = field(default=None, compare=False)  # their profile (not persisted)

    def to_dict(self) -> dict[str, Any]:
        return {"table": self.table, "table_hash": self.table_hash, "location_hash": self.location_hash,
                "report": self.report.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainingView:
        return cls(data["table"], data["table_hash"], data["location_hash"], GuardReport.from_dict(data["report"]))


@dataclass(frozen=True)
class Detected:
    pinned: Pinned
    context: GuardContext
    report: GuardReport

    @property
    def view(self) -> TrainingView:
        profile = self.context.snapshot.profile if self.context.snapshot is not None else None
        return TrainingView(self.pinned.table, self.pinned.table_hash, self.pinned.content_hash, self.report, profile)


def guard_context(metadata: MetadataPort, dataset: str, snapshot: Snapshot | None, now_ms: int,
                  snapshot_error: str | None = None) -> GuardContext:
    contract, contract_error = read_contract(metadata, dataset)
    return GuardContext(
        dataset_urn=dataset, contract=contract, snapshot=snapshot, reference=read_profile(metadata, dataset),
        lineage=walk_upstream(metadata, dataset), now_ms=now_ms, snapshot_error=snapshot_error,
        contract_error=contract_error)


def read_pinned(ws: Workspace, pinned: Pinned) -> Snapshot:
    """The guard's profile of the pinned bytes; an unreadable table is an error before anything is written."""
    try:
        return read_snapshot(pinned.path(ws))
    except SnapshotError as exc:
        raise DataError(str(exc), f"replace the table at {pinned.location} with a readable one") from exc


def detect(run: RunContext) -> Detected:
    spec = run.spec
    pinned = pin_table(run.ws, spec, run.journal.run_dir / "snapshot")
    snapshot = read_pinned(run.ws, pinned)
    verify_file(run.ws, pinned.table, pinned.table_hash, "the guard")  # the bytes profiled are the bytes pinned
    context = guard_context(run.metadata, spec.feature_table, snapshot, run.now_ms)
    report = run_guard(context)
    run.record.facts["pinned"] = pinned.to_dict()
    if run.writes:
        reference_rows = context.reference.row_count if context.reference is not None else None
        mcps = assertion_mcps(report, run.run_id, run.now_ms, contract=context.contract, reference_rows=reference_rows)
        with run.journal.writing(LedgerKind.DATAHUB, spec.feature_table, what="assertions+run events",
                                 count=len(mcps)):
            run.metadata.emit(mcps, run.now_ms)
    run.event(Stage.DETECT, report.verdict.value, summary(report), verdict=report.verdict.value,
              findings=[f.to_dict() for f in report.findings], rows=snapshot.profile.row_count,
              snapshot=pinned.table, content_hash=pinned.content_hash)
    return Detected(pinned, context, report)


def summary(report: GuardReport) -> str:
    if not report.findings:
        return f"guard CLEAN: {len(report.outcomes)} checks passed"
    return f"guard {report.verdict.value}: " + "; ".join(f.message for f in report.findings)
