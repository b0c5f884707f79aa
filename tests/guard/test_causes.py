"""guard/causes.py: a named cause explains the symptoms other checks see on its columns; and no cause is read into a
clean real batch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from chaos.corpus.falsealarms import load_batches
from chaos.corpus.realdata import DATASETS
from controlplane.stages.guarding import with_repeats_counted
from guard.causes import explain
from guard.context import GuardContext
from guard.findings import make_finding
from guard.kinds import FindingKind, Severity
from guard.runner import run_guard
from profiles.reference import Reference, build_reference

import orders_support
from orders_support import CONTRACT, URN, orders, snap, swapped
from real_cases import RealCase, blocking_on


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return orders_support.reference(tmp_path_factory)


CAUSES = {
    FindingKind.TIMESTAMP_SHIFT,
    FindingKind.COLUMNS_SWAPPED,
    FindingKind.SENTINEL,
    FindingKind.RELATION_BROKEN,
    FindingKind.TARGET_LEAKAGE,
}


def test_a_copy_of_the_label_is_target_leakage_and_explains_the_unexpected_column(
    tmp_path: Path, reference: Reference
) -> None:
    frame = orders(9).assign(eta_observed=lambda f: f["eta_minutes"])
    report = run_guard(
        with_repeats_counted(GuardContext(URN, CONTRACT, snap(tmp_path, frame, "copy"), reference, (), now_ms=0))
    )
    assert {(f.kind, f.column) for f in report.blocking} == {(FindingKind.TARGET_LEAKAGE, "eta_observed")}
    unexpected = [f for f in report.findings if f.kind is FindingKind.COLUMN_UNEXPECTED]
    assert [(f.severity, f.params["explained_by"]) for f in unexpected] == [
        (Severity.WARN, "target_leakage:eta_observed")
    ]


def test_a_column_converted_to_another_unit_explains_the_bound_it_breaks(tmp_path: Path, hourly_week: RealCase) -> None:
    """The dew point in degF passes the air temperature in degC on most hours: the unit is the cause, healed by
    converting back, and the broken bound is its symptom (a heal cannot be refused for want of a playbook)."""
    frame = hourly_week.frame.assign(temp_dew=hourly_week.frame["temp_dew"] * 1.8 + 32)
    assert blocking_on(tmp_path, hourly_week, frame) == {(FindingKind.UNIT_MISMATCH, "temp_dew")}
    dew = hourly_week.frame["temp_dew"].to_numpy()
    healed = frame.assign(temp_dew=np.nextafter(dew, np.inf))  # converted back: 5.000000000000001 where air is 5.0
    assert (healed["temp_dew"] > healed["temp_air"]).sum() >= 3
    assert blocking_on(tmp_path, hourly_week, healed) == set()


def test_a_cause_turns_the_symptoms_on_its_columns_into_warnings_and_leaves_the_rest() -> None:
    swap = make_finding(
        FindingKind.COLUMNS_SWAPPED, URN, "a", observed=1, expected=0, message="swap", columns=["a", "b"]
    )
    symptom = make_finding(
        FindingKind.UNIT_MISMATCH, URN, "b", observed=1, expected=0, message="unit", playbook="unit_rescale"
    )
    elsewhere = make_finding(FindingKind.UNIT_MISMATCH, URN, "c", observed=1, expected=0, message="unit")
    unrelated = make_finding(FindingKind.NULL_SPIKE, URN, "a", observed=1, expected=0, message="nulls")
    out = explain([symptom, swap, elsewhere, unrelated])
    assert [(f.kind, f.column, f.severity) for f in out] == [
        (FindingKind.UNIT_MISMATCH, "b", Severity.WARN),
        (FindingKind.COLUMNS_SWAPPED, "a", Severity.BLOCK),
        (FindingKind.UNIT_MISMATCH, "c", Severity.BLOCK),
        (FindingKind.NULL_SPIKE, "a", Severity.BLOCK),
    ]
    assert out[0].params["explained_by"] == "columns_swapped:a" and out[0].message.endswith(
        "(explained by columns_swapped:a)"
    )


def test_the_guard_names_the_swap_not_the_scale_the_units_check_sees(tmp_path: Path, reference: Reference) -> None:
    frame = swapped(orders(9), "distance_km", "prep_time_min")
    report = run_guard(
        with_repeats_counted(GuardContext(URN, CONTRACT, snap(tmp_path, frame, "swap"), reference, (), now_ms=0))
    )
    assert {(f.kind, f.column) for f in report.blocking} == {(FindingKind.COLUMNS_SWAPPED, "distance_km")}
    assert all(
        f.params.get("explained_by") == "columns_swapped:distance_km"
        for f in report.warnings
        if f.column in ("distance_km", "prep_time_min")
    )


def test_a_whole_number_column_and_a_decimal_one_swapped_are_named_with_the_type_change_a_symptom(
    tmp_path: Path, reference: Reference
) -> None:
    """A count and a duration of other units exchanged: the count holds decimals (its type changed) past its bounds,
    the duration small whole numbers; read as each other's, both are back in their ranges and natural variation."""
    frame = swapped(orders(9), "courier_load", "prep_time_min")
    report = run_guard(
        with_repeats_counted(GuardContext(URN, CONTRACT, snap(tmp_path, frame, "swap"), reference, (), now_ms=0))
    )
    assert {(f.kind, f.column) for f in report.blocking} == {(FindingKind.COLUMNS_SWAPPED, "prep_time_min")}
    (swap,) = report.blocking
    assert swap.params["columns"] == ["prep_time_min", "courier_load"]
    symptoms = {(f.kind, f.params.get("explained_by")) for f in report.warnings if f.column == "courier_load"}
    assert (FindingKind.TYPE_CHANGED, "columns_swapped:prep_time_min") in symptoms


@pytest.mark.parametrize("name", sorted(DATASETS))
@pytest.mark.parametrize("rolling", [True, False], ids=["rolling", "first-batches"])
def test_no_cause_is_read_into_a_clean_real_batch(tmp_path: Path, name: str, rolling: bool) -> None:
    """Every clean batch in order against the last K batches (rolling) and against the first K only (a
    reference that never rolled, as when other checks block every batch): seasons, dry months, calm weeks."""
    dataset = DATASETS[name]
    contract = dataset.contract()
    batches = load_batches(dataset, tmp_path)
    k = dataset.reference_batches
    seen = []
    for i in range(k, len(batches)):
        window = batches[i - k : i] if rolling else batches[:k]
        reference = build_reference([b.snapshot.batch for b in window])
        now_ms = int(batches[i].snapshot.batch.end_ms or 0)  # type: ignore[union-attr]
        report = run_guard(
            with_repeats_counted(
                GuardContext(contract.dataset_urn, contract, batches[i].snapshot, reference, (), now_ms=now_ms)
            )
        )
        seen += [f"{batches[i].batch_id} {f.kind.value}:{f.column}" for f in report.findings if f.kind in CAUSES]
    assert seen == []
