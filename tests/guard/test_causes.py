"""Root causes named: columns_swapped, sentinel, relation_broken and target_leakage (partial, against the
reference's association; a label copy), each explaining the symptoms other checks see; and zero findings of
these kinds over every clean batch of the three real datasets."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chaos.falsealarms import load_batches, partial_leak
from chaos.realdata import DATASETS
from guard.causes import explain
from guard.checks.leakage import check_leakage
from guard.checks.relations import check_relations
from guard.checks.sentinels import check_sentinels, looks_like_placeholder
from guard.checks.swaps import check_columns_swapped
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind, Severity
from guard.runner import run_guard
from profiles.reference import Reference, build_reference
from profiles.snapshot import Snapshot, read_snapshot

from real_cases import RealCase, blocking_on

URN = "urn:li:dataset:(urn:li:dataPlatform:file,test.causes,PROD)"
CAUSES = {
    FindingKind.TIMESTAMP_SHIFT,
    FindingKind.COLUMNS_SWAPPED,
    FindingKind.SENTINEL,
    FindingKind.RELATION_BROKEN,
    FindingKind.TARGET_LEAKAGE,
}
CONTRACT = Contract(
    URN,
    (
        ColumnContract("order_id", "string", primary_key=True),
        ColumnContract("event_ts", "timestamp"),
        ColumnContract("distance_km", "number", unit="km", minimum=0, maximum=50),
        ColumnContract("prep_time_min", "number", unit="min", minimum=0, maximum=120),
        ColumnContract("temp_min", "number", unit="C"),
        ColumnContract("temp_max", "number", unit="C"),
        ColumnContract("courier_load", "integer", minimum=0, maximum=20),
        ColumnContract("part_a", "number"),
        ColumnContract("part_b", "number"),
        ColumnContract("total", "number"),
        ColumnContract("eta_minutes", "number", required=False),
    ),
    label_column="eta_minutes",
    event_timestamp_column="event_ts",
)


def orders(seed: int, rows: int = 3_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    distance = np.clip(rng.lognormal(1.1, 0.55, rows), 0.3, 25).round(3)
    prep = np.clip(rng.normal(12, 4, rows), 2, 45).round(2)
    low = rng.normal(8, 4, rows).round(1)
    a, b = rng.normal(10, 2, rows).round(2), rng.normal(3, 1, rows).round(2)
    return pd.DataFrame(
        {
            "order_id": [f"o-{seed}-{i}" for i in range(rows)],
            "event_ts": (
                pd.Timestamp("2025-01-01", tz="UTC") + pd.to_timedelta(np.sort(rng.uniform(0, 7 * 86_400, rows)), "s")
            ).astype("datetime64[ms, UTC]"),
            "distance_km": distance,
            "prep_time_min": prep,
            "temp_min": low,
            "temp_max": (low + rng.uniform(3, 10, rows)).round(1),
            "courier_load": rng.poisson(1.5, rows),
            "part_a": a,
            "part_b": b,
            "total": (a + b).round(2),
            "eta_minutes": (10 + 3 * distance + 0.5 * prep + rng.normal(0, 4, rows)).round(2),
        }
    )


def snap(tmp_path: Path, frame: pd.DataFrame, name: str) -> Snapshot:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path, index=False, row_group_size=1_000)
    return read_snapshot(path, time_column="event_ts", batch_id=name)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    tmp = tmp_path_factory.mktemp("causes")
    return build_reference([snap(tmp, orders(seed), f"b{seed}").batch for seed in range(4)])


def found(
    check, tmp_path: Path, frame: pd.DataFrame, reference: object, contract: Contract = CONTRACT
) -> list[Finding]:  # type: ignore[no-untyped-def]
    return list(check(GuardContext(URN, contract, snap(tmp_path, frame, "batch"), reference, (), now_ms=0)))  # type: ignore[arg-type]


def swapped(frame: pd.DataFrame, a: str, b: str, rows: np.ndarray | None = None) -> pd.DataFrame:
    rows = np.ones(len(frame), dtype=bool) if rows is None else rows
    return frame.assign(**{a: np.where(rows, frame[b], frame[a]), b: np.where(rows, frame[a], frame[b])})


# --- columns_swapped ------------------------------------------------------------------------------------


def test_a_clean_batch_has_no_swap(tmp_path: Path, reference: Reference) -> None:
    assert found(check_columns_swapped, tmp_path, orders(9), reference) == []


def test_two_columns_in_each_others_place_are_named_with_both_and_the_whole_scope(
    tmp_path: Path, reference: Reference
) -> None:
    result = found(check_columns_swapped, tmp_path, swapped(orders(9), "distance_km", "prep_time_min"), reference)
    assert [(f.kind, f.params["columns"], f.params["scope"]) for f in result] == [
        (FindingKind.COLUMNS_SWAPPED, ["distance_km", "prep_time_min"], "all")
    ]
    assert result[0].playbook == "swap_columns" and set(result[0].params["observed_medians"]) == {
        "distance_km",
        "prep_time_min",
    }


def test_some_rows_breaking_a_learned_order_by_a_whole_gap_are_swapped_rows(
    tmp_path: Path, reference: Reference
) -> None:
    frame = orders(9)
    rows = np.random.default_rng(0).random(len(frame)) < 0.1
    result = found(check_columns_swapped, tmp_path, swapped(frame, "temp_min", "temp_max", rows), reference)
    assert [(f.params["scope"], f.params["order"]) for f in result] == [("order", ["temp_min", "temp_max"])]


def test_an_order_broken_by_a_little_or_by_far_more_is_no_swap(tmp_path: Path, reference: Reference) -> None:
    frame = orders(9)
    crossing = frame.assign(
        temp_min=np.where(np.arange(len(frame)) % 5 == 0, frame["temp_max"] + 0.5, frame["temp_min"])
    )
    assert found(check_columns_swapped, tmp_path, crossing, reference) == []  # two series crossing
    fahrenheit = frame.assign(temp_min=frame["temp_min"] * 1.8 + 32)
    assert found(check_columns_swapped, tmp_path, fahrenheit, reference) == []  # a unit change


def test_columns_of_other_units_have_no_order_to_learn(tmp_path: Path, reference: Reference) -> None:
    frame = orders(9)  # distance (km) <= prep time (min) on most rows: a coincidence, not an order
    rows = np.arange(len(frame)) % 10 == 0
    result = found(
        check_columns_swapped,
        tmp_path,
        frame.assign(distance_km=np.where(rows, frame["prep_time_min"] + 20, frame["distance_km"])),
        reference,
    )
    assert result == []


# --- sentinel -------------------------------------------------------------------------------------------


def test_placeholders() -> None:
    assert [looks_like_placeholder(v) for v in (0, -1, -9, -99, 999, 9999.0, 77777, 7, 9, 12, 100, -2)] == [
        True,
        True,
        True,
        True,
        True,
        True,
        True,
        False,
        True,
        False,
        False,
        False,
    ]


def test_a_clean_batch_has_no_sentinel(tmp_path: Path, reference: Reference) -> None:
    assert found(check_sentinels, tmp_path, orders(9), reference) == []


@pytest.mark.parametrize(
    "column,value,how",
    [
        ("distance_km", 0.0, "new"),
        ("courier_load", -1, "impossible"),
        ("prep_time_min", 9999.0, "impossible"),
        ("temp_min", -500.0, "new"),
        ("part_a", 999.0, "new"),
    ],
)
def test_a_placeholder_on_a_tenth_of_rows_is_a_sentinel_to_quarantine(
    tmp_path: Path, reference: Reference, column: str, value: float, how: str
) -> None:
    frame = orders(9)
    rows = np.random.default_rng(1).random(len(frame)) < 0.1
    result = found(check_sentinels, tmp_path, frame.assign(**{column: frame[column].mask(rows, value)}), reference)
    assert [(f.kind, f.column, f.params["value"], f.params["how"], f.playbook) for f in result] == [
        (FindingKind.SENTINEL, column, value, how, "quarantine_rows")
    ]


def test_impossible_values_that_are_not_one_code_are_left_to_the_range_check(
    tmp_path: Path, reference: Reference
) -> None:
    frame = orders(9)
    rows = np.arange(len(frame)) % 20 == 0
    assert (
        found(
            check_sentinels,
            tmp_path,
            frame.assign(courier_load=frame["courier_load"].mask(rows, frame["courier_load"] + 25)),
            reference,
        )
        == []
    )


def test_zeros_continuing_the_reference_edge_are_data(tmp_path: Path, tmp_path_factory) -> None:
    rng = np.random.default_rng(2)
    calm = [
        pd.DataFrame(
            {
                "event_ts": pd.date_range("2025-01-01", periods=500, freq="h", tz="UTC"),
                "wind": np.clip(rng.gamma(1.5, 1.5, 500), 0.5, None).round(1),
            }
        )
        for _ in range(3)
    ]
    contract = Contract(URN, (ColumnContract("event_ts", "timestamp"), ColumnContract("wind", "number", minimum=0)))
    ref = build_reference([snap(tmp_path, f, f"w{i}").batch for i, f in enumerate(calm)])
    batch = calm[0].assign(wind=calm[0]["wind"].mask(np.arange(500) % 40 == 0, 0.0))  # a few calm hours at 0
    assert found(check_sentinels, tmp_path, batch, ref, contract) == []


def test_a_legitimate_mass_half_the_rows_is_not_a_finding_however_it_grows(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    frames = [
        pd.DataFrame(
            {
                "event_ts": pd.date_range("2025-01-01", periods=400, freq="h", tz="UTC"),
                "ceiling": np.where(rng.random(400) < 0.5, 77_777.0, rng.uniform(100, 3_000, 400).round()),
            }
        )
        for _ in range(3)
    ]
    contract = Contract(URN, (ColumnContract("event_ts", "timestamp"), ColumnContract("ceiling", "number", minimum=0)))
    ref = build_reference([snap(tmp_path, f, f"c{i}").batch for i, f in enumerate(frames)])
    clear_week = frames[0].assign(ceiling=frames[0]["ceiling"].mask(np.arange(400) % 10 != 0, 77_777.0))
    assert found(check_sentinels, tmp_path, clear_week, ref, contract) == []


def test_a_rare_placeholder_that_grows_is_a_sentinel(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    frames = [
        pd.DataFrame(
            {
                "event_ts": pd.date_range("2025-01-01", periods=1_000, freq="h", tz="UTC"),
                "reading": np.where(rng.random(1_000) < 0.01, -1.0, rng.uniform(0, 50, 1_000).round(1)),
            }
        )
        for _ in range(3)
    ]
    contract = Contract(URN, (ColumnContract("event_ts", "timestamp"), ColumnContract("reading", "number")))
    ref = build_reference([snap(tmp_path, f, f"r{i}").batch for i, f in enumerate(frames)])
    grown = frames[0].assign(reading=frames[0]["reading"].mask(np.arange(1_000) % 4 == 0, -1.0))
    assert [(f.column, f.params["how"]) for f in found(check_sentinels, tmp_path, grown, ref, contract)] == [
        ("reading", "grown")
    ]


# --- relation_broken ------------------------------------------------------------------------------------


def test_a_sum_the_reference_always_held_is_named_on_its_total_when_it_breaks(
    tmp_path: Path, reference: Reference
) -> None:
    assert found(check_relations, tmp_path, orders(9), reference) == []
    frame = orders(9)
    broken = frame.assign(part_a=np.where(np.arange(len(frame)) % 10 == 0, frame["part_a"] * 10, frame["part_a"]))
    result = found(check_relations, tmp_path, broken, reference)
    assert [(f.kind, f.column, f.params["relation"]) for f in result] == [
        (FindingKind.RELATION_BROKEN, "total", "total=part_a+part_b")
    ]
    assert result[0].params["broken_rows"] == int((np.arange(len(frame)) % 10 == 0).sum())


# --- target_leakage -------------------------------------------------------------------------------------


def leaked(
    frame: pd.DataFrame, column: str, share: float, by: str = "eta_minutes", reverse: bool = False
) -> pd.DataFrame:
    """`column` recomputed from `by` on a seeded `share` of the rows: its own values there dealt out in `by`'s
    order (its distribution unchanged), or in the reverse order."""
    rows = np.flatnonzero(np.random.default_rng(5).random(len(frame)) < share)
    order = rows[np.argsort(frame[by].to_numpy()[rows], kind="stable")]
    values = frame[column].to_numpy().copy()
    dealt = np.sort(values[rows])
    values[order] = dealt[::-1] if reverse else dealt
    return frame.assign(**{column: values})


def test_a_feature_recomputed_from_the_outcome_on_most_rows_jumps_past_the_reference(
    tmp_path: Path, reference: Reference
) -> None:
    assert found(check_leakage, tmp_path, orders(9), reference) == []
    result = found(check_leakage, tmp_path, leaked(orders(9), "prep_time_min", 0.9), reference)
    assert [(f.kind, f.column, f.params["statistic"]) for f in result] == [
        (FindingKind.TARGET_LEAKAGE, "prep_time_min", "association_jump")
    ]
    assert result[0].observed >= 0.9 and result[0].params["reference_batch_high"] < 0.6


def test_a_feature_the_reference_already_saw_determine_the_label_is_not_leakage(tmp_path: Path) -> None:
    frames = [orders(seed).assign(eta_minutes=lambda f: (f["distance_km"] * 3).round(2)) for seed in range(3)]
    ref = build_reference([snap(tmp_path, f, f"d{i}").batch for i, f in enumerate(frames)])
    assert found(check_leakage, tmp_path, frames[0], ref) == []  # the absolute rule alone would say 0.99+


def test_a_copy_of_the_label_is_target_leakage_and_explains_the_unexpected_column(
    tmp_path: Path, reference: Reference
) -> None:
    frame = orders(9).assign(eta_observed=lambda f: f["eta_minutes"])
    report = run_guard(GuardContext(URN, CONTRACT, snap(tmp_path, frame, "copy"), reference, (), now_ms=0))
    assert {(f.kind, f.column) for f in report.blocking} == {(FindingKind.TARGET_LEAKAGE, "eta_observed")}
    unexpected = [f for f in report.findings if f.kind is FindingKind.COLUMN_UNEXPECTED]
    assert [(f.severity, f.params["explained_by"]) for f in unexpected] == [
        (Severity.WARN, "target_leakage:eta_observed")
    ]


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


def test_an_hour_column_garbled_on_part_of_the_rows_is_a_broken_relation_not_leakage(
    tmp_path: Path, stations_newest_week: RealCase
) -> None:
    """The same rows given random hours: the relation to the time is broken, the label is not followed."""
    frame = stations_newest_week.frame
    rng = np.random.default_rng(5)
    rows = rng.random(len(frame)) < 0.4
    hours = np.where(rows, rng.integers(0, 24, len(frame)), frame["hour_local"].to_numpy())
    assert blocking_on(tmp_path, stations_newest_week, frame.assign(hour_local=hours)) == {
        (FindingKind.RELATION_BROKEN, "hour_local")
    }


def test_a_bound_between_two_columns_of_one_unit_broken_on_part_of_the_rows_names_the_column_that_changed(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """The dew point raised by up to 8 degrees on 40% of a May week's hours now exceeds the air temperature on
    some, a bound the reference met (saturation) and never crossed: temp_dew lost its correlations with the rest
    there, temp_air kept them. The air temperature dealt out in the order of the irradiance on 40% of the hours
    breaks it too, each value still one the week held: named on temp_air. The hours it breaks it on are all night
    hours (irradiance 0), which cannot tell whether it follows the label."""
    frame = hourly_week.frame
    rng = np.random.default_rng(3)
    raised = frame["temp_dew"] + np.where(rng.random(len(frame)) < 0.4, rng.uniform(0, 8, len(frame)), 0)
    assert blocking_on(tmp_path, hourly_week, frame.assign(temp_dew=raised)) == {
        (FindingKind.RELATION_BROKEN, "temp_dew")
    }
    assert blocking_on(tmp_path, hourly_week, leaked(frame, "temp_air", 0.4, by="ghi")) == {
        (FindingKind.RELATION_BROKEN, "temp_air")
    }
    # the dew point dealt out highest where the sun is lowest instead: on the hours it breaks the bound on (night
    # and five daylight hours), it follows the label downwards, exactly
    assert blocking_on(tmp_path, hourly_week, leaked(frame, "temp_dew", 0.4, by="ghi", reverse=True)) == {
        (FindingKind.TARGET_LEAKAGE, "temp_dew")
    }


def test_a_column_converted_to_another_unit_explains_the_bound_it_breaks(tmp_path: Path, hourly_week: RealCase) -> None:
    """The dew point in degF passes the air temperature in degC on most hours: the unit is the cause, healed by
    converting back, and the broken bound is its symptom (a heal cannot be refused for want of a playbook)."""
    frame = hourly_week.frame.assign(temp_dew=hourly_week.frame["temp_dew"] * 1.8 + 32)
    assert blocking_on(tmp_path, hourly_week, frame) == {(FindingKind.UNIT_MISMATCH, "temp_dew")}
    dew = hourly_week.frame["temp_dew"].to_numpy()
    healed = frame.assign(temp_dew=np.nextafter(dew, np.inf))  # converted back: 5.000000000000001 where air is 5.0
    assert (healed["temp_dew"] > healed["temp_air"]).sum() >= 3
    assert blocking_on(tmp_path, hourly_week, healed) == set()


# --- causes explain symptoms ----------------------------------------------------------------------------


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
    report = run_guard(GuardContext(URN, CONTRACT, snap(tmp_path, frame, "swap"), reference, (), now_ms=0))
    assert {(f.kind, f.column) for f in report.blocking} == {(FindingKind.COLUMNS_SWAPPED, "distance_km")}
    assert all(
        f.params.get("explained_by") == "columns_swapped:distance_km"
        for f in report.warnings
        if f.column in ("distance_km", "prep_time_min")
    )


# --- the real datasets: no finding of these kinds on any clean batch -----------------------------------


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
            GuardContext(contract.dataset_urn, contract, batches[i].snapshot, reference, (), now_ms=now_ms)
        )
        seen += [f"{batches[i].batch_id} {f.kind.value}:{f.column}" for f in report.findings if f.kind in CAUSES]
    assert seen == []


# --- a swap against a rescale, on real data: correlations with the other columns tell them apart ------------


def test_the_clean_week_blocks_on_nothing(tmp_path: Path, hourly_week: RealCase) -> None:
    assert blocking_on(tmp_path, hourly_week, hourly_week.frame) == set()


def test_a_feed_stuck_on_one_reading_is_a_frozen_sentinel(tmp_path: Path, hourly_week: RealCase) -> None:
    """A week of air temperature stuck on its first reading: a plausible value, no placeholder, held by every row
    where no week that passed held any one temperature on half its hours."""
    week = hourly_week.frame
    stuck = week.assign(temp_air=week["temp_air"].iloc[0])
    assert (FindingKind.SENTINEL, "temp_air") in blocking_on(tmp_path, hourly_week, stuck)


def test_a_feed_stuck_from_mid_week_on_is_a_frozen_sentinel_but_the_same_share_spread_out_is_not(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """Stuck from Thursday on: half the week's hours in one unbroken run of one reading. The same reading on every
    other hour is no stuck feed (a run of one), and holds no more than a share the frozen rule leaves alone."""
    week = hourly_week.frame
    reading = week["temp_air"].iloc[84]
    stuck_half = week.assign(temp_air=week["temp_air"].mask(week.index >= week.index[84], reading))
    assert (FindingKind.SENTINEL, "temp_air") in blocking_on(tmp_path, hourly_week, stuck_half)
    every_other = week.assign(temp_air=week["temp_air"].mask(np.arange(len(week)) % 2 == 0, reading))
    assert (FindingKind.SENTINEL, "temp_air") not in blocking_on(tmp_path, hourly_week, every_other)


def test_a_column_with_a_mass_of_its_own_moved_onto_one_value_is_not_frozen(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """Visibility sits on a point mass most hours (16,100 m): a week all at one other reading is a reporting
    change such columns show between clean batches (24,000 m on 77% of a clean week), not a stuck feed."""
    week = hourly_week.frame
    assert (FindingKind.SENTINEL, "visibility") not in blocking_on(
        tmp_path, hourly_week, week.assign(visibility=24000.0)
    )


def test_a_keyless_week_loaded_twice_is_whole_rows_repeated(tmp_path: Path, hourly_week: RealCase) -> None:
    """With no key declared (the dataset's spec keys the hour), every week that passed still held one row per hour:
    the same hours again, identical in every column, are a double load. One hour read twice, differently, is not."""
    week, contract = hourly_week.frame, hourly_week.dataset.contract()
    keyless = replace(contract, columns=tuple(replace(c, primary_key=False) for c in contract.columns))
    twice = blocking_on(tmp_path, hourly_week, pd.concat([week, week]), keyless)
    assert (FindingKind.DUPLICATE_KEYS, "time") in twice
    again = week.head(2).assign(temp_air=week["temp_air"].head(2) + 0.5)
    assert (FindingKind.DUPLICATE_KEYS, "time") not in blocking_on(
        tmp_path, hourly_week, pd.concat([week, again]), keyless
    )


def test_a_rescale_breaking_an_order_is_a_scale_shift_of_that_column_never_a_swap(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """dhi x2.5 breaks dhi <= ghi on every daylight hour, by about the reference's gap: the order rule alone
    would swap them back (and publish dhi's values as ghi). Both keep their correlations, so it is a rescale."""
    frame = hourly_week.frame.assign(dhi=hourly_week.frame["dhi"] * 2.5)
    assert blocking_on(tmp_path, hourly_week, frame) == {(FindingKind.SCALE_SHIFT, "dhi")}


def test_a_swap_of_two_columns_is_named_from_their_exchanged_correlations(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    frame = swapped(hourly_week.frame, "dni", "dhi")
    assert (FindingKind.COLUMNS_SWAPPED, "dni") in blocking_on(tmp_path, hourly_week, frame)


def test_a_swap_of_a_bounded_column_is_named_from_the_bound_it_reverses(
    tmp_path: Path, hourly_last_week: RealCase
) -> None:
    """The year's last week is humid: the dew point sits close under the air temperature, so swapped they break
    dew <= air by half the reference's gap only, and their correlations barely tell. But the reference reached
    that bound (saturation) and never crossed it, and now every hour but the saturated ones crosses it."""
    frame = swapped(hourly_last_week.frame, "temp_air", "temp_dew")
    assert (FindingKind.COLUMNS_SWAPPED, "temp_air") in blocking_on(tmp_path, hourly_last_week, frame)


def test_rows_swapped_are_swapped_back_but_rows_of_changed_values_breaking_the_same_bound_are_not(
    tmp_path: Path, hourly_whole_table: RealCase
) -> None:
    """A year of hours: on 15% of them the air and dew-point temperatures swapped, the dew point passes the air
    by the usual gap, and on those rows the two exchanged their correlations with the rest: swap them back. The
    air temperature dealt out in the order of the irradiance breaks the bound on as many hours by as much; but
    there each column kept its own correlations, so swapping would publish values no one measured (and there
    the air temperature follows the label exactly: leakage)."""
    table = hourly_whole_table.frame
    rows = np.random.default_rng(5).random(len(table)) < 0.15
    blocking = blocking_on(tmp_path, hourly_whole_table, swapped(table, "temp_air", "temp_dew", rows))
    assert (FindingKind.COLUMNS_SWAPPED, "temp_air") in blocking
    assert blocking_on(tmp_path, hourly_whole_table, leaked(table, "temp_air", 0.5, by="ghi")) == {
        (FindingKind.TARGET_LEAKAGE, "temp_air")
    }


def test_a_daily_month_clean_swapped_and_rescaled(tmp_path: Path, daily_newest_month: RealCase) -> None:
    """A strict order held through a year of seasons (temp_min <= temp_max), broken on every December day by
    half the year's gap: swapped, however small December's gap. Broken on most days by a temp_min x2.5: no
    swap puts each column back into its natural variation, so temp_min was rescaled."""
    frame = daily_newest_month.frame
    assert blocking_on(tmp_path, daily_newest_month, frame) == set()
    found = blocking_on(tmp_path, daily_newest_month, swapped(frame, "temp_min", "temp_max"))
    assert found == {(FindingKind.COLUMNS_SWAPPED, "temp_max")}
    rescaled = frame.assign(temp_min=frame["temp_min"] * 2.5)
    assert blocking_on(tmp_path, daily_newest_month, rescaled) == {(FindingKind.SCALE_SHIFT, "temp_min")}


def test_a_whole_reversal_that_jumped_into_the_other_columns_place_is_a_swap(
    tmp_path: Path, daily_newest_month_half_year: RealCase
) -> None:
    """Six months of summer and autumn saw temp_min <= temp_max strictly but never a winter, and December's gap
    is half of theirs: the break alone could be two series crossing. But each column's December sits where the
    other sat in November, and swapped back each continues from where it was: a swap."""
    case = daily_newest_month_half_year
    assert blocking_on(tmp_path, case, case.frame) == set()
    found = blocking_on(tmp_path, case, swapped(case.frame, "temp_min", "temp_max"))
    assert found == {(FindingKind.COLUMNS_SWAPPED, "temp_max")}


def test_a_bound_broken_by_values_dealt_in_the_labels_order_is_leakage(
    tmp_path: Path, hourly_last_week: RealCase
) -> None:
    """The air temperature dealt out again in the irradiance's order on half of the last week's hours falls under
    the dew point on some: a bound broken. On those hours it is an exact monotone function of the label (ordered
    as ghi over 10 distinct values), which changed measurements are not: leakage. Lowered by random amounts on the
    same share of hours, it breaks the bound too, but follows nothing: a broken relation."""
    case = hourly_last_week
    assert blocking_on(tmp_path, case, case.frame) == set()
    dealt = leaked(case.frame, "temp_air", 0.5, by="ghi")
    assert blocking_on(tmp_path, case, dealt) == {(FindingKind.TARGET_LEAKAGE, "temp_air")}
    rng = np.random.default_rng(1)
    lowered = case.frame["temp_air"] - np.where(
        rng.random(len(case.frame)) < 0.5, rng.uniform(0, 8, len(case.frame)), 0
    )
    assert blocking_on(tmp_path, case, case.frame.assign(temp_air=lowered)) == {
        (FindingKind.RELATION_BROKEN, "temp_air")
    }


def test_an_order_never_reached_broken_by_values_dealt_in_the_labels_order_is_leakage(
    tmp_path: Path, daily_whole_table: RealCase
) -> None:
    """Four years of days, temp_max dealt out again in the order of the day's weather on half of them: it falls
    under temp_min on about a hundred days. The six months of reference held that order but never met it, so
    the break alone could be two series crossing. On those days temp_max sorts the weather's categories exactly,
    each into its own interval: leakage. Lowered by random amounts on the same share of days, it breaks the order
    as often, sorts nothing, and the order's break is no finding: unless the contract declares the order (the
    dataset's does: temp_max atLeast temp_min), and then it blocks as the relation broken."""
    case = daily_whole_table
    declared = case.dataset.contract()
    undeclared = replace(declared, columns=tuple(replace(c, at_least=None) for c in declared.columns))
    assert declared.declared_orders == (("temp_min", "temp_max"),) and not undeclared.declared_orders
    assert blocking_on(tmp_path, case, case.frame) == set()
    dealt = leaked(case.frame, "temp_max", 0.5, by="weather")
    for contract in (undeclared, declared):
        assert blocking_on(tmp_path, case, dealt, contract) == {(FindingKind.TARGET_LEAKAGE, "temp_max")}
    rng = np.random.default_rng(1)
    rows = rng.random(len(case.frame)) < 0.5
    lowered = case.frame["temp_max"] - np.where(rows, rng.uniform(0, 12, len(case.frame)), 0).round(1)
    assert (case.frame["temp_min"] > lowered).sum() > 50
    assert blocking_on(tmp_path, case, case.frame.assign(temp_max=lowered), undeclared) == set()
    found = blocking_on(tmp_path, case, case.frame.assign(temp_max=lowered), declared)
    assert (FindingKind.RELATION_BROKEN, "temp_max") in found and FindingKind.TARGET_LEAKAGE not in {
        k for k, _ in found
    }


BANDS = Contract(
    URN,
    (
        ColumnContract("event_ts", "timestamp"),
        ColumnContract("temp_min", "number", unit="C"),
        ColumnContract("temp_max", "number", unit="C"),
        ColumnContract("band", "string"),
    ),
    label_column="band",
    event_timestamp_column="event_ts",
)


def banded(frame: pd.DataFrame) -> pd.DataFrame:
    """The day's band of its maximum temperature as the label: temp_max sorts it by definition."""
    edges = [-np.inf, 4, 8, 12, 16, 20, np.inf]
    band = pd.cut(frame["temp_max"], edges, labels=["a", "b", "c", "d", "e", "f"]).astype(str)
    return frame[["event_ts", "temp_min", "temp_max"]].assign(band=band)


def test_a_feature_that_sorts_the_label_by_nature_sorts_it_on_broken_rows_too(tmp_path: Path) -> None:
    """The label is the band of temp_max, so every reference batch saw temp_max determine it. When temp_max falls
    under temp_min on some days (an order the reference held, never met), it still sorts the bands there: no
    evidence of leakage, and the order's break alone is no finding."""
    ref = build_reference([snap(tmp_path, banded(orders(seed)), f"band{seed}").batch for seed in range(3)])
    frame = orders(9)
    rows = np.random.default_rng(2).random(len(frame)) < 0.1
    lowered = frame.assign(temp_max=np.where(rows, frame["temp_min"] - 2, frame["temp_max"]).round(1))
    assert (lowered["temp_min"] > lowered["temp_max"]).sum() > 100
    assert found(check_relations, tmp_path, banded(lowered), ref, BANDS) == []


def test_a_swap_of_two_series_of_one_unit_is_read_from_their_ranges(
    tmp_path: Path, stations_newest_week: RealCase
) -> None:
    """No other column to correlate with and no order held: San Francisco at Seattle's December temperatures
    (all below any it showed) and Seattle at San Francisco's, each in range and natural once swapped back."""
    assert blocking_on(tmp_path, stations_newest_week, stations_newest_week.frame) == set()
    frame = swapped(stations_newest_week.frame, "sf_temp", "seattle_temp")
    assert blocking_on(tmp_path, stations_newest_week, frame) == {(FindingKind.COLUMNS_SWAPPED, "sf_temp")}


def test_a_swap_in_a_batch_that_passed_earlier_is_named_against_its_own_profile(
    tmp_path: Path, hourly_week: RealCase
) -> None:
    """The history check judges a kept batch whose rows changed against its own kept profile (no batches to
    measure natural variation by): dni and dhi swapped there also break dhi <= ghi, and it is dni's correlations
    that dhi took, not ghi's (swapping ghi back would publish dhi's values as the label)."""
    clean = tmp_path / "clean.parquet"
    hourly_week.frame.to_parquet(clean, index=False)
    kept = read_snapshot(clean, time_column=hourly_week.dataset.time_column).profile
    against_itself = RealCase(hourly_week.dataset, kept, hourly_week.frame)  # type: ignore[arg-type]
    found = blocking_on(tmp_path, against_itself, swapped(hourly_week.frame, "dni", "dhi"))
    assert (FindingKind.COLUMNS_SWAPPED, "dni") in found and (FindingKind.COLUMNS_SWAPPED, "ghi") not in found


def test_a_swap_in_a_month_that_passed_earlier_is_named_by_its_exact_values(tmp_path: Path) -> None:
    """In June the two cities' temperatures overlap and hold no order, so nothing in the values tells a swap. But
    the month passed earlier and its profile was kept: each column now holds exactly the values the other held,
    and with the hour each exchanged its co-moment too. That is the kept rows, swapped."""
    june = load_batches(DATASETS["pnw_temps"], tmp_path, "month")[5]
    assert june.batch_id == "2010-06" and june.snapshot.batch is not None
    against_itself = RealCase(DATASETS["pnw_temps"], build_reference([june.snapshot.batch]), june.frame)
    assert blocking_on(tmp_path, against_itself, june.frame) == set()
    found = blocking_on(tmp_path, against_itself, swapped(june.frame, "sf_temp", "seattle_temp"))
    assert found == {(FindingKind.COLUMNS_SWAPPED, "sf_temp")}
    reordered = june.frame.assign(sf_temp=june.frame["sf_temp"].to_numpy()[::-1])
    assert (FindingKind.COLUMNS_SWAPPED, "sf_temp") not in blocking_on(
        tmp_path, against_itself, swapped(reordered, "sf_temp", "seattle_temp")
    )


def test_one_placeholder_where_no_measurement_can_be_is_a_sentinel_but_one_slightly_impossible_value_is_not(
    tmp_path: Path, daily_newest_month: RealCase
) -> None:
    """A month of rain with one -9999: too few rows for a mass anywhere else, but rain below 0 is no measurement
    and -9999 is typed for 'unknown', so its row is quarantined (exact), not left to block as out of range. A
    lone -0.1 is impossible too, yet no code: out of range, for a person to look at."""
    frame = daily_newest_month.frame.copy()
    frame.loc[3, "precipitation"] = -9999.0
    assert blocking_on(tmp_path, daily_newest_month, frame) == {(FindingKind.SENTINEL, "precipitation")}
    frame.loc[3, "precipitation"] = -0.1
    assert blocking_on(tmp_path, daily_newest_month, frame) == {(FindingKind.OUT_OF_RANGE, "precipitation")}


def test_a_leak_into_one_category_breaks_a_declared_order_and_is_blocked(
    tmp_path: Path, daily_newest_month: RealCase
) -> None:
    """The real-data bench's partial leak in Seattle's December 2015: half the days' temp_max dealt out again in the
    weather's order. The month is nearly all fog, so the leak sorts almost nothing and is not named; but it puts
    temp_max under temp_min on three days. The reference never met that order, so undeclared it passes; the contract
    declares it (a day's maximum is at least its minimum), and it blocks on the column that changed."""
    case = daily_newest_month
    declared = case.dataset.contract()
    undeclared = replace(declared, columns=tuple(replace(c, at_least=None) for c in declared.columns))
    dealt = partial_leak(case.frame, case.dataset)
    assert (dealt["temp_max"] < dealt["temp_min"]).sum() == 3
    assert blocking_on(tmp_path, case, dealt, undeclared) == set()
    assert blocking_on(tmp_path, case, dealt, declared) == {(FindingKind.RELATION_BROKEN, "temp_max")}
    assert blocking_on(tmp_path, case, case.frame, declared) == set()
