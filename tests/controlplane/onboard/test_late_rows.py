"""Rows that land dated at or before the watermark, outside every batch the guard passed (or with no time at all),
are in no window the guard reads: the new-rows window starts after the watermark and the history check compares
the kept batches. They are counted in the history pass and block the run, never trained on unseen."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from onboard_support import NAME, UPSTREAM, cli, copy_ws, weather

AT = "2013-02-01T06:00:00+00:00"


def _guard(ws) -> tuple[int, dict]:
    code, out, err = cli("guard", NAME, "--now", AT, "--json", workspace=ws.root)
    assert code in (0, 1), err
    return code, json.loads(out)


def _unguarded(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["kind"] == "history_changed" and "no check has seen" in f["message"]]


def _land(ws, tmp_path, frame: pd.DataFrame) -> None:
    batch = tmp_path / "batch.parquet"
    frame.to_parquet(batch, index=False)
    code, out, err = cli("land", NAME, str(batch), "--now", AT, "--upstream", UPSTREAM, workspace=ws.root)
    assert code == 0, err + out


def test_a_clean_batch_after_the_watermark_leaves_no_row_unguarded(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    _land(ws, tmp_path, weather("2013-01-01", "2013-02-01"))
    code, report = _guard(ws)
    assert code == 0 and _unguarded(report) == [], report["findings"]


@pytest.mark.parametrize(
    "late",
    [
        pytest.param(lambda rows: rows.assign(date=rows["date"] - pd.Timedelta(days=400)), id="dated-before-history"),
        pytest.param(lambda rows: rows.assign(date=pd.NaT), id="no-time"),
    ],
)
def test_rows_in_no_kept_batch_block_the_run_and_are_counted(onboarded, tmp_path, late):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    january = weather("2013-01-01", "2013-02-01")
    stray = late(january.head(5).copy())
    _land(ws, tmp_path, pd.concat([january, stray], ignore_index=True))
    code, report = _guard(ws)
    found = _unguarded(report)
    assert code == 1 and report["verdict"] == "BLOCKED"
    assert len(found) == 1 and found[0]["severity"] == "block" and found[0]["observed"] == 5, found
