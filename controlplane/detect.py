"""Gather what the guard needs from DataHub and the snapshot, run it, and record its history."""
from __future__ import annotations

from pathlib import Path

from controlplane.datahub.assertions import assertion_mcps
from controlplane.datahub.estate import read_contract, read_profile, walk_upstream
from controlplane.datahub.port import MetadataPort
from guard.context import GuardContext
from guard.findings import GuardReport
from guard.runner import run_guard
from guard.snapshot import Snapshot, SnapshotError, read_snapshot

__all__ = ["guard_context", "guard_snapshot", "record_guard_run"]


def guard_context(metadata: MetadataPort, dataset: str, snapshot: Snapshot | None, now_ms: int,
                  snapshot_error: str | None = None) -> GuardContext:
    contract, contract_error = read_contract(metadata, dataset)
    return GuardContext(
        dataset_urn=dataset, contract=contract, snapshot=snapshot, reference=read_profile(metadata, dataset),
        lineage=walk_upstream(metadata, dataset), now_ms=now_ms, snapshot_error=snapshot_error,
        contract_error=contract_error)


def guard_snapshot(metadata: MetadataPort, dataset: str, data: Path, now_ms: int) -> tuple[GuardContext, GuardReport]:
    """The guard over a parquet file; an unreadable file is a blocking finding, never a pass."""
    try:
        snapshot, error = read_snapshot(data), None
    except SnapshotError as exc:
        snapshot, error = None, str(exc)
    context = guard_context(metadata, dataset, snapshot, now_ms, error)
    return context, run_guard(context)


def record_guard_run(metadata: MetadataPort, report: GuardReport, run_id: str, now_ms: int) -> int:
    """Assertions (stable URNs) and one run event each; returns how many aspects were written."""
    mcps = assertion_mcps(report, run_id, now_ms)
    metadata.emit(mcps, now_ms)
    return len(mcps)
