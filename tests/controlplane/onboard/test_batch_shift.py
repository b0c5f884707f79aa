"""A new batch of hourly data written five hours early (a timezone written as UTC): its first five hours land in the
batch that passed before it, at the very hours of rows that were there, so by time they cannot be told apart. The
kept batch's fingerprint tells them apart (`controlplane.stages.batchshift`): one finding over the new rows and the five
carried ones, healed by shifting exactly those back. Hourly temperatures at Seattle and San Francisco in 2010
(vega_datasets), onboarded with `kintsugi init` as a new user would."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tests.support import whole_cli

from onboard_support import copy_ws

NAME = "pnw-temps"
EARLY = pd.Timedelta(hours=5)
WEEKS = 10  # onboarded; the eleventh is landed


def _weeks() -> tuple[pd.DataFrame, pd.DataFrame]:
    from chaos.corpus.realdata import get_dataset

    frame = get_dataset("pnw_temps").frame()
    start = frame["time"].min()
    cut, end = start + pd.Timedelta(weeks=WEEKS), start + pd.Timedelta(weeks=WEEKS + 1)
    return frame[frame["time"] < cut].reset_index(drop=True), frame[frame["time"].between(cut, end, "left")]


def _iso(moment: pd.Timestamp) -> str:
    return moment.tz_convert("UTC").isoformat()


@pytest.fixture(scope="module")
def onboarded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("hourly") / "ws"
    older, _ = _weeks()
    (ws / "data").mkdir(parents=True)
    older.to_parquet(ws / "data" / "pnw.parquet", index=False)
    at = older["time"].max() + pd.Timedelta(hours=6)
    code, out, err = whole_cli(
        "init", NAME, "--data", str(ws / "data" / "pnw.parquet"), "--target", "seattle_temp", "--time-column",
        "time", "--unit", "sf_temp=degF", "--unit", "seattle_temp=degF", "--now", _iso(at), "--yes",
        "--workspace", str(ws),
    )  # fmt: skip
    assert code == 0, out + err
    code, out, err = whole_cli("run", NAME, "--now", _iso(at + pd.Timedelta(hours=1)), "--workspace", str(ws))
    assert code == 0, out + err
    return ws


def _copy(onboarded: Path, tmp_path: Path) -> Path:
    from controlplane.workspace import Workspace

    return copy_ws(Workspace(onboarded), tmp_path / "ws").root


def _land_and_guard(ws: Path, tmp_path: Path, week: pd.DataFrame, at: str) -> tuple[int, list[dict]]:
    path = tmp_path / "week.parquet"
    week.to_parquet(path, index=False)
    code, out, err = whole_cli("land", NAME, str(path), "--now", at, "--workspace", str(ws))
    assert code == 0, err + out
    code, out, err = whole_cli("guard", NAME, "--now", at, "--json", "--workspace", str(ws))
    assert code in (0, 1), err
    return code, [f for f in json.loads(out)["findings"] if f["severity"] == "block"]


def _table(ws: Path) -> Path:
    return ws / "data" / "pnw.parquet"


def test_a_week_shifted_into_the_one_before_is_pinned_by_its_fingerprint_and_healed(onboarded, tmp_path):
    ws = _copy(onboarded, tmp_path)
    older, week = _weeks()
    at = _iso(week["time"].max() + pd.Timedelta(hours=1))
    code, blocking = _land_and_guard(ws, tmp_path, week.assign(time=week["time"] - EARLY), at)
    assert code == 1 and len(blocking) == 1, [(f["kind"], f["column"], f["message"][:120]) for f in blocking]
    (shift,) = blocking
    assert (shift["kind"], shift["column"], shift["playbook"]) == ("timestamp_shift", "time", "shift_timestamps")
    assert shift["observed"] == {"offset_hours": -5} and "exactly one choice of 5 rows" in shift["message"]
    code, out, err = whole_cli("run", NAME, "--now", at, "--workspace", str(ws))
    assert code == 0, out[-800:] + err[-800:]
    published = pd.read_parquet(_table(ws)).sort_values("time", kind="stable").reset_index(drop=True)
    clean = pd.concat([older, week], ignore_index=True)
    pd.testing.assert_frame_equal(published, clean, check_dtype=False)  # the new rows shifted back, no other


def test_a_week_shifted_later_is_pinned_by_the_gap_every_kept_batch_began_with_and_healed(onboarded, tmp_path):
    """Five hours late, the week carries nothing into the past, and the hour-of-day profile places it within an
    hour only. Every weekly batch that passed began one hour after the one before it ended, and only +5 h starts
    this one there: pinned and healed."""
    ws = _copy(onboarded, tmp_path)
    older, week = _weeks()
    at = _iso(week["time"].max() + EARLY + pd.Timedelta(hours=1))
    code, blocking = _land_and_guard(ws, tmp_path, week.assign(time=week["time"] + EARLY), at)
    assert code == 1 and len(blocking) == 1, [(f["kind"], f["column"], f["message"][:160]) for f in blocking]
    (shift,) = blocking
    assert (shift["kind"], shift["column"], shift["playbook"]) == ("timestamp_shift", "time", "shift_timestamps")
    assert shift["observed"] == {"offset_hours": 5} and "h after the last kept one" in shift["message"]
    code, out, err = whole_cli("run", NAME, "--now", at, "--workspace", str(ws))
    assert code == 0, out[-800:] + err[-800:]
    published = pd.read_parquet(_table(ws)).sort_values("time", kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(published, pd.concat([older, week], ignore_index=True), check_dtype=False)


def test_a_week_shifted_into_a_history_that_also_changed_pins_nothing(onboarded, tmp_path):
    """The same week, and one kept hour's reading rewritten: no choice of rows leaves the batch before as it passed,
    so nothing is pinned, and the run blocks with the table as it was."""
    ws = _copy(onboarded, tmp_path)
    older, week = _weeks()
    table = _table(ws)
    history = pd.read_parquet(table)
    history.loc[history.index[-3], "sf_temp"] += 1.0
    history.to_parquet(table, index=False)
    at = _iso(week["time"].max() + pd.Timedelta(hours=1))
    code, blocking = _land_and_guard(ws, tmp_path, week.assign(time=week["time"] - EARLY), at)
    assert code == 1 and blocking
    assert not any(f["playbook"] == "shift_timestamps" for f in blocking), [f["message"][:150] for f in blocking]
    before = pd.read_parquet(table)
    code, out, err = whole_cli("run", NAME, "--now", at, "--workspace", str(ws))
    assert code != 0, out[-600:]
    pd.testing.assert_frame_equal(pd.read_parquet(table), before)


def test_a_reading_an_hour_too_far_finds_the_same_rows_but_leaves_an_hour_missing(onboarded, tmp_path):
    """Read as -5 h give or take an hour, both -5 and -6 find the same five carried rows; -6 would start the week
    two hours after the last kept row, where the table steps by one. So -5 is pinned, and it is the truth."""
    from controlplane.stages.batchshift import _contiguous, pin_batch_shift
    from controlplane.stages.kept_reference import kept_batches, load_state, new_rows_window
    from controlplane.workspace import Workspace
    from guard.findings import RowSelector, make_finding
    from guard.kinds import FindingKind

    ws = _copy(onboarded, tmp_path)
    _, week = _weeks()
    path = tmp_path / "week.parquet"
    week.assign(time=week["time"] - EARLY).to_parquet(path, index=False)
    at = _iso(week["time"].max() + pd.Timedelta(hours=1))
    assert whole_cli("land", NAME, str(path), "--now", at, "--workspace", str(ws))[0] == 0
    state = load_state(Workspace(ws), NAME)
    assert state is not None
    kept, new_rows = kept_batches(Workspace(ws), NAME, state), new_rows_window(state)
    urn = "urn:li:dataset:(urn:li:dataPlatform:file,pnw,PROD)"
    unpinned = make_finding(
        FindingKind.TIMESTAMP_SHIFT, urn, "time", observed={"offset_hours": -5}, expected={"offset_hours": 0},
        message="within an hour", offset_hours=-5, shifts_hours={"time": -5}, hour_columns={}, pinned=False,
        rows=RowSelector.of_window(new_rows),
    )  # fmt: skip
    changed = make_finding(
        FindingKind.HISTORY_CHANGED, urn, None, observed=1, expected=0, message="changed",
        rows=RowSelector.of_window(kept[-1].window),
    )  # fmt: skip
    (pinned,) = pin_batch_shift((unpinned, changed), _table(ws), kept, new_rows)
    assert pinned.params["offset_hours"] == -5 and pinned.params["pinned_by"] == "kept_batch"
    assert pinned.rows is not None and [row.at_ms for row in pinned.rows.also] == [
        int(t.value // 1_000_000) for t in week["time"].iloc[:5] - EARLY
    ]
    # the reading is taken only because every batch that passed began one hour after the one before it ended
    hour = 3_600_000
    assert _contiguous(kept, "time", hour) and not _contiguous(kept, "time", 2 * hour)
    assert not _contiguous([kept[0], *kept[2:]], "time", hour) and not _contiguous(kept[:2], "time", hour)
