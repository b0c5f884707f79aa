"""Everything a check may look at, gathered by the control plane before the guard runs."""

from __future__ import annotations

from dataclasses import dataclass

from guard.contract import Contract
from guard.policy import DEFAULT, Policy
from profiles.profile import DatasetProfile
from profiles.reference import Reference
from profiles.snapshot_types import Snapshot

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
    """What the guard judges: `snapshot` (a whole table, or one batch read with a window) against
    `reference`, under `contract`.

    `reference` is either a `Reference` (the batch guard: the merged profile of the last clean batches
    and their batch-to-batch variation) or, for compatibility, a bare `DatasetProfile` (a whole-table
    reference as DataHub's datasetProfile holds it today: one table of about the snapshot's size).
    `table_paths` are the files of the whole table the batch is appended to, for invariants that need
    history (duplicate keys across batches); empty when the snapshot is the whole table. `policy` holds the
    thresholds the checks judge by (`guard.policy`).
    """

    dataset_urn: str
    contract: Contract | None
    snapshot: Snapshot | None
    reference: Reference | DatasetProfile | None
    lineage: tuple[UpstreamNode, ...]
    now_ms: int
    snapshot_error: str | None = None
    contract_error: str | None = None
    table_paths: tuple[str, ...] = ()
    policy: Policy = DEFAULT

    @property
    def reference_profile(self) -> DatasetProfile | None:
        """The profile the checks compare with: a Reference's merged profile, or the bare profile."""
        if isinstance(self.reference, Reference):
            return self.reference.profile
        return self.reference

    @property
    def expected_rows(self) -> float | None:
        """Rows the snapshot is expected to hold: a Reference's median batch, or the bare profile's rows."""
        if isinstance(self.reference, Reference):
            return self.reference.expected_rows
        return float(self.reference.row_count) if self.reference is not None else None
