"""A change far beyond a column's natural variation that no cause explains is a failure; nearer, a warning."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind, Severity
from guard.policy import DEFAULT as POLICY
from guard.runner import run_guard
from profiles.batches import split_batches
from profiles.reference import build_reference

URN = "urn:li:dataset:(urn:li:dataPlatform:file,noise,PROD)"


def _table(noise_sd: float, rows: int = 12_000, seed: int = 3) -> pd.DataFrame:
    """Three months of readings of a skewed signed quantity; the last month's are each thrown `noise_sd` up or
    down at random (a feed flipping between two offsets): the shape splits in two, so no rescaling explains it."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2024-01-01", tz="UTC")
    times = start + pd.to_timedelta(np.sort(rng.uniform(0, 91 * 86_400, rows)), "s")
    level = rng.gamma(2.0, 3.0, rows) - 2.0
    last = times >= pd.Timestamp("2024-03-01", tz="UTC")
    level[last] += rng.choice([-noise_sd, noise_sd], int(last.sum()))
    return pd.DataFrame({"ts": times.astype("datetime64[ms, UTC]"), "level": level.round(2)})


def _drift(tmp_path: Path, noise_sd: float):
    path = tmp_path / f"noise-{noise_sd}.parquet"
    _table(noise_sd).to_parquet(path, index=False, row_group_size=1_000)
    snapshots = split_batches(path, time_column="ts", cadence="month")
    contract = Contract(
        URN,
        (ColumnContract("ts", "timestamp"), ColumnContract("level", "number", unit="degC")),
        event_timestamp_column="ts",
    )
    reference = build_reference([s.batch for s in snapshots[:2]])  # type: ignore[misc]
    report = run_guard(GuardContext(URN, contract, snapshots[2], reference, (), now_ms=0))
    return [
        f for f in report.findings if f.column == "level" and f.kind in (FindingKind.DRIFT, FindingKind.SCALE_SHIFT)
    ]


def test_a_change_far_beyond_natural_variation_that_no_rescaling_explains_blocks(tmp_path: Path) -> None:
    (found,) = _drift(tmp_path, noise_sd=20.0)
    assert found.kind is FindingKind.DRIFT and found.severity is Severity.BLOCK
    assert found.observed["distance"] > POLICY.unexplained


def test_a_change_beyond_natural_variation_but_short_of_far_beyond_it_is_a_warning(tmp_path: Path) -> None:
    found = _drift(tmp_path, noise_sd=6.0)
    assert found and all(f.severity is Severity.WARN for f in found)
    assert all(1 < f.observed["distance"] <= POLICY.unexplained for f in found) and POLICY.unexplained > POLICY.far


def test_the_same_quantity_without_extra_noise_raises_nothing(tmp_path: Path) -> None:
    assert _drift(tmp_path, noise_sd=0.0) == []
