"""Everything a check may look at, gathered by the control plane before the guard runs."""
from __future__ import annotations

from dataclasses import dataclass

from guard.contract import Contract
from guard.profile import DatasetProfile
from guard.snapshot import Snapshot

__all__ = ["GuardContext", "UpstreamNode"]


@dataclass(frozen=True)
class UpstreamNode:
    """One dataset upstream of the feature table, as DataHub describes it."""

    urn: str
    depth: int
    known: bool
    deprecated: bool = False
    active_incidents: tuple[str, ...] = ()
    last_updated_ms: int | None = None
    freshness_hours: float | None = None


@dataclass(frozen=True)
class GuardContext:
    dataset_urn: str
    contract: Contract | None
    snapshot: Snapshot | None
    reference: DatasetProfile | None
    lineage: tuple[UpstreamNode, ...]
    now_ms: int
    snapshot_error: str | None = None
    contract_error: str | None = None
