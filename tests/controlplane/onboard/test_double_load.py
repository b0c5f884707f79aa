"""A batch loaded twice into a table with no key: every row of it repeated whole. Seattle's table holds one row
per day, so by its history two rows of one day are not its nature and two identical ones are one row twice
(`guard.checks.duplicates._repeated_rows`): the run drops the later copies and publishes the clean table. Two
different readings of one day are no double load and are not deduplicated."""

from __future__ import annotations

import json

import pandas as pd

from onboard_support import NAME, UPSTREAM, cli, copy_ws, weather

AT = "2013-02-01T06:00:00+00:00"


def _land_and_guard(ws, tmp_path, frame: pd.DataFrame) -> tuple[int, list[dict]]:
    batch = tmp_path / "batch.parquet"
    frame.to_parquet(batch, index=False)
    code, out, err = cli("land", NAME, str(batch), "--now", AT, "--upstream", UPSTREAM, workspace=ws.root)
    assert code == 0, err + out
    code, out, err = cli("guard", NAME, "--now", AT, "--json", workspace=ws.root)
    assert code in (0, 1), err
    return code, [f for f in json.loads(out)["findings"] if f["kind"] == "duplicate_keys"]


def test_a_month_landed_twice_is_named_and_its_copies_dropped(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    january = weather("2013-01-01", "2013-02-01")
    code, found = _land_and_guard(ws, tmp_path, pd.concat([january, january], ignore_index=True))
    assert code == 1 and len(found) == 1, found
    (twice,) = found
    assert (twice["column"], twice["severity"], twice["playbook"]) == ("date", "block", "dedupe_keys")
    assert twice["observed"] == 0.5 and f"({len(january)} of {2 * len(january)})" in twice["message"], twice
    code, out, err = cli("run", NAME, "--now", AT, workspace=ws.root)
    assert code == 0, out[-800:] + err[-800:]
    published = pd.read_parquet(ws.root / "data" / "seattle-weather.parquet").sort_values("date", kind="stable")
    clean = weather("2012-01-01", "2013-02-01")
    pd.testing.assert_frame_equal(published.reset_index(drop=True), clean, check_dtype=False)


def test_two_readings_of_one_day_are_not_a_double_load(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    january = weather("2013-01-01", "2013-02-01")
    again = january.head(3).assign(wind=january["wind"].head(3) + 1.0)
    _, found = _land_and_guard(ws, tmp_path, pd.concat([january, again], ignore_index=True))
    assert found == []
