"""A table written by pandas with a column set as its index (`set_index("wind")` before `to_parquet`) stores that
column in the file, flagged as the index in pandas' metadata. Read through pandas, it would vanish into the
index: init crashed on it, and a heal would have published the table without it. Every reader takes it as the
column it is (`profiles.snapshot.read_frame`): onboarded, trained on, healed and published with the column intact."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from onboard_support import INIT_AT, RUN_AT, cli, weather

AT = "2013-02-01T06:00:00+00:00"


def test_a_column_stored_as_a_pandas_index_is_onboarded_healed_and_kept(tmp_path):
    ws, data = tmp_path / "ws", tmp_path / "ws" / "data"
    data.mkdir(parents=True)
    weather().set_index("wind").to_parquet(data / "w.parquet")
    january = weather("2013-01-01", "2013-02-01")
    written_in_inches = january.assign(precipitation=january["precipitation"] / 25.4)
    written_in_inches.set_index("wind").to_parquet(tmp_path / "jan.parquet")
    code, out, err = cli(
        "init", "w", "--data", str(data / "w.parquet"), "--target", "temp_max", "--time-column", "date",
        "--unit", "precipitation=mm", "--now", INIT_AT, "--yes", workspace=ws,
    )  # fmt: skip
    assert code == 0, out + err
    code, out, err = cli("run", "w", "--now", RUN_AT, workspace=ws)
    assert code == 0 and "APPROVED v1" in out, out[-600:] + err[-600:]
    assert cli("land", "w", str(tmp_path / "jan.parquet"), "--now", AT, workspace=ws)[0] == 0
    code, out, err = cli("run", "w", "--now", AT, workspace=ws)
    assert code == 0 and "unit_mismatch" in out, out[-800:] + err[-800:]
    published = pq.read_table(data / "w.parquet").to_pandas(ignore_metadata=True).sort_values("date")
    clean = weather("2012-01-01", "2013-02-01")
    assert sorted(published.columns) == sorted(clean.columns)
    assert published["wind"].tolist() == clean["wind"].tolist()
    assert published["precipitation"].round(6).tolist() == clean["precipitation"].round(6).tolist()


def test_the_drill_on_a_table_with_a_stored_index_keeps_the_column_in_its_copies(tmp_path):
    """The drill reads the pipeline's table as the loop does. Read through pandas, the stored index column hid in
    the index and the copies the drill wrote lost it: its clean control blocked on `column_missing` for 'wind'."""
    ws, data = tmp_path / "ws", tmp_path / "ws" / "data"
    data.mkdir(parents=True)
    weather().set_index("wind").to_parquet(data / "w.parquet")
    code, out, err = cli(
        "init", "w", "--data", str(data / "w.parquet"), "--target", "temp_max", "--time-column", "date",
        "--unit", "wind=m/s", "--unit", "precipitation=mm", "--now", INIT_AT, "--yes", workspace=ws,
    )  # fmt: skip
    assert code == 0, out + err
    assert cli("run", "w", "--now", RUN_AT, workspace=ws)[0] == 0
    code, out, err = cli(
        "drill", "--pipeline", "w", "--scenarios", "unit_change", "--scope", "batch", "--controls", "1",
        "--jobs", "1", "--json", workspace=ws,
    )  # fmt: skip
    board = json.loads(out)
    assert code == 0, out[-1500:] + err[-1500:]
    assert [row["name"] for row in board["scenarios"]] == ["unit_change@batch"]
