"""guard/context.py: the guard judges a batch against a Reference's median batch, or against a bare profile's rows."""

from __future__ import annotations

from pathlib import Path

from controlplane.stages.guarding import with_repeats_counted
from guard.checks.volume import check_volume
from guard.context import GuardContext
from guard.findings import Finding, Verdict
from guard.kinds import FindingKind
from guard.runner import run_guard
from profiles.batches import split_batches
from profiles.reference import build_reference
from profiles.snapshot import read_snapshot
from tests.profiles.batches_support import URN, contract, table, write


def test_the_guard_judges_a_batch_against_a_reference(tmp_path: Path) -> None:
    path = write(tmp_path, table(12_000), "table")
    snapshots = split_batches(path, time_column="ts", cadence="month")
    reference = build_reference([s.batch for s in snapshots[:2]])  # type: ignore[misc]
    report = run_guard(with_repeats_counted(GuardContext(URN, contract(), snapshots[2], reference, (), now_ms=0)))
    assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]
    # a batch is compared with the median batch, not with the reference's whole history
    half = read_snapshot(write(tmp_path, table(12_000).iloc[-1_500:], "thin"))
    found = [
        f for f in check_volume(GuardContext(URN, contract(), half, reference, (), now_ms=0)) if isinstance(f, Finding)
    ]
    expected = (snapshots[0].profile.row_count + snapshots[1].profile.row_count) / 2  # the median of two batches
    assert [f.kind for f in found] == [FindingKind.VOLUME_DROP] and found[0].params["reference_rows"] == expected
    passing = check_volume(GuardContext(URN, contract(), snapshots[2], reference, (), now_ms=0))
    assert [f for f in passing if isinstance(f, Finding)] == []
    bare = GuardContext(URN, contract(), snapshots[2], reference.profile, (), now_ms=0)  # the DataHub path
    assert bare.reference_profile is reference.profile and bare.expected_rows == reference.row_count
