"""A table whose time column was rewritten whole, five hours early (a timezone written as UTC): every batch that
passed holds exactly its kept rows five hours earlier, and no row lies outside them. That pins the shift for the
whole table at once (`controlplane.stages.tableshift`), where each batch alone may place it within an hour only, and the
rows the shift carried out of the first batch are explained rather than left in no batch."""

from __future__ import annotations

import json

import pandas as pd

from onboard_support import NAME, UPSTREAM, cli, copy_ws, weather

AT = "2013-02-01T06:00:00+00:00"
EARLY = pd.Timedelta(hours=5)
_PINNED = "batches that passed holds exactly"  # the whole-table finding's message


def _guard(ws, tmp_path, table: pd.DataFrame) -> tuple[int, list[dict]]:
    """January landed (the upstream's load recorded), then the whole table rewritten as `table`; the guard."""
    january = tmp_path / "january.parquet"
    weather("2013-01-01", "2013-02-01").to_parquet(january, index=False)
    code, out, err = cli("land", NAME, str(january), "--now", AT, "--upstream", UPSTREAM, workspace=ws.root)
    assert code == 0, err + out
    table.to_parquet(ws.root / "data" / "seattle-weather.parquet", index=False)
    code, out, err = cli("guard", NAME, "--now", AT, "--json", workspace=ws.root)
    assert code in (0, 1), err
    found = json.loads(out)["findings"]
    return code, [f for f in found if f["severity"] == "block" and not f["kind"].startswith("upstream_")]


def test_a_table_shifted_whole_is_one_pinned_shift_over_every_row(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    table = weather("2012-01-01", "2013-02-01")
    code, blocking = _guard(ws, tmp_path, table.assign(date=table["date"] - EARLY))
    assert code == 1 and len(blocking) == 1, [(f["kind"], f["column"], f["message"][:90]) for f in blocking]
    (shift,) = blocking
    assert (shift["kind"], shift["column"], shift["playbook"]) == ("timestamp_shift", "date", "shift_timestamps")
    assert shift["observed"] == {"offset_hours": -5} and "each of the 12 batches that passed" in shift["message"]
    code, out, err = cli("run", NAME, "--now", AT, workspace=ws.root)
    assert code == 0, out[-600:] + err[-600:]
    published = pd.read_parquet(ws.root / "data" / "seattle-weather.parquet")
    pd.testing.assert_frame_equal(published, table, check_dtype=False)  # every row shifted back, exactly


def test_history_shifted_without_the_new_rows_is_not_taken_for_a_whole_table(onboarded, tmp_path):
    """The new rows arrived as they should: shifting every row back would move them, so nothing is pinned whole
    and each kept batch blocks on its own."""
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    history, january = weather("2012-01-01", "2013-01-01"), weather("2013-01-01", "2013-02-01")
    table = pd.concat([history.assign(date=history["date"] - EARLY), january], ignore_index=True)
    code, blocking = _guard(ws, tmp_path, table)
    assert code == 1 and blocking
    assert not any(_PINNED in f["message"] for f in blocking), [f["message"][:150] for f in blocking]


def test_a_shifted_table_with_one_value_rewritten_pins_nothing(onboarded, tmp_path):
    """Shifted whole, and one June day's temp_max rewritten too: every row lies in a window moved by five hours,
    but June's no longer holds exactly the rows that passed, so the shift is not taken as the table's alone."""
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    table = weather("2012-01-01", "2013-02-01")
    table.loc[table["date"].eq("2012-06-15"), "temp_max"] += 1.0
    code, blocking = _guard(ws, tmp_path, table.assign(date=table["date"] - EARLY))
    assert code == 1 and blocking
    assert not any(_PINNED in f["message"] for f in blocking), [f["message"][:150] for f in blocking]


def test_every_finding_on_rows_that_passed_is_the_pinned_shift_of_the_whole_table(onboarded, tmp_path):
    """A kept batch of broad hours may see no shift in its own rows, and say only that they changed in a way no check
    names: once every kept batch holds exactly its kept rows moved back, that is the shift too, and leaves no block."""
    from controlplane.stages.kept_reference import kept_batches, load_state, new_rows_window
    from controlplane.stages.tableshift import pin_table_shift
    from controlplane.workspace import Workspace
    from guard.findings import RowSelector, make_finding
    from guard.kinds import FindingKind

    ws = copy_ws(onboarded[0], tmp_path / "ws")
    table = weather("2012-01-01", "2013-02-01")
    _guard(ws, tmp_path, table.assign(date=table["date"] - EARLY))
    state = load_state(Workspace(ws.root), NAME)
    assert state is not None
    kept, new_rows = kept_batches(Workspace(ws.root), NAME, state), new_rows_window(state)
    urn = "urn:li:dataset:(urn:li:dataPlatform:file,weather,PROD)"
    unpinned = make_finding(
        FindingKind.TIMESTAMP_SHIFT, urn, "date", observed={"offset_hours": -5}, expected={"offset_hours": 0},
        message="within an hour", offset_hours=-5, shifts_hours={"date": -5}, hour_columns={}, pinned=False,
        rows=RowSelector.of_window(new_rows),
    )  # fmt: skip
    changed = [
        make_finding(
            FindingKind.HISTORY_CHANGED,
            urn,
            None,
            observed=1,
            expected=1,
            message=f"batch {b.batch_id} changed",
            batch=b.batch_id,
            rows=RowSelector.of_window(b.window),
        )  # fmt: skip
        for b in (kept[0], kept[5])
        if b.window is not None
    ]
    (pinned,) = pin_table_shift((unpinned, *changed), ws.root / "data" / "seattle-weather.parquet", kept, new_rows)
    assert (pinned.params["offset_hours"], pinned.params["pinned_by"]) == (-5, "kept_batches")
