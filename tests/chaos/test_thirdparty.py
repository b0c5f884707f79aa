"""chaos/failures/thirdparty.py: badgers' generators as drill scenarios, at its defaults and at half of them, on the columns
they fit. Needs the corpus extra (`pip install -e '.[corpus]'`, which `make bench-corpus` installs): badgers pins
pandas below the version the rest of the project tests with, so it is not in the dev extra."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from chaos.failures.families import scenario_named
from chaos.failures.thirdparty import BADGERS_NAMES, ThirdPartyScenario, badgers_scenarios
from controlplane.spec import PipelineSpec, PromotionRules
from controlplane.vocab import Policy
from guard.contract import ColumnContract, Contract
from guard.findings import make_finding
from guard.kinds import FindingKind as K
from training.spec import TrainingSpec

pytest.importorskip("badgers", reason="the corpus extra: pip install -e '.[corpus]'")

URN = "urn:li:dataset:(urn:li:dataPlatform:file,third.party,PROD)"


def _frame(rows: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "at": pd.date_range("2024-01-01", periods=rows, freq="h", tz="UTC"),
            "level": rng.normal(10, 2, rows),
            "count": rng.integers(0, 50, rows),
            "kind": rng.choice(["alpha", "bravo", "charlie"], rows),
            "y": rng.normal(0, 1, rows),
        }
    )
    frame.loc[rng.random(rows) < 0.2, "level"] = np.nan  # natural nulls the generators must leave as they are
    return frame


def _pipeline() -> tuple[Contract, PipelineSpec]:
    columns = (
        ColumnContract("at", "timestamp", required=True),
        ColumnContract("level", "number"),
        ColumnContract("count", "integer"),
        ColumnContract("kind", "string"),
        ColumnContract("y", "number"),
    )
    contract = Contract(URN, columns, label_column="y", event_timestamp_column="at")
    training = TrainingSpec(
        task="regression",
        target="y",
        numeric_features=["level", "count"],
        categorical_features=["kind"],
        time_column="at",
        estimator="x",
        params={},
        metric="mae",
    )
    rules = PromotionRules("mae", 0.0, 0.0)
    return contract, PipelineSpec("third", URN, Path("t"), "t", training, rules, Policy.AUTO, Path("third.yaml"))


def test_every_generator_applies_at_both_severities_and_corrupts_what_it_says():
    contract, spec = _pipeline()
    built, skipped = badgers_scenarios(contract, spec)
    assert not skipped and sorted(s.name for s in built) == sorted(BADGERS_NAMES)
    clean = _frame()
    corrupted = {}
    for scenario in built:
        assert isinstance(scenario, ThirdPartyScenario) and scenario.table is not None
        injected = scenario.table(clean.copy(), scenario.target(contract, seed=1))
        assert list(injected.frame.columns) == list(clean.columns), scenario.name
        removed = 0 if injected.removed is None else int(injected.removed.sum())
        touched = injected.corrupted_cells + injected.rows_added + removed
        assert touched > 0, f"{scenario.name} changed nothing"
        corrupted[scenario.name] = touched
        for column, mask in injected.cells.items():
            was_null = clean[column].isna().to_numpy()
            assert not (mask & was_null).any() or column == "kind", f"{scenario.name} wrote over a null in {column}"
    for name in BADGERS_NAMES:
        if name.endswith("_realistic"):
            assert corrupted[name.replace("_realistic", "_mild")] <= corrupted[name], name


def test_the_same_seed_corrupts_the_same_cells_and_a_scenario_is_found_by_name():
    contract, spec = _pipeline()
    scenario = scenario_named(contract, spec, "badgers_mcar_realistic")
    first = scenario.table(_frame(), scenario.target(contract, seed=3))  # type: ignore[misc]
    again = scenario.table(_frame(), scenario.target(contract, seed=3))  # type: ignore[misc]
    pd.testing.assert_frame_equal(first.frame, again.frame)
    assert scenario.describe()["parameters"] == {"percentage_missing": 0.1}


def test_a_failure_is_named_right_by_any_of_its_kinds_on_any_of_its_columns():
    contract, spec = _pipeline()
    nulls = scenario_named(contract, spec, "badgers_mar_mild")
    assert nulls.localizes(make_finding(K.NULL_SPIKE, URN, "count", observed=0.1, expected=0.0, message="m"))
    assert nulls.localizes(make_finding(K.NULL_LIMIT, URN, "level", observed=0.1, expected=0.0, message="m"))
    assert not nulls.localizes(make_finding(K.DRIFT, URN, "level", observed=1, expected=0, message="m"))
    assert not nulls.localizes(make_finding(K.NULL_SPIKE, URN, "kind", observed=0.1, expected=0.0, message="m"))
    dropped = scenario_named(contract, spec, "badgers_drop_realistic")
    assert dropped.localizes(make_finding(K.VOLUME_DROP, URN, None, observed=1, expected=2, message="m"))


def test_a_batch_the_generator_refuses_is_an_injection_error_not_a_crash():
    from chaos.errors import InjectionError

    contract, spec = _pipeline()
    scenario = scenario_named(contract, spec, "badgers_mnar_realistic")
    flat = _frame(40).assign(level=1.0, count=3)  # no value above the minimum: nothing to weigh rows by
    with pytest.raises(InjectionError, match="cannot corrupt this batch"):
        scenario.table(flat, scenario.target(contract, seed=1))  # type: ignore[misc]
    swapped = scenario_named(contract, spec, "badgers_swap_letters_realistic")
    short = _frame(40).assign(kind="yes")  # no word of four letters: nothing to swap
    with pytest.raises(InjectionError, match="changed nothing"):
        swapped.table(short, swapped.target(contract, seed=1))  # type: ignore[misc]
