"""Volume, duplicate keys, domain, drift and leakage: succeeds on clean data, fails with exactly the
right kind and column on bad data, and holds at the edges (empty table, all-null column, no reference).

Snapshots are real parquet files read with `read_snapshot`; references are the profiles of clean ones.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from guard.checks.domain import check_domain
from guard.checks.drift import check_drift, quantile_gap
from guard.checks.duplicates import check_duplicates, count_duplicate_keys, hash_rows
from guard.checks.leakage import check_leakage
from guard.checks.volume import check_volume
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding
from guard.kinds import FindingKind, Severity
from guard.runner import run_guard
from profiles.profile import ColumnProfile, DatasetProfile
from profiles.reference import build_reference
from profiles.snapshot import Snapshot, SnapshotError, read_snapshot

URN = "urn:li:dataset:(urn:li:dataPlatform:file,delivery.eta_features,PROD)"
VEHICLES = ("bike", "scooter", "car")


def eta_frame(seed: int, rows: int = 8_000, *, rain: str = "exponential") -> pd.DataFrame:
    """The delivery table: one distribution, any seed."""
    rng = np.random.default_rng(seed)
    distance = rng.lognormal(1.1, 0.55, rows)
    prep = np.clip(rng.normal(12.0, 4.0, rows), 2.0, 45.0)
    wet = rng.exponential(2.5, rows)
    return pd.DataFrame(
        {
            "order_id": [f"o-{seed}-{i:06d}" for i in range(rows)],
            "event_ts": pd.Timestamp("2025-01-01", tz="UTC") + pd.to_timedelta(rng.uniform(0, 7 * 86_400, rows), "s"),
            "distance_km": distance.round(3),
            "prep_time_min": prep.round(2),
            "courier_load": rng.poisson(1.5, rows),
            "vehicle_type": rng.choice(VEHICLES, rows, p=[0.35, 0.45, 0.20]),
            "rain_mm": (wet if rain == "exponential" else np.where(rng.random(rows) < 0.25, wet, 0.0)).round(2),
            "hour_of_day": rng.integers(0, 24, rows),
            "eta_minutes": (10 + 3 * distance + 0.5 * prep + rng.normal(0.0, 2.0, rows)).round(2),
        }
    )


def eta_contract(**changes: ColumnContract) -> Contract:
    columns = {
        "order_id": ColumnContract("order_id", "string", primary_key=True, max_null_fraction=0.0),
        "event_ts": ColumnContract("event_ts", "timestamp"),
        "distance_km": ColumnContract("distance_km", "number", unit="km", minimum=0, maximum=50),
        "prep_time_min": ColumnContract("prep_time_min", "number", unit="min", minimum=0, maximum=120),
        "courier_load": ColumnContract("courier_load", "integer", minimum=0, maximum=20),
        "vehicle_type": ColumnContract("vehicle_type", "string", allowed_values=VEHICLES),
        "rain_mm": ColumnContract("rain_mm", "number", unit="mm_rain", minimum=0, maximum=200),
        "hour_of_day": ColumnContract("hour_of_day", "integer", minimum=0, maximum=23),
        "eta_minutes": ColumnContract("eta_minutes", "number", unit="min", required=False),
    }
    columns.update(changes)
    return Contract(URN, tuple(columns.values()), label_column="eta_minutes", event_timestamp_column="event_ts")


def snapshot_of(tmp_path: Path, frame: pd.DataFrame, name: str = "snapshot", **write: object) -> Snapshot:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path, index=False, **write)
    return read_snapshot(path)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> DatasetProfile:
    return snapshot_of(tmp_path_factory.mktemp("reference"), eta_frame(0)).profile


def context(snapshot: Snapshot, reference: DatasetProfile | None, contract: Contract | None = None) -> GuardContext:
    return GuardContext(URN, contract or eta_contract(), snapshot, reference, (), now_ms=0)


def findings(check, ctx: GuardContext) -> list[Finding]:  # type: ignore[no-untyped-def]
    return list(check(ctx))


def kinds_and_columns(found: list[Finding]) -> list[tuple[FindingKind, str | None]]:
    return [(f.kind, f.column) for f in found]


# --- volume ---------------------------------------------------------------------------------------


def test_volume_passes_a_table_as_large_as_the_reference(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_volume, context(snapshot_of(tmp_path, eta_frame(1)), reference)) == []


def test_volume_reports_a_collapse_below_half_the_reference(tmp_path: Path, reference: DatasetProfile) -> None:
    found = findings(check_volume, context(snapshot_of(tmp_path, eta_frame(1, rows=3_000)), reference))
    assert kinds_and_columns(found) == [(FindingKind.VOLUME_DROP, None)]
    assert (found[0].observed, found[0].expected, found[0].playbook) == (3_000, 4_000, None)
    assert found[0].severity is Severity.BLOCK and found[0].params["reference_rows"] == 8_000


def test_volume_edges_empty_table_blocks_and_half_exactly_passes(tmp_path: Path, reference: DatasetProfile) -> None:
    empty = findings(check_volume, context(snapshot_of(tmp_path, eta_frame(1).head(0), "empty"), reference))
    assert kinds_and_columns(empty) == [(FindingKind.VOLUME_DROP, None)] and empty[0].observed == 0
    half = snapshot_of(tmp_path, eta_frame(1, rows=4_000), "half")
    assert findings(check_volume, context(half, reference)) == []
    assert findings(check_volume, context(half, DatasetProfile(row_count=0, columns={}))) == []


# --- duplicate keys -------------------------------------------------------------------------------


def with_repeats(frame: pd.DataFrame, repeated: int) -> pd.DataFrame:
    """A duplicated load: the first `repeated` rows appended again at the end."""
    return pd.concat([frame, frame.head(repeated)], ignore_index=True)


def test_duplicates_passes_unique_keys(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_duplicates, context(snapshot_of(tmp_path, eta_frame(1)), reference)) == []


def test_duplicates_counts_a_duplicated_load_exactly(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = with_repeats(eta_frame(1), 400)  # 5% of the rows loaded twice, in a later row group
    found = findings(check_duplicates, context(snapshot_of(tmp_path, frame, row_group_size=1_000), reference))
    assert kinds_and_columns(found) == [(FindingKind.DUPLICATE_KEYS, "order_id")]
    finding = found[0]
    assert finding.playbook == "dedupe_keys" and finding.severity is Severity.BLOCK
    assert finding.params["duplicate_rows"] == 400 and finding.params["rows_compared"] == 8_400
    assert finding.params["key_columns"] == ["order_id"] and finding.params["exact"] is True
    assert finding.observed == round(400 / 8_400, 6) and finding.expected == 0.001


def test_duplicates_limit_is_a_tenth_of_a_percent(tmp_path: Path, reference: DatasetProfile) -> None:
    below = snapshot_of(tmp_path, with_repeats(eta_frame(1), 8), "below")  # 0.0999%
    above = snapshot_of(tmp_path, with_repeats(eta_frame(1), 9), "above")  # 0.112%
    assert findings(check_duplicates, context(below, reference)) == []
    assert kinds_and_columns(findings(check_duplicates, context(above, reference))) == [
        (FindingKind.DUPLICATE_KEYS, "order_id")
    ]


def test_duplicates_compound_key_needs_every_part_to_repeat(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = pd.DataFrame({"day": np.repeat(np.arange(100), 50), "n": np.tile(np.arange(50), 100), "v": 1.0})
    contract = Contract(
        URN,
        (
            ColumnContract("day", "integer", primary_key=True),
            ColumnContract("n", "integer", primary_key=True),
            ColumnContract("v", "number"),
        ),
    )
    clean = snapshot_of(tmp_path, frame, "clean", row_group_size=700)
    assert findings(check_duplicates, context(clean, reference, contract)) == []
    doubled = snapshot_of(tmp_path, with_repeats(frame, 50), "doubled", row_group_size=700)
    found = findings(check_duplicates, context(doubled, reference, contract))
    assert kinds_and_columns(found) == [(FindingKind.DUPLICATE_KEYS, None)]
    assert found[0].params["key_columns"] == ["day", "n"] and found[0].params["duplicate_rows"] == 50


def test_no_key_whole_rows_repeated_are_judged_only_where_every_column_hashes(tmp_path: Path) -> None:
    """A keyless table of one row per hour: a batch loaded twice is named on its time; with a list column, whole
    rows cannot be hashed, so they are not judged (never a check error that blocks every clean batch)."""
    hours = pd.date_range("2024-01-01", periods=96, freq="h", tz="UTC")
    frame = pd.DataFrame({"time": hours, "x": np.arange(96.0), "tags": [["a", "b"]] * 96})
    contract = Contract(
        URN, (ColumnContract("time", "timestamp"), ColumnContract("x", "number")), event_timestamp_column="time"
    )
    for columns, named in ((["time", "x"], True), (["time", "x", "tags"], False)):
        frame[columns].iloc[:48].to_parquet(tmp_path / "kept.parquet", index=False)
        pd.concat([frame[columns].iloc[48:]] * 2).to_parquet(tmp_path / "twice.parquet", index=False)
        kept = read_snapshot(tmp_path / "kept.parquet", time_column="time", batch_id="kept").batch
        assert kept is not None
        twice = read_snapshot(tmp_path / "twice.parquet", time_column="time", batch_id="twice")
        found = findings(check_duplicates, GuardContext(URN, contract, twice, build_reference([kept]), (), now_ms=0))
        assert kinds_and_columns(found) == ([(FindingKind.DUPLICATE_KEYS, "time")] if named else []), columns


def test_duplicates_edges_empty_null_keys_and_a_changed_file(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_duplicates, context(snapshot_of(tmp_path, eta_frame(1).head(0), "empty"), reference)) == []
    nulls = eta_frame(1).assign(order_id=None)  # null keys are the nulls check's business, not repeats
    assert findings(check_duplicates, context(snapshot_of(tmp_path, nulls, "nulls"), reference)) == []
    snapshot = snapshot_of(tmp_path, eta_frame(1), "moving")
    eta_frame(2, rows=100).to_parquet(snapshot.path)  # replaced after it was profiled
    with pytest.raises(SnapshotError, match="changed after it was read"):
        findings(check_duplicates, context(snapshot, reference))
    report = run_guard(context(snapshot, reference))
    assert FindingKind.CHECK_ERROR in {f.kind for f in report.blocking}  # fail closed, never a pass


def test_duplicates_above_the_exact_limit_samples_by_key(tmp_path: Path) -> None:
    frame = with_repeats(eta_frame(1, rows=20_000), 1_000)
    path = tmp_path / "big.parquet"
    frame.to_parquet(path, row_group_size=4_000)
    exact = count_duplicate_keys(str(path), ["order_id"])
    sampled = count_duplicate_keys(str(path), ["order_id"], exact_rows=5_000)
    assert exact.exact and exact.duplicate_rows == 1_000
    assert not sampled.exact and 3_000 < sampled.rows_compared < 7_000
    assert abs(sampled.rate - exact.rate) < 4 * np.sqrt(exact.rate / sampled.rows_compared)


def test_hash_rows_equal_values_equal_hashes_whatever_the_encoding() -> None:
    words = ["", "a", "abcdefgh", "abcdefgh\0", "abcdefghi", "abcdefgh", "é" * 9, None]
    plain = hash_rows(pa.table({"k": pa.array(words)}))
    assert plain[2] == plain[5] and len(set(plain[:5])) == 5
    assert (hash_rows(pa.table({"k": pa.array(words).dictionary_encode()}))[:7] == plain[:7]).all()
    assert (hash_rows(pa.table({"k": pa.array(words, pa.large_string())})) == plain).all()
    assert (hash_rows(pa.table({"k": pa.array(words).slice(2)})) == plain[2:]).all()
    zeros = hash_rows(pa.table({"k": pa.array([0.0, -0.0, 1.0])}))
    assert zeros[0] == zeros[1] != zeros[2]
    pairs = hash_rows(pa.table({"a": [1, 1, 2], "b": ["x", "y", "x"]}))
    assert len(set(pairs)) == 3


# --- domain ---------------------------------------------------------------------------------------


def test_domain_passes_values_inside_the_contract(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_domain, context(snapshot_of(tmp_path, eta_frame(1)), reference)) == []


def test_domain_reports_a_value_beyond_the_maximum(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = eta_frame(1)
    frame.loc[:19, "distance_km"] = 80.0
    found = findings(check_domain, context(snapshot_of(tmp_path, frame), reference))
    assert kinds_and_columns(found) == [(FindingKind.OUT_OF_RANGE, "distance_km")]
    assert found[0].observed["maximum"] == 80.0 and found[0].expected == {"minimum": 0, "maximum": 50}
    assert found[0].playbook is None and found[0].params["sample_rows_outside"] == 20


def test_domain_maps_miscased_categories_and_blocks_new_ones(tmp_path: Path, reference: DatasetProfile) -> None:
    frame = eta_frame(1)
    frame.loc[:99, "vehicle_type"] = "Bike"
    frame.loc[100:109, "vehicle_type"] = " car "
    frame.loc[110:114, "vehicle_type"] = "drone"
    found = findings(check_domain, context(snapshot_of(tmp_path, frame), reference))
    assert kinds_and_columns(found) == [
        (FindingKind.CATEGORY_CASING, "vehicle_type"),
        (FindingKind.NEW_CATEGORY, "vehicle_type"),
    ]
    casing, new = found
    assert casing.playbook == "category_casing" and casing.params["mapping"] == {"Bike": "bike", " car ": "car"}
    assert casing.observed == {" car ": 10, "Bike": 100} and casing.params["rows_affected"] == 110
    assert new.playbook is None and new.severity is Severity.BLOCK and new.observed == {"drone": 5}


def test_domain_without_allowed_values_judges_against_the_reference(tmp_path: Path, reference: DatasetProfile) -> None:
    contract = eta_contract(vehicle_type=ColumnContract("vehicle_type", "string"))
    frame = eta_frame(1)
    frame.loc[:9, "vehicle_type"] = "SCOOTER"
    frame.loc[10:19, "vehicle_type"] = "drone"
    found = findings(check_domain, context(snapshot_of(tmp_path, frame), reference, contract))
    assert kinds_and_columns(found) == [
        (FindingKind.CATEGORY_CASING, "vehicle_type"),
        (FindingKind.NEW_CATEGORY, "vehicle_type"),
    ]
    assert found[0].params["mapping"] == {"SCOOTER": "scooter"} and found[0].params["source"] == "reference"
    assert found[1].severity is Severity.WARN  # the reference records history, not law


def test_domain_edges_all_null_empty_and_no_reference_column(tmp_path: Path, reference: DatasetProfile) -> None:
    nulls = eta_frame(1).assign(distance_km=np.nan, vehicle_type=None)
    assert findings(check_domain, context(snapshot_of(tmp_path, nulls, "nulls"), reference)) == []
    empty = snapshot_of(tmp_path, eta_frame(1).head(0), "empty")
    assert findings(check_domain, context(empty, reference)) == []
    free = eta_contract(vehicle_type=ColumnContract("vehicle_type", "string"))
    no_reference = DatasetProfile(
        reference.row_count, {k: v for k, v in reference.columns.items() if k != "vehicle_type"}
    )
    odd = eta_frame(1).assign(vehicle_type="hovercraft")
    assert findings(check_domain, context(snapshot_of(tmp_path, odd, "odd"), no_reference, free)) == []
    many = eta_frame(1).assign(vehicle_type=[f"v{i % 300}" for i in range(8_000)])  # too many to count
    found = findings(check_domain, context(snapshot_of(tmp_path, many, "many"), reference))
    assert kinds_and_columns(found) == [(FindingKind.NEW_CATEGORY, "vehicle_type")]


def test_domain_never_treats_keys_or_identifiers_as_categories(tmp_path: Path) -> None:
    small = eta_frame(0, rows=150)  # few enough ids to be counted in the profile
    reference = snapshot_of(tmp_path, small, "reference").profile
    contract = eta_contract(order_id=ColumnContract("order_id", "string"))  # not even marked as the key
    later = eta_frame(1, rows=150)
    assert findings(check_domain, context(snapshot_of(tmp_path, later, "later"), reference, contract)) == []


# --- drift ----------------------------------------------------------------------------------------


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


def test_drift_leaves_unit_changes_to_the_units_check(tmp_path: Path, reference: DatasetProfile) -> None:
    metres = eta_frame(1).assign(distance_km=lambda f: f.distance_km * 1000)
    assert findings(check_drift, context(snapshot_of(tmp_path, metres), reference)) == []
    report = run_guard(context(snapshot_of(tmp_path, metres, "whole"), reference))
    assert kinds_and_columns(list(report.findings)) == [(FindingKind.UNIT_MISMATCH, "distance_km")]
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


# --- leakage --------------------------------------------------------------------------------------


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


# --- an empty row sample is no evidence ----------------------------------------------------------


def test_an_empty_row_sample_blocks_instead_of_passing(tmp_path: Path, reference: DatasetProfile) -> None:
    snapshot = snapshot_of(tmp_path, eta_frame(1))
    unsampled = dataclasses.replace(snapshot, sample=snapshot.sample.head(0))  # as a too-small sample rounds to
    report = run_guard(context(unsampled, reference))
    errors = [f for f in report.blocking if f.kind is FindingKind.CHECK_ERROR]
    assert sorted(f.check for f in errors) == ["drift", "leakage"]
    assert all("empty row sample" in f.message for f in errors)


# --- the clean demo never false-alarms ------------------------------------------------------------


@pytest.mark.parametrize("rain", ["exponential", "zero_inflated"])
def test_clean_resamples_raise_no_finding_at_all(tmp_path: Path, rain: str) -> None:
    reference = snapshot_of(tmp_path, eta_frame(0, rain=rain), "reference").profile
    for seed in range(1, 21):
        snapshot = snapshot_of(tmp_path, eta_frame(seed, rain=rain), f"seed{seed}")
        report = run_guard(context(snapshot, reference))
        assert report.findings == (), (seed, [f.to_dict() for f in report.findings])
        assert {o.check for o in report.outcomes} >= {"volume", "duplicates", "domain", "drift", "leakage"}
