"""guard.findings' closest calls: a rule's call decides where every other condition of the rule held, a threshold
moved just across a statistic is across it, and on a real batch every rule in play records its thresholds, a clean
batch crossing none that decides, a failure crossing the one of the rule that blocked it."""

from __future__ import annotations

from pathlib import Path

import pytest

from guard.findings import Condition, Verdict, moved_across, rule_calls
from guard.policy import DEFAULT

from real_cases import RealCase, guarded_on


def test_a_rule_call_decides_where_every_other_condition_of_the_rule_held() -> None:
    short = Condition("a", 0.5, 1.0, holds=False)  # one condition short of its limit, the other across
    across = Condition("b", 3.0, 2.0, holds=True)
    assert [(c.threshold, c.decides) for c in rule_calls("x", short, across)] == [("a", True), ("b", False)]
    assert not any(c.decides for c in rule_calls("x", short, across, when=False))  # the rule's own gate failed
    below = rule_calls(None, Condition("c", 0.1, 0.3, holds=True, above=False))[0]
    assert below.crossed and below.decides and below.column is None


def test_a_threshold_moved_across_a_statistic_is_just_across_it() -> None:
    moved = moved_across(DEFAULT, "swap_self_distance", 0.2, above=True)
    assert 0.2 - 1e-12 < moved.swap_self_distance < 0.2
    assert moved.swap_cross_ratio == DEFAULT.swap_cross_ratio  # the others as shipped
    ends = moved_across(DEFAULT, "swap_gap_ratio", 3.0, above=False, index=1)
    assert ends.swap_gap_ratio[0] == DEFAULT.swap_gap_ratio[0] and 3.0 < ends.swap_gap_ratio[1] < 3.0 + 1e-12


def test_a_clean_batch_records_every_rule_in_play_and_crosses_none_that_decides(
    tmp_path: Path, daily_newest_month: RealCase
) -> None:
    report = guarded_on(tmp_path, daily_newest_month, daily_newest_month.frame)
    assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]
    thresholds = {c.threshold for c in report.closest_calls}
    assert thresholds >= {
        "swap_self_distance",  # two temperatures, a wind and a precipitation: pairs of numbers
        "swap_order_held",  # the daily minimum under the maximum
        "swap_profile_apart",
        "sentinel_min_rows",  # the zeros of precipitation
        "frozen_share",
        "relation_min_broken",
        "min_grid_values",  # values on a decimal grid
        "multi_batch_cadences",
        "plausible_horizons",
    }
    for call in report.closest_calls:
        field, _, index = call.threshold.partition("[")
        shipped = getattr(DEFAULT, field)
        assert call.limit == (shipped[int(index.rstrip("]"))] if index else shipped), call
    assert not [c for c in report.closest_calls if c.decides and c.crossed]


@pytest.mark.parametrize(
    ("failure", "crossed"),
    [
        ("swapped", ("columns_swapped", "whole_swap")),  # every row: the order the reference held, broken on all
        ("placeholder", ("sentinels", "sentinel_one_code")),  # -1 for wind: outside its bounds, one code
    ],
)
def test_a_failure_crosses_the_call_of_the_rule_that_blocked_it(
    tmp_path: Path, daily_newest_month: RealCase, failure: str, crossed: tuple[str, str]
) -> None:
    frame = daily_newest_month.frame
    if failure == "swapped":
        frame = frame.assign(temp_max=frame["temp_min"], temp_min=frame["temp_max"])
    else:
        frame = frame.assign(wind=frame["wind"].mask(frame.index % 3 == 0, -1.0))
    report = guarded_on(tmp_path, daily_newest_month, frame)
    assert report.verdict is Verdict.BLOCKED
    assert crossed in {(c.check, c.threshold) for c in report.closest_calls if c.decides and c.crossed}
