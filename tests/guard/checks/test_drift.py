"""guard/checks/drift.py: a feature's distribution against the reference, warned or blocked as the contract says; unit
changes and casing left to the checks that name them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guard.checks.drift import check_drift, quantile_gap
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind, Severity
from guard.runner import run_guard
from profiles.batches import split_batches
from profiles.profile import ColumnProfile, DatasetProfile
from profiles.reference import build_reference

import deliveries_support
from deliveries_support import VEHICLES, context, eta_contract, eta_frame, findings, kinds_and_columns, snapshot_of


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> DatasetProfile:
    return deliveries_support.reference(tmp_path_factory)


def test_drift_passes_a_resample_of_the_reference(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_drift, context(snapshot_of(tmp_path, eta_frame(1)), reference)) == []


def test_drift_warns_on_a_shifted_feature(tmp_path: Path, reference: DatasetProfile) -> None:
    unitless = eta_contract(prep_time_min=ColumnContract("prep_time_min", "number"))  # else: the units check's
    shifted = eta_frame(1).assign(prep_time_min=lambda f: f.prep_time_min + 3.0)  # +0.75 sd
    found = findings(check_drift, context(snapshot_of(tmp_path, shifted), reference, unitless))
    assert kinds_and_columns(found) == [(FindingKind.DRIFT, "prep_time_min")]
    assert found[0].severity is Severity.WARN and found[0].playbook is None
    assert found[0].observed > 0.2 and found[0].expected == 0.1


def test_drift_blocks_when_the_contract_says_so(tmp_path: Path, reference: DatasetProfile) -> None:
    contract = eta_contract(prep_time_min=ColumnContract("prep_time_min", "number", drift_blocking=True))
    shifted = eta_frame(1).assign(prep_time_min=lambda f: f.prep_time_min + 3.0)
    found = findings(check_drift, context(snapshot_of(tmp_path, shifted), reference, contract))
    assert kinds_and_columns(found) == [(FindingKind.DRIFT, "prep_time_min")]
    assert found[0].severity is Severity.BLOCK


def test_drift_warns_on_a_changed_mix_of_categories(tmp_path: Path, reference: DatasetProfile) -> None:
    rng = np.random.default_rng(7)
    mix = eta_frame(1).assign(vehicle_type=rng.choice(VEHICLES, 8_000, p=[0.1, 0.3, 0.6]))
    found = findings(check_drift, context(snapshot_of(tmp_path, mix), reference))
    assert kinds_and_columns(found) == [(FindingKind.DRIFT, "vehicle_type")]
    assert found[0].params["statistic"] == "total_variation" and found[0].observed > 0.3


def test_the_drift_of_a_unit_change_is_explained_by_the_unit(tmp_path: Path, reference: DatasetProfile) -> None:
    metres = eta_frame(1).assign(distance_km=lambda f: f.distance_km * 1000)
    assert kinds_and_columns(findings(check_drift, context(snapshot_of(tmp_path, metres), reference))) == [
        (FindingKind.DRIFT, "distance_km")
    ]
    report = run_guard(context(snapshot_of(tmp_path, metres, "whole"), reference))
    blocking = [f for f in report.findings if f.severity is Severity.BLOCK]
    assert kinds_and_columns(blocking) == [(FindingKind.UNIT_MISMATCH, "distance_km")]
    assert {f.params.get("explained_by") for f in report.findings if f not in blocking} == {"unit_mismatch:distance_km"}
    undeclared = eta_contract(distance_km=ColumnContract("distance_km", "number"))
    found = findings(check_drift, context(snapshot_of(tmp_path, metres, "undeclared"), reference, undeclared))
    assert kinds_and_columns(found) == [(FindingKind.DRIFT, "distance_km")]  # nobody else would see it


def test_drift_ignores_casing_which_the_domain_check_reports(tmp_path: Path, reference: DatasetProfile) -> None:
    shouting = eta_frame(1).assign(vehicle_type=lambda f: f.vehicle_type.str.upper())
    assert findings(check_drift, context(snapshot_of(tmp_path, shouting), reference)) == []


def test_drift_gap_counts_a_point_mass_exactly() -> None:
    """80% zeros: the reference's quantiles up to 0.75 sit on the mass, which the CDF jumps across."""
    levels = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
    reference = ColumnProfile(
        "rain_mm",
        "number",
        100,
        0,
        quantiles=tuple(zip(levels, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 2.0, 3.0, 4.0), strict=True)),
    )
    same = np.array([0.0] * 80 + [1.0] * 5 + [2.0] * 5 + [3.0] * 5 + [4.0] * 5)
    assert quantile_gap(reference, same) == (0.0, 0.01)
    dry = np.array([0.0] * 60 + [1.0] * 25 + [2.0] * 5 + [3.0] * 5 + [4.0] * 5)
    assert quantile_gap(reference, dry) == pytest.approx((0.15, 0.75))


