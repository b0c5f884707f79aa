"""Repair accuracy, collateral damage, impact arithmetic and the sweep summary, on small hand-made tables."""

from __future__ import annotations

import numpy as np
import pandas as pd

from chaos.drill.impact import recovery_ratio, relative_change
from chaos.drill.repair import repair_scores
from chaos.drill.scoreboard import _sweep, stat, strip_timings
from chaos.failures.registry import Injected

CLEAN = pd.DataFrame(
    {
        "id": ["a", "b", "c", "d"],
        "x": [1.0, 2.0, 3.0, 4.0],
        "k": ["u", "v", "u", "v"],
        "t": pd.to_datetime(["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04"], utc=True),
    }
)


def _hit(*rows: int) -> np.ndarray:
    mask = np.zeros(len(CLEAN), dtype=bool)
    mask[list(rows)] = True
    return mask


def test_a_perfect_heal_repairs_everything_and_touches_nothing_else():
    injected = Injected(CLEAN.assign(x=CLEAN["x"] * 1000), {"x": _hit(0, 1, 2, 3)})
    healed = CLEAN.assign(x=CLEAN["x"] * 1000 / 1000)
    scores = repair_scores(CLEAN, healed, injected, "id")
    assert (scores.accuracy, scores.collateral, scores.rows_dropped_share) == (1.0, 0.0, 0.0)


def test_imputation_is_not_a_repair_and_collateral_counts_other_cells():
    injected = Injected(CLEAN.assign(x=[np.nan, 2.0, 3.0, 4.0]), {"x": _hit(0)})
    healed = CLEAN.assign(x=[2.5, 2.0, 3.0, 4.0], k=["u", "v", "U", "v"])
    scores = repair_scores(CLEAN, healed, injected, "id")
    assert scores.accuracy == 0.0
    assert scores.changed == 1 and scores.clean_cells == 4 * 3 - 1


def test_dropped_duplicates_are_repaired_and_dropped_rows_are_counted():
    duplicated = pd.concat([CLEAN, CLEAN.iloc[[1, 2]]], ignore_index=True)
    injected = Injected(duplicated, {}, rows_added=2)
    assert repair_scores(CLEAN, CLEAN, injected, "id").accuracy == 1.0
    assert repair_scores(CLEAN, duplicated, injected, "id").accuracy == 0.0
    lost = repair_scores(CLEAN, CLEAN.iloc[:3], injected, "id")
    assert lost.rows_dropped == 1 and lost.accuracy == 1.0


def test_text_where_a_number_was_is_never_equal():
    injected = Injected(CLEAN.assign(x=CLEAN["x"].map(repr)), {"x": _hit(0, 1, 2, 3)})
    assert repair_scores(CLEAN, injected.frame, injected, "id").accuracy == 0.0


def test_impact_and_recovery():
    assert relative_change(3.0, 2.0) == 0.5 and relative_change(0.8, 0.9, "max") > 0
    assert recovery_ratio(poisoned=4.0, healed=2.0, clean=2.0) == 1.0
    assert recovery_ratio(poisoned=4.0, healed=3.0, clean=2.0) == 0.5
    assert recovery_ratio(poisoned=2.01, healed=2.0, clean=2.0) is None  # nothing to recover


def test_sweep_finds_the_threshold_and_the_harmful_misses_below_it():
    points = [
        {"magnitude": m, "detected": d, "localized": d, "findings": [], "impact": i, "harmful": i > 0.02}
        for m, d, i in ((0.1, False, 0.01), (0.2, False, 0.05), (0.5, True, 0.3), (1.0, True, 0.9))
    ]
    summary = _sweep((0.1, 0.2, 0.5, 1.0), [{"seed": 1, "points": points}])
    assert summary["smallest_detected"] == 0.5
    assert summary["harmful_misses"] == 1 and summary["harmful_below_threshold"] == [0.2]


def test_stat_and_timings():
    assert stat([1.0, None, 3.0]) == {"mean": 2.0, "spread": 1.0, "n": 2}
    assert stat([None]) is None
    assert strip_timings({"a": 1, "seconds": 2, "b": [{"seconds_to_promoted": 3, "c": 4}], "timings": {}}) == {
        "a": 1,
        "b": [{"c": 4}],
    }


def test_a_duplicate_of_a_key_of_several_columns_is_named_by_the_whole_key():
    from chaos.failures.registry import Scenario
    from guard.findings import make_finding
    from guard.kinds import FindingKind

    scenario = Scenario(
        "duplicate_keys", "loaded twice", FindingKind.DUPLICATE_KEYS, ("entity", "period"), True, 0.025, "share"
    )

    def duplicates(keys: list[str]):
        return make_finding(
            FindingKind.DUPLICATE_KEYS, "urn:t", None, observed=0.1, expected=0.001, message="m", key_columns=keys
        )

    assert scenario.localizes(duplicates(["entity", "period"]))
    assert not scenario.localizes(duplicates(["entity"]))
