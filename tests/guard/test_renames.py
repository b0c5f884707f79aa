"""guard/renames.py: a column renamed by a batch or by a whole table is paired with the contracted name by the values
it carries (COLUMN_RENAMED), merged back by the playbook, and never read into an unrelated new column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind
from guard.runner import run_guard
from profiles.snapshot import read_snapshot
from remediations.playbooks.rename_columns import rename_columns
from remediations.registry import HealInput, PlaybookRefused

from real_cases import RealCase, blocking_on

URN = "urn:li:dataset:(urn:li:dataPlatform:file,t,PROD)"

CONTRACT = Contract(
    URN,
    (
        ColumnContract("at", "timestamp"),
        ColumnContract("wind", "number", unit=None, max_null_fraction=0.01),
        ColumnContract("y", "number"),
    ),
    label_column="y",
    event_timestamp_column="at",
)


def _frame(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "at": pd.date_range("2024-01-01", periods=rows, freq="D"),
            "wind": rng.gamma(4, 0.8, rows),
            "y": rng.normal(10, 2, rows),
        }
    )


def _guard(tmp_path, table: pd.DataFrame, reference: pd.DataFrame):
    reference.to_parquet(tmp_path / "ref.parquet", index=False)
    table.to_parquet(tmp_path / "now.parquet", index=False)
    context = with_repeats_counted(
        GuardContext(
            URN,
            CONTRACT,
            read_snapshot(tmp_path / "now.parquet"),
            read_snapshot(tmp_path / "ref.parquet").profile,
            (),
            0,
        )
    )
    return run_guard(context), context


def test_a_column_renamed_by_a_batch_is_found_and_merged_back(tmp_path):
    older = _frame(300, 1)
    batch = _frame(30, 2).rename(columns={"wind": "wind_speed"})
    table = pd.concat([older, batch], ignore_index=True)
    report, context = _guard(tmp_path, table, older)
    renamed = [f for f in report.findings if f.kind is FindingKind.COLUMN_RENAMED]
    assert len(renamed) == 1 and renamed[0].params["mapping"] == {"wind_speed": "wind"} and renamed[0].params["merge"]
    assert not [f for f in report.findings if f.kind is FindingKind.COLUMN_UNEXPECTED]
    healed, step = rename_columns(HealInput(table, renamed[0], CONTRACT, context.reference))
    assert list(healed.columns) == ["at", "wind", "y"] and healed["wind"].notna().all()
    assert step.rows_touched == 30 and healed["wind"].iloc[300:].tolist() == batch["wind_speed"].tolist()


def test_an_unrelated_new_column_is_not_a_rename(tmp_path):
    older = _frame(300, 1)
    batch = _frame(30, 2).assign(wind=np.nan, gust=lambda f: f["y"] * 100)  # values where wind lost them, but
    report, _ = _guard(tmp_path, pd.concat([older, batch], ignore_index=True), older)  # nothing like a wind
    assert not [f for f in report.findings if f.kind is FindingKind.COLUMN_RENAMED]
    assert [f.column for f in report.findings if f.kind is FindingKind.COLUMN_UNEXPECTED] == ["gust"]


def test_the_merge_refuses_when_a_row_holds_both(tmp_path):
    older = _frame(300, 1)
    table = pd.concat([older, _frame(30, 2).rename(columns={"wind": "wind_speed"})], ignore_index=True)
    report, context = _guard(tmp_path, table, older)
    finding = next(f for f in report.findings if f.kind is FindingKind.COLUMN_RENAMED)
    table.loc[0, "wind_speed"] = 3.0
    with pytest.raises(PlaybookRefused, match="1 rows hold both"):
        rename_columns(HealInput(table, finding, CONTRACT, context.reference))


def test_a_whole_table_renamed_is_paired_by_the_reference_period_it_holds(
    tmp_path: Path, hourly_whole_table: RealCase
) -> None:
    frame = hourly_whole_table.frame.rename(columns={"temp_air": "air_temp", "temp_dew": "dew_point"})
    blocking = blocking_on(tmp_path, hourly_whole_table, frame)
    assert {(FindingKind.COLUMN_RENAMED, "temp_air"), (FindingKind.COLUMN_RENAMED, "temp_dew")} <= blocking
    assert not {kind for kind, _ in blocking} & {FindingKind.COLUMN_MISSING, FindingKind.COLUMN_UNEXPECTED}


def test_a_new_column_with_another_columns_values_is_not_read_as_the_missing_one(
    tmp_path: Path, hourly_whole_table: RealCase
) -> None:
    """temp_dew dropped and a new column holding the air temperature: over the reference's weeks its values
    are not the dew point's, so it is a column gone and a column new, not a rename."""
    table = hourly_whole_table.frame
    frame = table.drop(columns=["temp_dew", "relative_humidity"]).assign(
        dew_v2=table["temp_air"], humidity_v2=table["pressure"]
    )
    blocking = blocking_on(tmp_path, hourly_whole_table, frame)
    assert (FindingKind.COLUMN_MISSING, "temp_dew") in blocking
    assert not any(kind is FindingKind.COLUMN_RENAMED for kind, _ in blocking)
