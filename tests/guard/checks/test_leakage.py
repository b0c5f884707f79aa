"""guard/checks/leakage.py: a feature computed from the label (a copy, a mapping, a recomputation on part of the rows)
is target_leakage; honest features, identifiers and an association the reference already saw are not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from guard.checks.leakage import check_leakage
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind
from profiles.profile import DatasetProfile
from profiles.reference import Reference, build_reference

import deliveries_support
import orders_support
from deliveries_support import context, eta_contract, eta_frame, findings, kinds_and_columns, snapshot_of
from orders_support import found, leaked, orders, snap
from real_cases import RealCase, blocking_on


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> DatasetProfile:
    return deliveries_support.reference(tmp_path_factory)


@pytest.fixture(scope="module")
def orders_reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """The order table's reference (`reference` here is the delivery table's)."""
    return orders_support.reference(tmp_path_factory)


def test_a_feature_recomputed_from_the_outcome_on_most_rows_jumps_past_the_reference(
    tmp_path: Path, orders_reference: Reference
) -> None:
    assert found(check_leakage, tmp_path, orders(9), orders_reference) == []
    result = found(check_leakage, tmp_path, leaked(orders(9), "prep_time_min", 0.9), orders_reference)
    assert [(f.kind, f.column, f.params["statistic"]) for f in result] == [
        (FindingKind.TARGET_LEAKAGE, "prep_time_min", "association_jump")
    ]
    assert result[0].observed >= 0.9 and result[0].params["reference_batch_high"] < 0.6


def test_a_feature_the_reference_already_saw_determine_the_label_is_not_leakage(tmp_path: Path) -> None:
    frames = [orders(seed).assign(eta_minutes=lambda f: (f["distance_km"] * 3).round(2)) for seed in range(3)]
    ref = build_reference([snap(tmp_path, f, f"d{i}").batch for i, f in enumerate(frames)])
    assert found(check_leakage, tmp_path, frames[0], ref) == []  # the absolute rule alone would say 0.99+


def test_an_hour_column_recomputed_from_the_outcome_on_part_of_the_rows_is_leakage(
    tmp_path: Path, stations_newest_week: RealCase
) -> None:
    """A December week of hourly temperatures: on 40% of the rows hour_local is dealt out in the order of the
    label. Its values are still hours and the week's association with the label stays inside the seasons';
    but there it is no longer the hour of the time, and it ranks the label where the true hour does not."""
    frame = stations_newest_week.frame
    assert blocking_on(tmp_path, stations_newest_week, frame) == set()
    assert blocking_on(tmp_path, stations_newest_week, leaked(frame, "hour_local", 0.4, by="seattle_temp")) == {
        (FindingKind.TARGET_LEAKAGE, "hour_local")
    }


def with_feature(name: str, logical_type: str = "number") -> Contract:
    return eta_contract(**{name: ColumnContract(name, logical_type)})


def test_leakage_passes_honest_features(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_leakage, context(snapshot_of(tmp_path, eta_frame(1)), reference)) == []


def test_leakage_reports_a_feature_computed_from_the_label(tmp_path: Path, reference: DatasetProfile) -> None:
    rng = np.random.default_rng(3)
    frame = eta_frame(1).assign(eta_estimate=lambda f: f.eta_minutes + rng.normal(0, 0.3, len(f)))
    found = findings(check_leakage, context(snapshot_of(tmp_path, frame), reference, with_feature("eta_estimate")))
    assert kinds_and_columns(found) == [(FindingKind.TARGET_LEAKAGE, "eta_estimate")]
    assert found[0].playbook is None and found[0].observed >= 0.98 and found[0].params["label"] == "eta_minutes"


def test_leakage_in_a_small_table_is_caught_by_correlation(tmp_path: Path, reference: DatasetProfile) -> None:
    rng = np.random.default_rng(3)  # 80 distinct values in 80 rows: too few repeats to learn a mapping
    frame = eta_frame(1, rows=80).assign(eta_estimate=lambda f: f.eta_minutes + rng.normal(0, 0.3, len(f)))
    found = findings(check_leakage, context(snapshot_of(tmp_path, frame), reference, with_feature("eta_estimate")))
    assert kinds_and_columns(found) == [(FindingKind.TARGET_LEAKAGE, "eta_estimate")]
    assert found[0].params["statistic"] == "correlation" and found[0].params["scores"]["mapping"] == 0.0


def test_leakage_reports_a_category_that_maps_onto_the_label(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = eta_frame(1).assign(eta_band=lambda f: "band-" + f.eta_minutes.round(0).astype(int).astype(str))
    contract = with_feature("eta_band", "string")
    found = findings(check_leakage, context(snapshot_of(tmp_path, frame), reference, contract))
    assert kinds_and_columns(found) == [(FindingKind.TARGET_LEAKAGE, "eta_band")]
    assert found[0].params["statistic"] == "mapping"


def test_leakage_reports_an_uncontracted_copy_of_the_label(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = eta_frame(1).assign(actual_eta=lambda f: f.eta_minutes)
    frame.loc[:39, "actual_eta"] = -1.0  # 0.5% disagree: still a copy
    found = findings(check_leakage, context(snapshot_of(tmp_path, frame), reference))
    assert kinds_and_columns(found) == [(FindingKind.TARGET_LEAKAGE, "actual_eta")]
    assert found[0].observed == 0.995 and found[0].params["statistic"] == "equal_share"


def test_a_copy_of_the_label_in_a_batch_of_a_dozen_rows_is_named(tmp_path: Path, reference: DatasetProfile) -> None:
    """Twelve rows of distinct labels equal by chance: at most (1/12)^12. Fewer rows than an association needs,
    but no chance at all of so many equal values."""
    frame = eta_frame(1, rows=12).assign(actual_eta=lambda f: f.eta_minutes)
    found = findings(check_leakage, context(snapshot_of(tmp_path, frame), reference))
    assert kinds_and_columns(found) == [(FindingKind.TARGET_LEAKAGE, "actual_eta")]
    assert found[0].params["chance"] < 1e-6


def test_a_column_equal_to_a_label_of_two_values_on_a_dozen_rows_may_be_chance(
    tmp_path: Path, reference: DatasetProfile
) -> None:
    """A label of two values: twelve equal rows happen by chance once in 4096 tries, so no copy is named."""
    frame = eta_frame(1, rows=12).assign(eta_minutes=lambda f: (f.index % 2).astype(float))
    frame = frame.assign(flag=lambda f: f.eta_minutes)
    assert findings(check_leakage, context(snapshot_of(tmp_path, frame), reference)) == []


def test_leakage_edges_ids_empty_all_null_and_no_label(tmp_path: Path, reference: DatasetProfile) -> None:
    ids = eta_frame(1).assign(ticket=lambda f: "t-" + f.index.astype(str))  # one value per row
    assert (
        findings(check_leakage, context(snapshot_of(tmp_path, ids, "ids"), reference, with_feature("ticket", "string")))
        == []
    )
    empty = snapshot_of(tmp_path, eta_frame(1).head(0), "empty")
    assert findings(check_leakage, context(empty, reference)) == []
    nulls = snapshot_of(tmp_path, eta_frame(1).assign(distance_km=np.nan), "nulls")
    assert findings(check_leakage, context(nulls, reference)) == []
    unlabelled = snapshot_of(tmp_path, eta_frame(1).assign(eta_minutes=np.nan), "unlabelled")
    assert findings(check_leakage, context(unlabelled, reference)) == []
    no_label = snapshot_of(
        tmp_path, eta_frame(1).drop(columns="eta_minutes").assign(copy=lambda f: f.distance_km), "no_label"
    )
    assert findings(check_leakage, context(no_label, reference)) == []
