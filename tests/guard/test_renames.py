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
from profiles.batches import split_batches
from profiles.profile import TimeWindow
from profiles.reference import build_reference
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


PANEL = Contract(
    URN,
    (
        ColumnContract("period", "timestamp", primary_key=True),
        ColumnContract("entity", "string", primary_key=True),
        ColumnContract("level", "number"),
    ),
    event_timestamp_column="period",
)

# the share of entities without a level in each period: some in every clean period, more in the newest
LEVEL_NULLS = (0.0, 0.01, 0.02, 0.02, 0.03, 0.05, 0.09)


def _periods(entities: int = 100, seed: int = 3) -> pd.DataFrame:
    """One row per entity and period, every row of a period stamped with its first instant; `level` empty for
    LEVEL_NULLS of the entities of each period."""
    rng = np.random.default_rng(seed)
    frames = []
    for i, share in enumerate(LEVEL_NULLS):
        level = rng.normal(50 + i, 5, entities).round(2)
        level[rng.permutation(entities)[: round(share * entities)]] = np.nan
        period = pd.Timestamp(f"{2001 + i}-01-01", tz="UTC")
        frames.append(
            pd.DataFrame({"period": period, "entity": [f"e{j:02d}" for j in range(entities)], "level": level})
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    return frame


def _newest_renamed(tmp_path: Path, frame: pd.DataFrame, renamed: pd.Series):
    """`frame`'s newest period arrives with `renamed` under `level_v2` and `level` empty, appended to the clean
    older periods (the reference): the table, and the guard's context and report of the newest period."""
    newest = frame["period"] == frame["period"].max()
    frame[~newest].to_parquet(tmp_path / "older.parquet", index=False)
    kept = split_batches(tmp_path / "older.parquet", time_column="period", cadence="month")
    reference = build_reference([s.batch for s in kept])  # type: ignore[misc]
    table = frame.assign(level_v2=renamed.where(newest), level=frame["level"].where(~newest))
    table.to_parquet(tmp_path / "table.parquet", index=False)
    watermark = int(frame.loc[~newest, "period"].max().timestamp() * 1000)
    window = TimeWindow(column="period", after_ms=watermark)
    batch = read_snapshot(tmp_path / "table.parquet", window=window, batch_id="newest")
    context = with_repeats_counted(GuardContext(URN, PANEL, batch, reference, (), now_ms=watermark + 400 * 86_400_000))
    return table, context, run_guard(context)


def test_a_batch_rename_leaves_the_columns_natural_nulls_empty_under_both_names(tmp_path):
    """The newest period renames `level`; its entities without a level (more than the merged reference's share,
    fewer than the highest share a clean period reaches with its step and sampling error) stay empty under
    both names. The rows neither column fills are the column's natural nulls, not rows the rename lost."""
    frame = _periods()
    table, context, report = _newest_renamed(tmp_path, frame, frame["level"])
    renamed = [f for f in report.findings if f.kind is FindingKind.COLUMN_RENAMED]
    assert [(f.column, f.params["mapping"], f.params["merge"]) for f in renamed] == [
        ("level", {"level_v2": "level"}, True)
    ]
    assert not [f for f in report.blocking if f.kind is not FindingKind.COLUMN_RENAMED]
    healed, step = rename_columns(HealInput(table, renamed[0], PANEL, context.reference))
    assert "level_v2" not in healed and step.rows_touched == 91
    assert healed["level"].isna().sum() == frame["level"].isna().sum()


def test_a_batch_rename_that_leaves_more_rows_empty_than_the_columns_nulls_is_not_read_as_one(tmp_path):
    """The new column holds values in only 60 of the 100 rows `level` lost: 40% empty under both names is beyond
    any share a clean period reaches, so the merge would not bring the null share back inside; the nulls block
    unexplained."""
    frame = _periods()
    newest = frame["period"] == frame["period"].max()
    part = frame["level"].where(~newest | (frame["entity"] < "e60"))
    _, _, report = _newest_renamed(tmp_path, frame, part)
    assert not [f for f in report.findings if f.kind is FindingKind.COLUMN_RENAMED]
    assert (FindingKind.NULL_SPIKE, "level") in {(f.kind, f.column) for f in report.blocking}


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
