"""guard/checks/nulls.py: a column's null share against the reference's evidence with its sampling error, whatever
the reference's own rate; the contract's limit, and `required: true` without one, mean what they say."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guard.contract import Contract
from guard.kinds import FindingKind as K
from profiles.batches import split_batches

from readings_support import contract, judge, weather, week


def _nulled(frame: pd.DataFrame, column: str, share: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = frame.copy()
    out.loc[rng.random(len(out)) < share, column] = np.nan
    return out


@pytest.fixture(scope="module")
def with_natural_nulls(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, list]:
    """The readings, their wind null on about 28% of every week's rows (a sensor that often reports nothing)."""
    frame = _nulled(weather(), "wind", 0.28, seed=5)
    path = tmp_path_factory.mktemp("nulls") / "weather.parquet"
    frame.to_parquet(path, index=False)
    return frame, split_batches(path, time_column="time", cadence="week")


def _null_kinds(report, column: str) -> set[K]:
    return {f.kind for f in report.blocking if f.column == column and f.kind in (K.NULL_SPIKE, K.NULL_LIMIT)}


def test_nulls_in_a_column_never_null_before_block_at_a_few_percent(tmp_path: Path, table) -> None:
    report = judge(tmp_path, table, _nulled(week(table, 9), "wind", 0.05, seed=1))
    assert _null_kinds(report, "wind") == {K.NULL_SPIKE}, [f.message for f in report.findings]


def test_one_null_among_a_week_of_a_column_never_null_is_within_the_evidence(tmp_path: Path, table) -> None:
    batch = week(table, 9)
    batch.loc[3, "wind"] = np.nan
    report = judge(tmp_path, table, batch)
    assert _null_kinds(report, "wind") == set(), [f.message for f in report.findings]


def test_a_column_with_many_nulls_blocks_when_they_double_and_passes_its_own_rate(
    tmp_path: Path, with_natural_nulls
) -> None:
    clean = judge(tmp_path, with_natural_nulls, week(with_natural_nulls, 9), name="clean")
    assert _null_kinds(clean, "wind") == set(), [f.message for f in clean.findings]
    doubled = _nulled(week(with_natural_nulls, 9), "wind", 0.4, seed=2)  # 28% -> about 57%
    report = judge(tmp_path, with_natural_nulls, doubled, name="doubled")
    assert _null_kinds(report, "wind") == {K.NULL_SPIKE}, [f.message for f in report.findings]
    (spike,) = [f for f in report.blocking if f.kind is K.NULL_SPIKE]
    assert spike.params["chance"] < 0.001 and "rose from 29" in spike.message


def test_required_without_a_null_limit_means_no_null_at_all(tmp_path: Path, table) -> None:
    terms = contract()
    required = Contract(
        terms.dataset_urn,
        tuple(replace(c, required=True) if c.name == "wind" else c for c in terms.columns),
        event_timestamp_column="time",
    )
    batch = week(table, 9)
    batch.loc[3, "wind"] = np.nan
    report = judge(tmp_path, table, batch, terms=required)
    assert _null_kinds(report, "wind") == {K.NULL_LIMIT}
    assert "requires a value" in next(f.message for f in report.blocking if f.kind is K.NULL_LIMIT)


def _nulled_on(frame: pd.DataFrame, rows_by_column: dict[str, list[int]]) -> pd.DataFrame:
    out = frame.copy()
    for column, rows in rows_by_column.items():
        out.loc[rows, column] = np.nan
    return out


def test_a_few_nulls_in_each_of_several_columns_never_null_block_together_and_name_each(tmp_path: Path, table) -> None:
    """Two nulls in a week is within one column's sampling; eight rows with a null across four columns never null
    before is not: each of the four is named."""
    columns = ("temp", "wind", "humidity", "visibility")
    alone = judge(tmp_path, table, _nulled_on(week(table, 9), {"wind": [10, 20]}), name="alone")
    assert _null_kinds(alone, "wind") == set(), [f.message for f in alone.findings]
    spread = {column: [10 + 40 * i, 30 + 40 * i] for i, column in enumerate(columns)}
    report = judge(tmp_path, table, _nulled_on(week(table, 9), spread), name="spread")
    for column in columns:
        assert _null_kinds(report, column) == {K.NULL_SPIKE}, [f.message for f in report.findings]
    spike = next(f for f in report.blocking if f.column == "wind")
    assert spike.params["rows_with_new_nulls"] == 8 and spike.params["chance"] < 0.001
    assert "8 of 168 rows hold a null where none was before" in spike.message


def test_nulls_that_come_a_whole_row_at_a_time_count_once(tmp_path: Path, table) -> None:
    """The same eight null cells on two whole rows: two rows with a null, within the evidence."""
    together = {column: [10, 20] for column in ("temp", "wind", "humidity", "visibility")}
    report = judge(tmp_path, table, _nulled_on(week(table, 9), together))
    assert not [f for f in report.blocking if f.kind in (K.NULL_SPIKE, K.NULL_LIMIT)], [
        f.message for f in report.findings
    ]
