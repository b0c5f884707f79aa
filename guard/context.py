"""Everything a check may look at, gathered by the control plane before the guard runs."""

from __future__ import annotations

from dataclasses import dataclass

from guard.contract import Contract
from guard.policy import DEFAULT, Policy
from guard.variation import Natural
from profiles.cores import core, sketched
from profiles.profile import DatasetProfile
from profiles.reference import Reference
from profiles.repeats_types import KeyCount, Repeats, RepeatsAsked
from profiles.sketches import QuantileSketch
from profiles.snapshot_types import Snapshot, SnapshotError

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
    history (duplicate keys across batches); empty when the snapshot is the whole table. `repeats` are the
    batch's repeated keys (or whole rows) as its builder counted them from those files, answering what the
    duplicates check asks (`guard.checks.duplicates.repeats_asked`, counted by `profiles.repeats.count_repeats`):
    the guard reads no file. `policy` holds the thresholds the checks judge by (`guard.policy`). `same_rows`:
    the snapshot is the reference's own rows read again (a batch that passed earlier, against its kept profile),
    not a new sample of the source, so no difference between them is sampling error. `rows_set_aside`: rows of the
    snapshot's batch that a heal set aside (the snapshot is its training view, which lacks them; they are in the
    table as they came), which the volume check counts as the batch's.
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
    repeats: Repeats | None = None
    same_rows: bool = False
    rows_set_aside: int = 0

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

    def require_sample(self) -> None:
        """Fail closed when the snapshot has rows but its row sample is empty: nothing sampled is not 'no drift'."""
        assert self.snapshot is not None
        if len(self.snapshot.sample) == 0 and self.snapshot.profile.row_count > 0:
            raise SnapshotError(
                f"snapshot {self.snapshot.path} has {self.snapshot.profile.row_count} rows but an empty "
                "row sample; distributions cannot be judged: read it again with a larger sample"
            )

    def require_repeats(self, asked: RepeatsAsked) -> KeyCount:
        """The count of what the duplicates check asks; fail closed when none was handed in, when it answers
        another question (another snapshot, key, window or history), or when it could not be counted."""
        what = f"repeats of {list(asked.columns)} in {', '.join(asked.files)}"
        fix = (
            "count them with profiles.repeats.count_repeats(guard.checks.duplicates.repeats_asked(context)) and "
            "hand them in as GuardContext.repeats (controlplane.stages.guarding.with_repeats_counted does both)"
        )
        if self.repeats is None:
            raise SnapshotError(f"the duplicates check needs the {what}, but none were counted: {fix}")
        if self.repeats.asked != asked:
            raise SnapshotError(
                f"the repeats handed in answer {self.repeats.asked}, not {asked}: they were counted for "
                f"another snapshot or question; {fix}"
            )
        if self.repeats.count is None:
            raise SnapshotError(self.repeats.error or f"the {what} handed in hold no count: {fix}")
        return self.repeats.count

    @property
    def spans_batches(self) -> bool:
        """The snapshot covers more than `policy.multi_batch_cadences` reference cadences: a whole table, not one
        more batch."""
        assert self.snapshot is not None and isinstance(self.reference, Reference)
        batch, cadence = self.snapshot.batch, self.reference.cadence_ms
        if batch is None or batch.start_ms is None or batch.end_ms is None or not cadence:
            return False
        return batch.end_ms - batch.start_ms > self.policy.multi_batch_cadences * cadence

    @property
    def cadences_spanned(self) -> float | None:
        """The reference cadences the snapshot spans (what `spans_batches` compares with
        `policy.multi_batch_cadences`); None where a batch reference, the snapshot's times or a cadence are missing."""
        if self.snapshot is None or not isinstance(self.reference, Reference):
            return None
        batch, cadence = self.snapshot.batch, self.reference.cadence_ms
        if batch is None or batch.start_ms is None or batch.end_ms is None or not cadence:
            return None
        return (batch.end_ms - batch.start_ms) / cadence

    def natural_distance(self, name: str, scale: float = 1.0, values_of: str | None = None) -> float | None:
        """How far the batch's column (or the batch's column `values_of`, read as if it were `name`'s), divided
        by `scale`, sits from `name`'s natural variation (<= 1: inside); None without a batch reference and
        sketches on both sides."""
        measured = self.natural_measure(name, scale, values_of)
        return None if measured is None else measured[0]

    def natural_measure(
        self, name: str, scale: float = 1.0, values_of: str | None = None
    ) -> tuple[float | None, float] | None:
        """`natural_distance` and the step from the newest reference batch against the steps the reference batches
        took (`Natural.measure`: inf where too few batches show steps); None as for `natural_distance`."""
        found = self._natural(name, values_of)
        if found is None:
            return None
        natural, observed, _ = found
        return natural.measure(core(observed, natural.atom, scale))

    def natural_rescale(self, name: str) -> tuple[float, float] | None:
        """The batch's column divided by the one factor that brings it nearest its natural variation: (factor,
        distance), `Natural.plain_rescale`; None as for `natural_distance`, or with no spread to read a factor from."""
        found = self._natural(name, None)
        if found is None:
            return None
        natural, observed, reference = found
        return natural.plain_rescale(observed, reference)

    def _natural(self, name: str, values_of: str | None) -> tuple[Natural, QuantileSketch, QuantileSketch] | None:
        """`name`'s natural variation, the batch's sketch of `values_of` (else of `name`) and the reference's sketch."""
        assert self.snapshot is not None
        reference = self.reference.columns.get(name) if isinstance(self.reference, Reference) else None
        observed = self.snapshot.profile.columns.get(values_of or name)
        if not isinstance(self.reference, Reference) or not sketched(reference) or not sketched(observed):
            return None
        assert reference is not None and reference.sketch is not None
        assert observed is not None and observed.sketch is not None
        contract = self.contract.column(name) if self.contract is not None else None
        unit = contract.unit if contract is not None else None
        natural = Natural.of(self.reference, reference, unit, self.reference.shorter_by(self.snapshot.batch))
        return natural, observed.sketch, reference.sketch
