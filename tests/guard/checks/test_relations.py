"""guard/checks/relations.py: a relationship the reference always held (a sum, a bound, an hour of the time) broken
is named on the column that changed, and told from a leak of the label."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chaos.corpus.falsealarms import partial_leak
from guard.checks.relations import check_relations
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind
from profiles.reference import Reference, build_reference

import orders_support
from orders_support import URN, found, leaked, orders, snap
from real_cases import RealCase, blocking_on


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    return orders_support.reference(tmp_path_factory)


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


def test_a_code_constant_where_the_time_never_leaves_midnight_is_not_read_as_its_hour(tmp_path: Path) -> None:
    """Every reference row stamped at midnight and a code 0 on every one of them: 0 is the hour of each stamp, but
    only because neither moves. The code taking other values on a third of a batch's rows is data, not an hour
    column broken."""

    def at_midnight(seed: int, raised: float = 0.0) -> pd.DataFrame:
        frame = orders(seed)
        rng = np.random.default_rng(seed)
        code = np.where(rng.random(len(frame)) < raised, rng.integers(2, 40, len(frame)), 0)
        return frame.assign(event_ts=frame["event_ts"].dt.floor("D"), code=code.astype("int64"))

    kept = build_reference([snap(tmp_path, at_midnight(seed), f"b{seed}").batch for seed in range(4)])
    relations = kept.profile.relations
    assert relations is not None and relations.hour_of["event_ts"]["code"][0] > 0  # held on offset 0
    findings = found(check_relations, tmp_path, at_midnight(9, raised=0.3), kept)
    assert [(f.kind, f.column) for f in findings if f.column == "code"] == []
