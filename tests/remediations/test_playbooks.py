"""Playbooks: each heals exactly its finding, refuses past its limit, and leaves its own output alone."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

import remediations.playbooks  # noqa: F401  (registers the playbooks)
from guard.contract import ColumnContract, Contract
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.units import conversion
from profiles.profile import DatasetProfile
from profiles.snapshot import read_snapshot
from remediations.aside import SetAside, set_aside_by
from remediations.registry import HealInput, HealStep, PlaybookRefused, playbook_for
from remediations.sandbox import PLAYBOOK_ORDER, content_hash, heal_copy, publish, restore

URN = "urn:li:dataset:(urn:li:dataPlatform:file,deliveries,PROD)"

CONTRACT = Contract(
    dataset_urn=URN,
    columns=(
        ColumnContract("order_id", "integer", primary_key=True),
        ColumnContract("distance_km", "number", unit="km"),
        ColumnContract("items", "integer"),
        ColumnContract("service", "string", allowed_values=("express", "standard")),
        ColumnContract("fragile", "boolean"),
        ColumnContract("ordered_at", "timestamp"),
        ColumnContract("late", "boolean"),
    ),
    label_column="late",
    label_timestamp_column="labelled_at",
    event_timestamp_column="ordered_at",
)


def finding(kind: FindingKind, column: str | None, playbook: str, **params: Any) -> Finding:
    return make_finding(
        kind, URN, column, observed="seen", expected="contracted", message="test", playbook=playbook, **params
    )


def heal(
    table: pd.DataFrame, found: Finding, reference: DatasetProfile | None = None, contract: Contract = CONTRACT
) -> tuple[pd.DataFrame, HealStep]:
    playbook = playbook_for(found)
    assert playbook is not None, f"no playbook heals {found.kind} as {found.playbook!r}"
    healed, step = playbook.apply(HealInput(table, found, contract, reference))
    json.dumps(step.params)  # heal notes are evidence written to DataHub: plain JSON, no numpy scalars
    return healed, step


def reapplied(healed: pd.DataFrame, found: Finding, reference: DatasetProfile | None = None) -> None:
    """Idempotence: the playbook applied to its own output changes nothing and says so."""
    again, step = heal(healed, found, reference)
    pdt.assert_frame_equal(again, healed)
    assert (step.rows_touched, step.rows_dropped) == (0, 0)


# ---------------------------------------------------------------- registry


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        (FindingKind.COLUMN_RENAMED, "rename_columns"),
        (FindingKind.TYPE_CHANGED, "cast_types"),
        (FindingKind.NULL_LIMIT, "quarantine_rows"),
        (FindingKind.NULL_SPIKE, "quarantine_rows"),
        (FindingKind.SENTINEL, "quarantine_rows"),
        (FindingKind.TIMESTAMP_SHIFT, "shift_timestamps"),
        (FindingKind.COLUMNS_SWAPPED, "swap_columns"),
        (FindingKind.LABEL_IMMATURE, "label_window"),
        (FindingKind.DUPLICATE_KEYS, "dedupe_keys"),
        (FindingKind.CATEGORY_CASING, "category_casing"),
        (FindingKind.UNIT_MISMATCH, "unit_rescale"),
    ],
)
def test_each_finding_kind_names_a_registered_playbook_in_sandbox_order(kind: FindingKind, name: str) -> None:
    playbook = playbook_for(finding(kind, "x", name))
    assert playbook is not None and playbook.name == name
    assert name in PLAYBOOK_ORDER


def test_a_playbook_is_not_used_for_a_kind_it_does_not_heal() -> None:
    assert playbook_for(finding(FindingKind.TYPE_CHANGED, "items", "quarantine_rows")) is None


def test_findings_that_still_name_null_impute_reach_the_quarantine_not_an_imputation() -> None:
    playbook = playbook_for(finding(FindingKind.NULL_SPIKE, "items", "null_impute"))
    assert playbook is not None and playbook.name == "quarantine_rows" and playbook.quarantines


# ---------------------------------------------------------------- rename_columns

RENAMED = finding(FindingKind.COLUMN_RENAMED, "distance_km", "rename_columns", mapping={"trip_km": "distance_km"})


def test_rename_puts_the_column_back_under_its_contracted_name() -> None:
    table = pd.DataFrame({"order_id": [1, 2, 3], "trip_km": [1.5, 2.0, 7.25]})
    healed, step = heal(table, RENAMED)
    assert list(healed.columns) == ["order_id", "distance_km"]
    assert healed["distance_km"].tolist() == [1.5, 2.0, 7.25]
    assert step.params["renamed"] == {"trip_km": "distance_km"}
    assert step.rows_touched == 3
    assert list(table.columns) == ["order_id", "trip_km"]  # the input is not mutated


def test_rename_refuses_when_the_target_name_already_exists() -> None:
    table = pd.DataFrame({"trip_km": [1.5], "distance_km": [9.0]})
    with pytest.raises(PlaybookRefused, match="target name already exists"):
        heal(table, RENAMED)


def test_rename_refuses_a_target_outside_the_contract() -> None:
    found = finding(FindingKind.COLUMN_RENAMED, "dist", "rename_columns", mapping={"trip_km": "dist"})
    with pytest.raises(PlaybookRefused, match="only rename to a contracted column"):
        heal(pd.DataFrame({"trip_km": [1.5]}), found)


def test_rename_is_idempotent() -> None:
    healed, _ = heal(pd.DataFrame({"order_id": [1, 2], "trip_km": [1.5, 2.0]}), RENAMED)
    reapplied(healed, RENAMED)


# ---------------------------------------------------------------- cast_types


def cast_finding(column: str, target: str) -> Finding:
    return finding(FindingKind.TYPE_CHANGED, column, "cast_types", target_type=target)


def test_cast_parses_integers_exactly_beyond_float_precision() -> None:
    table = pd.DataFrame({"items": ["1", " 22 ", None, "9007199254740993"]})
    healed, step = heal(table, cast_finding("items", "integer"))
    assert healed["items"].tolist() == [1, 22, pd.NA, 9007199254740993]
    assert str(healed["items"].dtype) == "Int64"
    assert (step.rows_touched, step.params["parsed"], step.params["unparsed"]) == (0, 3, 0)


def test_cast_to_integer_nulls_and_counts_what_does_not_parse() -> None:
    values = [str(i) for i in range(19)] + ["2.5"]
    healed, step = heal(pd.DataFrame({"items": values}), cast_finding("items", "integer"))
    assert healed["items"].tolist() == list(range(19)) + [pd.NA]
    assert (step.rows_touched, step.params["parsed"], step.params["unparsed"]) == (1, 19, 1)
    assert step.params["unparsed_examples"] == ["2.5"]


def test_cast_to_number_at_exactly_the_limit_is_allowed() -> None:
    values = [f"{i}.5" for i in range(19)] + ["n/a"]  # 1 of 20 = 5%, the limit itself
    healed, step = heal(pd.DataFrame({"distance_km": values}), cast_finding("distance_km", "number"))
    assert healed["distance_km"].iloc[:3].tolist() == [0.5, 1.5, 2.5]
    assert np.isnan(healed["distance_km"].iloc[19])
    assert healed["distance_km"].dtype == np.float64
    assert step.rows_touched == 1


def test_cast_refuses_over_its_limit_of_non_null_values() -> None:
    # 1 bad of 10 non-null values is 10%, though it is only 5% of the 20 rows
    values = [f"{i}.5" for i in range(9)] + ["n/a"] + [None] * 10
    with pytest.raises(PlaybookRefused, match=r"1 of 10 non-null values .*over its limit of 5%"):
        heal(pd.DataFrame({"distance_km": values}), cast_finding("distance_km", "number"))


def test_cast_reads_iso_strings_and_epoch_milliseconds_as_utc_timestamps() -> None:
    strings = pd.DataFrame({"ordered_at": ["2024-03-01T10:00:00Z", "2024-03-01 12:30:00+02:00", None]})
    healed, step = heal(strings, cast_finding("ordered_at", "timestamp"))
    assert healed["ordered_at"].tolist()[:2] == [
        pd.Timestamp("2024-03-01 10:00", tz="UTC"),
        pd.Timestamp("2024-03-01 10:30", tz="UTC"),
    ]
    assert healed["ordered_at"].isna().tolist() == [False, False, True]
    epochs = pd.DataFrame({"ordered_at": [1_709_287_200_000, 1_709_296_200_000]})
    healed, step = heal(epochs, cast_finding("ordered_at", "timestamp"))
    assert step.params["epoch_unit"] == "ms"
    assert healed["ordered_at"].tolist() == [
        pd.Timestamp("2024-03-01 10:00", tz="UTC"),
        pd.Timestamp("2024-03-01 12:30", tz="UTC"),
    ]


def test_cast_reads_boolean_spellings() -> None:
    table = pd.DataFrame({"fragile": ["yes", "No", " TRUE ", "0", None]})
    healed, step = heal(table, cast_finding("fragile", "boolean"))
    assert healed["fragile"].tolist() == [True, False, True, False, pd.NA]
    assert step.params["unparsed"] == 0


def test_cast_output_is_what_the_guard_expects_after_a_parquet_round_trip(tmp_path: Path) -> None:
    table = pd.DataFrame({"items": ["3", "4", None], "ordered_at": ["2024-03-01T10:00:00Z"] * 3})
    healed, _ = heal(table, cast_finding("items", "integer"))
    healed, _ = heal(healed, cast_finding("ordered_at", "timestamp"))
    healed.to_parquet(tmp_path / "healed.parquet", index=False)
    profile = read_snapshot(tmp_path / "healed.parquet").profile
    assert profile.columns["items"].logical_type == "integer"
    assert profile.columns["ordered_at"].logical_type == "timestamp"


def test_cast_leaves_a_compatible_column_alone() -> None:
    # integers satisfy a "number" contract: no detour through float
    table = pd.DataFrame({"distance_km": [1, 2, 3]})
    healed, step = heal(table, cast_finding("distance_km", "number"))
    pdt.assert_frame_equal(healed, table)
    assert (step.rows_touched, step.params["from_type"]) == (0, "integer")


def test_cast_is_idempotent() -> None:
    for column, values in (
        ("items", ["1", None, "3"]),
        ("ordered_at", ["2024-03-01T10:00:00Z", None]),
        ("fragile", ["yes", "no"]),
        ("distance_km", ["1.5", "x"] + ["2"] * 30),
    ):
        found = cast_finding(column, CONTRACT.column(column).logical_type)  # type: ignore[union-attr]
        healed, _ = heal(pd.DataFrame({column: values}), found)
        reapplied(healed, found)


# ---------------------------------------------------------------- quarantine_rows (was null_impute)


def null_finding(column: str, kind: FindingKind = FindingKind.NULL_LIMIT) -> Finding:
    return finding(kind, column, "null_impute", reference_null_fraction=0.0, null_rows=3)


def quarantine(table: pd.DataFrame, found: Finding) -> tuple[np.ndarray, HealStep]:
    playbook = playbook_for(found)
    assert playbook is not None and playbook.quarantines
    mask, step = playbook.apply(HealInput(table, found, CONTRACT, None))
    json.dumps(step.params)
    return mask, step


def test_quarantine_lists_exactly_the_null_rows_and_fills_nothing() -> None:
    table = pd.DataFrame({"distance_km": [1.0, None, 3.0, None, 5.0, 6.0, None, 8.0, 9.0, 10.0]})
    before = table.copy()
    mask, step = quarantine(table, null_finding("distance_km"))
    assert mask.tolist() == [False, True, False, True, False, False, True, False, False, False]
    assert (step.rows_touched, step.rows_quarantined) == (0, 3)
    pdt.assert_frame_equal(table, before)  # the table itself is never written


def test_quarantine_refuses_over_its_limit_of_rows() -> None:
    values = [1.0, None, None, None, None, None, 7.0, 8.0, 9.0, 10.0]  # 5 of 10 is allowed, 6 is not
    assert (
        quarantine(pd.DataFrame({"distance_km": values[:5] + [6.0] + values[6:]}), null_finding("distance_km"))[
            1
        ].rows_quarantined
        == 4
    )
    with pytest.raises(PlaybookRefused, match="6 of the 10 rows .*over its limit of 50% of rows"):
        quarantine(pd.DataFrame({"distance_km": values[:6] + [None] + values[7:]}), null_finding("distance_km"))


def test_quarantine_never_sets_aside_by_label_or_key() -> None:
    with pytest.raises(PlaybookRefused, match="leaves the label column"):
        quarantine(pd.DataFrame({"late": [True, None, False, True]}), null_finding("late"))
    with pytest.raises(PlaybookRefused, match="will not set rows aside by key column"):
        quarantine(pd.DataFrame({"order_id": [1, None, 3, 4]}), null_finding("order_id"))


# ---------------------------------------------------------------- label_window

WATERMARK = pd.Timestamp("2024-03-02", tz="UTC")
IMMATURE = finding(
    FindingKind.LABEL_IMMATURE,
    "late",
    "label_window",
    watermark_ms=WATERMARK.value // 1_000_000,
    event_column="ordered_at",
)


def labelled(labels: list[bool | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "order_id": range(len(labels)),
            "ordered_at": pd.date_range("2024-03-01 12:00", periods=len(labels), freq="6h", tz="UTC"),
            "late": pd.array(labels, dtype="boolean"),
        }
    )


def test_label_window_sets_aside_exactly_the_unlabelled_rows_and_deletes_none() -> None:
    table = labelled([True, None, None, False, True, False, None, True, False, True])
    mask, step = quarantine(table, IMMATURE)
    assert table.loc[mask, "order_id"].tolist() == [1, 2, 6]  # the table itself is not touched: a mask of its rows
    assert (step.rows_touched, step.rows_dropped, step.rows_quarantined) == (0, 0, 3)
    assert set_aside_by(step) == SetAside("late", None, None, "label_immature")  # what training leaves out
    # rows 1 and 2 are at 18:00 on the 1st and 00:00 on the 2nd (the watermark itself), row 6 at 00:00 on the 3rd
    assert (step.params["set_aside_after_watermark"], step.params["set_aside_at_or_before_watermark"]) == (1, 2)


def test_label_window_refuses_over_its_limit_of_rows() -> None:
    table = labelled([True, None, None, None, True, False, True, False, True, False])  # 3 of 10 is allowed
    assert quarantine(table, IMMATURE)[1].rows_quarantined == 3
    table = labelled([True, None, None, None, None, False, True, False, True, False])  # 4 of 10 is not
    with pytest.raises(PlaybookRefused, match="set aside 4 of 10 rows .*over its limit of 30% of rows"):
        quarantine(table, IMMATURE)


def test_label_window_through_the_sandbox_keeps_every_row_in_the_published_table(tmp_path) -> None:
    table = labelled([True, None, False, True, None, True, False, True, True, False])
    source = tmp_path / "table.parquet"
    table.to_parquet(source, index=False)
    outcome = heal_copy(source, tmp_path / "sandbox", (IMMATURE,), CONTRACT, None)
    assert outcome.complete and outcome.quarantine is not None and outcome.quarantine.rows == 2
    assert pd.read_parquet(outcome.healed_path)["order_id"].tolist() == list(range(10))  # no row deleted
    assert outcome.training_path is not None
    assert pd.read_parquet(outcome.training_path)["late"].notna().all()  # training sees labelled rows only
    assert [f.kind for f in outcome.open_findings] == [FindingKind.LABEL_IMMATURE]  # its incident stays open


# ---------------------------------------------------------------- dedupe_keys

DUPLICATES = finding(FindingKind.DUPLICATE_KEYS, "order_id", "dedupe_keys")


def orders(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "order_id": range(n),
            "distance_km": [float(i) / 4 for i in range(n)],
            "service": ["express" if i % 3 else "standard" for i in range(n)],
        }
    )


def test_dedupe_drops_a_repeated_load_keeping_the_first_row() -> None:
    table = orders(10)
    loaded_twice = pd.concat([table, table.iloc[[2, 5]]], ignore_index=True)
    healed, step = heal(loaded_twice, DUPLICATES)
    pdt.assert_frame_equal(healed, table)
    assert (step.rows_dropped, step.params["conflicting_rows"]) == (2, 0)


def test_dedupe_refuses_over_its_limit_of_rows() -> None:
    table = orders(10)
    loaded_twice = pd.concat([table, table.iloc[:3]], ignore_index=True)  # 3 of 13: 23%
    with pytest.raises(PlaybookRefused, match="drop 3 of 13 rows .*over its limit of 20% of rows"):
        heal(loaded_twice, DUPLICATES)


def test_dedupe_refuses_conflicting_duplicates() -> None:
    table = orders(10)
    other = table.iloc[[4]].assign(distance_km=99.0)
    with pytest.raises(PlaybookRefused, match=r"different values, e\.g\. \[\['4'\]\].*limit of 0\.1% conflicting"):
        heal(pd.concat([table, other], ignore_index=True), DUPLICATES)


def test_dedupe_tolerates_a_tiny_fraction_of_conflicts_and_counts_them() -> None:
    table = orders(2000)
    other = table.iloc[[4]].assign(distance_km=99.0)  # 1 of 2001 rows: under 0.1%
    healed, step = heal(pd.concat([table, other, table.iloc[[7]]], ignore_index=True), DUPLICATES)
    pdt.assert_frame_equal(healed, table)
    assert (step.rows_dropped, step.params["conflicting_rows"], step.params["conflicting_keys"]) == (2, 1, [["4"]])


def test_dedupe_is_idempotent() -> None:
    table = orders(10)
    healed, _ = heal(pd.concat([table, table.iloc[[1]]], ignore_index=True), DUPLICATES)
    reapplied(healed, DUPLICATES)


def test_dedupe_without_a_key_drops_only_whole_rows_repeated_and_only_for_such_a_finding() -> None:
    keyless = replace(CONTRACT, columns=tuple(replace(c, primary_key=False) for c in CONTRACT.columns))
    table = orders(10)
    twice = pd.concat([table, table.iloc[[2, 5]], table.iloc[[3]].assign(service="express")], ignore_index=True)
    whole_rows = finding(
        FindingKind.DUPLICATE_KEYS, "ordered_at", "dedupe_keys", key_columns=list(table.columns), whole_rows=True
    )
    healed, step = heal(twice, whole_rows, contract=keyless)
    pdt.assert_frame_equal(healed, pd.concat([table, twice.iloc[[12]]], ignore_index=True))
    assert (step.rows_dropped, step.params["conflicting_rows"]) == (2, 0)
    with pytest.raises(PlaybookRefused, match="needs key columns"):
        heal(twice, DUPLICATES, contract=keyless)


# ---------------------------------------------------------------- category_casing

CASING = finding(
    FindingKind.CATEGORY_CASING, "service", "category_casing", mapping={"EXPRESS": "express", "Standard ": "standard"}
)


def test_casing_maps_variants_to_their_canonical_value() -> None:
    table = pd.DataFrame({"service": ["express", "EXPRESS", None, "Standard ", "standard", "EXPRESS"]})
    healed, step = heal(table, CASING)
    assert healed["service"].tolist()[:2] == ["express", "express"]
    assert pd.isna(healed["service"].iloc[2])
    assert healed["service"].tolist()[3:] == ["standard", "standard", "express"]
    assert step.rows_touched == 3
    assert step.params["rows_per_value"] == {"EXPRESS": 2, "Standard ": 1}


def test_casing_refuses_a_mapping_that_changes_the_value() -> None:
    found = finding(FindingKind.CATEGORY_CASING, "service", "category_casing", mapping={"EXPRESS": "standard"})
    with pytest.raises(PlaybookRefused, match="only fixes case and whitespace"):
        heal(pd.DataFrame({"service": ["EXPRESS"]}), found)


def test_casing_refuses_a_canonical_value_the_contract_does_not_allow() -> None:
    found = finding(FindingKind.CATEGORY_CASING, "service", "category_casing", mapping={"express": "EXPRESS"})
    with pytest.raises(PlaybookRefused, match=r"\['EXPRESS'\] are not among the contract's allowed values"):
        heal(pd.DataFrame({"service": ["express"]}), found)


def test_casing_is_idempotent() -> None:
    healed, _ = heal(pd.DataFrame({"service": ["EXPRESS", "express", "Standard "]}), CASING)
    reapplied(healed, CASING)


# ---------------------------------------------------------------- the sandbox, end to end


def test_sandbox_heals_a_copy_in_playbook_order_and_publish_restore_round_trips(tmp_path: Path) -> None:
    source = tmp_path / "deliveries.parquet"
    pd.DataFrame({"order_id": [1, 2, 3], "trip_km": [1200.0, 3400.0, 560.0]}).to_parquet(source, index=False)
    original = source.read_bytes()
    scale, offset = conversion("km", "m")
    unit = make_finding(
        FindingKind.UNIT_MISMATCH,
        URN,
        "distance_km",
        observed={"unit": "m"},
        expected={"unit": "km"},
        message="in m",
        playbook="unit_rescale",
        declared_unit="km",
        actual_unit="m",
        scale=scale,
        offset=offset,
    )
    contract = Contract(
        URN,
        (ColumnContract("order_id", "integer", primary_key=True), ColumnContract("distance_km", "number", unit="km")),
    )

    outcome = heal_copy(source, tmp_path / "sandbox", (unit, RENAMED), contract, None)

    assert source.read_bytes() == original
    assert outcome.complete and not outcome.refused and not outcome.unhealable
    assert [s.playbook for s in outcome.steps] == ["rename_columns", "unit_rescale"]
    healed = pd.read_parquet(outcome.healed_path)
    assert list(healed.columns) == ["order_id", "distance_km"]
    assert healed["distance_km"].tolist() == pytest.approx([1.2, 3.4, 0.56])
    assert outcome.before_hash == content_hash(source)

    backup = tmp_path / "backup" / "deliveries.parquet"
    kept, published = publish(outcome.healed_path, source, backup)
    assert (kept, published) == (outcome.before_hash, outcome.after_hash)
    assert restore(backup, source) == outcome.before_hash
    assert source.read_bytes() == original


def test_sandbox_records_a_refusal_instead_of_healing(tmp_path: Path) -> None:
    source = tmp_path / "deliveries.parquet"
    pd.DataFrame({"items": ["1", "x", "y", "4"]}).to_parquet(source, index=False)
    outcome = heal_copy(source, tmp_path / "sandbox", (cast_finding("items", "integer"),), CONTRACT, None)
    assert not outcome.complete and not outcome.steps
    assert [f.playbook for f, _ in outcome.refused] == ["cast_types"]
    assert "over its limit of 5%" in outcome.refused[0][1]
    assert pd.read_parquet(outcome.healed_path)["items"].tolist() == ["1", "x", "y", "4"]
