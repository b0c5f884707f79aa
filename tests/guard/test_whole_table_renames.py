"""A whole table renamed, history included: a year of hourly weather is not distributed as the few weeks the
reference keeps, but those weeks are in the table, and there the new names carry what the old ones held."""

from __future__ import annotations

from pathlib import Path

from guard.kinds import FindingKind

from real_cases import RealCase, blocking_on


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