def test_drift_edges_small_sample_all_null_and_no_reference_column(tmp_path: Path, reference: DatasetProfile) -> None:
    tiny = eta_frame(1, rows=40).assign(prep_time_min=lambda f: f.prep_time_min + 1.0)  # noise at 40 rows
    assert findings(check_drift, context(snapshot_of(tmp_path, tiny, "tiny"), reference)) == []
    nulls = eta_frame(1).assign(prep_time_min=np.nan, vehicle_type=None)
    assert findings(check_drift, context(snapshot_of(tmp_path, nulls, "nulls"), reference)) == []
    empty = snapshot_of(tmp_path, eta_frame(1).head(0), "empty")
    assert findings(check_drift, context(empty, reference)) == []
    partial = DatasetProfile(reference.row_count, {k: v for k, v in reference.columns.items() if k != "rain_mm"})
    found = findings(check_drift, context(snapshot_of(tmp_path, eta_frame(1), "partial"), partial))
    assert kinds_and_columns(found) == [(FindingKind.REFERENCE_MISSING, "rain_mm")]
    assert found[0].severity is Severity.WARN  # as strong as the drift verdict it stands in for


def _flag_batches(tmp_path: Path, *, flag_on_newest: bool):
    """Eight weeks of daily rows, a level that moves and a 0/1 flag held at 0 in every kept week; in the newest
    week the flag turns on halfway through (or stays 0)."""
    rng = np.random.default_rng(3)
    days = pd.date_range("2001-01-01", periods=56 * 24, freq="h", tz="UTC").astype("datetime64[ms, UTC]")
    flag = np.zeros(len(days), dtype="int64")
    if flag_on_newest:
        flag[-84:] = 1
    frame = pd.DataFrame({"at": days, "level": rng.normal(50, 5, len(days)).round(2), "flag": flag})
    path = tmp_path / "flags.parquet"
    frame.to_parquet(path, index=False)
    snapshots = split_batches(path, time_column="at", cadence="week")
    contract = Contract(
        "urn:li:dataset:(urn:li:dataPlatform:file,flags,PROD)",
        (ColumnContract("at", "timestamp"), ColumnContract("level", "number"), ColumnContract("flag", "integer")),
        event_timestamp_column="at",
    )
    reference = build_reference([s.batch for s in snapshots[:-1]])  # type: ignore[misc]
    newest = snapshots[-1]
    return GuardContext(contract.dataset_urn, contract, newest, reference, (), now_ms=0)


def test_a_flag_held_in_every_kept_batch_that_turns_on_warns_rather_than_blocks(tmp_path: Path) -> None:
    """A band of no width has no 'far beyond' it: the move is new, a warning a person may accept as the new normal."""
    found = findings(check_drift, _flag_batches(tmp_path, flag_on_newest=True))
    assert [(f.kind, f.column, f.severity) for f in found] == [(FindingKind.DRIFT, "flag", Severity.WARN)]
    assert findings(check_drift, _flag_batches(tmp_path, flag_on_newest=False)) == []
