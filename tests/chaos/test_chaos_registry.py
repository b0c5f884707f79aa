"""The scenario registry and row selection: plain, refusing duplicates, seeded."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from chaos.errors import InjectionError, UnknownScenario
from chaos.failures.catalog import SCENARIOS, get_scenario
from chaos.failures.registry import register, scenario_rng
from chaos.failures.scenarios import DEMO_SCENARIOS
from chaos.failures.selection import Selection, select_rows


def test_every_demo_scenario_is_registered_once_and_states_its_expectation():
    assert [s.name for s in DEMO_SCENARIOS] == [n for n in SCENARIOS if n in {s.name for s in DEMO_SCENARIOS}]
    for scenario in DEMO_SCENARIOS:
        assert (scenario.table is None) != (scenario.upstream_injector is None), scenario.name
        assert scenario.columns or scenario.upstream or scenario.kind.value == "volume_drop", scenario.name
        assert list(scenario.sweep) == sorted(scenario.sweep), scenario.name


def test_registering_a_name_twice_is_an_error():
    scenario = get_scenario("unit_km_to_m")
    with pytest.raises(ValueError, match="'unit_km_to_m' is already registered"):
        register(dataclasses.replace(scenario))
    assert SCENARIOS["unit_km_to_m"] is scenario


def test_unknown_scenario_names_the_known_ones():
    with pytest.raises(UnknownScenario) as caught:
        get_scenario("unit_km_to_furlongs")
    assert str(caught.value).startswith("unknown chaos scenario 'unit_km_to_furlongs'; use one of: ")
    assert "unit_km_to_m" in str(caught.value)


def test_the_scenario_rng_depends_on_name_and_seed_only():
    assert scenario_rng("a", 1).integers(1 << 30) == scenario_rng("a", 1).integers(1 << 30)
    assert scenario_rng("a", 1).integers(1 << 30) != scenario_rng("a", 2).integers(1 << 30)
    assert scenario_rng("a", 1).integers(1 << 30) != scenario_rng("b", 1).integers(1 << 30)


FRAME = pd.DataFrame({"x": [5.0, 1.0, 4.0, 2.0, 3.0, np.nan, 6.0, 0.0], "t": [8, 7, 6, 5, 4, 3, 2, 1]})


def test_random_rows_are_the_share_asked_for():
    mask = select_rows(FRAME, 0.5, Selection(), "x", np.random.default_rng(0))
    assert mask.sum() == 4


def test_a_positive_share_selects_at_least_one_row_and_a_zero_share_none():
    # 2.5% of 8 rows rounds to none: a failure of no row is no failure
    for selection in (Selection(), Selection("window"), Selection("window", "t")):
        assert select_rows(FRAME, 0.025, selection, "x", np.random.default_rng(0)).sum() == 1
        assert select_rows(FRAME, 0.0, selection, "x", np.random.default_rng(0)).sum() == 0
    assert select_rows(FRAME.head(0), 0.025, Selection(), "x", np.random.default_rng(0)).sum() == 0


def test_a_window_of_the_column_itself_is_contiguous_in_its_sorted_values():
    for seed in range(10):
        mask = select_rows(FRAME, 0.375, Selection("window"), "x", np.random.default_rng(seed))
        ranks = FRAME["x"].rank(method="first", na_option="bottom")[mask].sort_values().to_numpy()
        assert len(ranks) == 3 and np.all(np.diff(ranks) == 1)


def test_a_window_of_another_column_follows_that_column():
    mask = select_rows(FRAME, 0.25, Selection("window", "t"), "x", np.random.default_rng(3))
    chosen = sorted(FRAME.loc[mask, "t"])
    assert len(chosen) == 2 and chosen[1] - chosen[0] == 1


def test_selection_parses_and_refuses_unknown_modes():
    assert Selection.parse("window:event_ts") == Selection("window", "event_ts")
    assert Selection.parse("random").label() == "random"
    with pytest.raises(InjectionError, match="'everything' is not one of random, window, window:COLUMN"):
        Selection.parse("everything")
    with pytest.raises(InjectionError, match="window over column 'nope'"):
        select_rows(FRAME, 0.5, Selection("window", "nope"), "x", np.random.default_rng(0))


def test_chaos_list_states_each_scenarios_expectation():
    from tests.chaos.helpers import kintsugi

    code, out, _ = kintsugi("chaos", "list", "--json")
    listed = {d["name"]: d for d in json.loads(out)}
    assert code == 0 and set(listed) == {s.name for s in DEMO_SCENARIOS}
    assert (listed["unit_km_to_m"]["kind"], listed["unit_km_to_m"]["outcome"]) == ("unit_mismatch", "promoted")
    assert (listed["volume_drop"]["kind"], listed["volume_drop"]["outcome"]) == ("volume_drop", "blocked")
    assert listed["distribution_shift"]["outcome"] == "needs-review"  # drift warns: held for review, no incident


def test_a_drill_of_an_unknown_scenario_exits_2_before_any_work():
    from tests.chaos.helpers import kintsugi

    code, _, err = kintsugi("drill", "--scenarios", "unit_km_to_m,meteor", "--seeds", "1")
    assert code == 2 and err.startswith("error: unknown chaos scenario 'meteor'; use one of: ")
