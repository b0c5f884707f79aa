"""guard/runner.py: the whole guard over clean batches raises nothing, fails closed on an empty row sample, and groups
thousands of findings of one kind into one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guard.findings import GuardReport, Verdict
from guard.kinds import FindingKind, Severity
from guard.kinds import FindingKind as K
from guard.policy import DEFAULT
from guard.runner import MAX_FINDINGS_PER_KIND, run_guard
from profiles.profile import DatasetProfile

import deliveries_support
from deliveries_support import context, eta_frame, snapshot_of
from readings_support import blocking, judge, week
from real_cases import RealCase, guarded_on


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> DatasetProfile:
    return deliveries_support.reference(tmp_path_factory)


def test_an_empty_row_sample_blocks_instead_of_passing(tmp_path: Path, reference: DatasetProfile) -> None:
    snapshot = snapshot_of(tmp_path, eta_frame(1))
    unsampled = dataclasses.replace(snapshot, sample=snapshot.sample.head(0))  # as a too-small sample rounds to
    report = run_guard(context(unsampled, reference))
    errors = [f for f in report.blocking if f.kind is FindingKind.CHECK_ERROR]
    assert sorted(f.check for f in errors) == ["drift", "leakage"]
    assert all("empty row sample" in f.message for f in errors)


@pytest.mark.parametrize("rain", ["exponential", "zero_inflated"])
def test_clean_resamples_raise_no_finding_at_all(tmp_path: Path, rain: str) -> None:
    reference = snapshot_of(tmp_path, eta_frame(0, rain=rain), "reference").profile
    for seed in range(1, 21):
        snapshot = snapshot_of(tmp_path, eta_frame(seed, rain=rain), f"seed{seed}")
        report = run_guard(context(snapshot, reference))
        assert report.findings == (), (seed, [f.to_dict() for f in report.findings])
        assert {o.check for o in report.outcomes} >= {"volume", "duplicates", "domain", "drift", "leakage"}


def test_clean_batches_of_a_drifting_level_pass(tmp_path, table):
    for index in (8, 9):
        report = judge(tmp_path, table, week(table, index))
        assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]


def test_each_column_checked_against_its_own_reference_is_clean(tmp_path, table):
    frame, _ = table
    own = frame[frame.time < pd.Timestamp("2021-03-01", tz="UTC")]
    report = judge(tmp_path, table, own)
    assert report.verdict is Verdict.CLEAN and not {f.column for f in report.findings} & {"rain", "visibility"}, [
        f.message for f in report.findings
    ]


def test_thousands_of_unexpected_columns_give_one_grouped_finding(tmp_path, table):
    batch = week(table, 9)
    wide = pd.concat([batch, pd.DataFrame({f"extra_{i}": np.zeros(len(batch)) for i in range(300)})], axis=1)
    report = judge(tmp_path, table, wide)
    unexpected = [f for f in report.findings if f.kind is K.COLUMN_UNEXPECTED]
    assert len(unexpected) == 1 and unexpected[0].column is None and unexpected[0].observed["count"] == 300
    assert len(unexpected[0].observed["columns"]) <= MAX_FINDINGS_PER_KIND and unexpected[0].severity is Severity.WARN
    few = judge(tmp_path, table, batch.assign(extra=1.0))  # a column the contract does not name is never read
    assert (K.COLUMN_UNEXPECTED.value, "extra") not in blocking(few)
    assert [(f.column, f.severity) for f in few.findings if f.kind is K.COLUMN_UNEXPECTED] == [("extra", Severity.WARN)]


def test_a_clean_batch_records_how_near_each_deciding_threshold_came(
    tmp_path: Path, daily_newest_month: RealCase
) -> None:
    report = guarded_on(tmp_path, daily_newest_month, daily_newest_month.frame)
    assert report.verdict is Verdict.CLEAN, [f.message for f in report.findings]
    calls = report.closest_calls
    assert {c.threshold for c in calls} >= {
        "unexplained",
        "far",
        "volume_min_row_fraction",
        "volume_spike_factor",
        "null_spike_min_increase",
        "null_false_alarm",
        "duplicate_rate_limit",
    }
    with_unit = {c.name for c in daily_newest_month.dataset.contract().columns if c.unit is not None}
    assert {c.column for c in calls if c.threshold == "far"} == with_unit and with_unit
    assert all(c.limit == getattr(DEFAULT, c.threshold) and c.check for c in calls)
    assert not [c for c in calls if c.decides and c.crossed]  # a clean batch: nothing that decides was crossed
    assert [c.closeness for c in calls] == sorted((c.closeness for c in calls), reverse=True)
    assert GuardReport.from_dict(report.to_dict()).closest_calls == calls


def test_the_call_a_failing_batch_crossed_is_the_one_that_blocked_it(
    tmp_path: Path, daily_newest_month: RealCase
) -> None:
    frame = daily_newest_month.frame
    report = guarded_on(tmp_path, daily_newest_month, frame.iloc[::4])  # a partial load: one day in four
    assert [f.kind for f in report.blocking] == [FindingKind.VOLUME_DROP]
    crossed = [(c.check, c.threshold) for c in report.closest_calls if c.decides and c.crossed]
    assert crossed == [("volume", "volume_grid_slack_rows")]  # a day a row, every kept month: a full grid


def test_a_report_keeps_per_column_the_deciding_call_furthest_toward_its_limit_and_one_nearest_call_that_decides_nothing():
    from guard.findings import ClosestCall
    from guard.runner import kept_calls

    def call(column: str, statistic: float, decides: bool = True, above: bool = True) -> ClosestCall:
        return ClosestCall("sentinel_min_share", column, statistic, 0.1, above, decides, check="sentinels")

    kept = kept_calls(
        [
            call("a", 0.02),
            call("a", 0.07),  # a's deciding edge: any limit a's other values cross, this crosses first
            call("a", 0.05),
            call("b", 0.2),  # b's, across the limit
            call("c", 0.03, decides=False),
            call("d", 0.09, decides=False),  # the nearest that decides nothing, whatever its column
            ClosestCall("far", "a", 1.5, 2.0, check="units"),  # another check's threshold stands apart
        ]
    )
    assert sorted((c.check, c.column, c.statistic, c.decides) for c in kept) == [
        ("sentinels", "a", 0.07, True),
        ("sentinels", "b", 0.2, True),
        ("sentinels", "d", 0.09, False),
        ("units", "a", 1.5, True),
    ]
    below = kept_calls([call("a", 0.3, above=False), call("a", 0.12, above=False), call("a", 0.2, above=False)])
    assert [c.statistic for c in below] == [0.12]  # a limit crossed from above: the lowest goes furthest
