"""A table rewritten under the guard's kept history: each batch that passed is judged against its own kept profile,
the same rows. A broken join that empties a quarter of the values is a null finding and nothing else (the values
left are a subset of the same rows, not a rescale); every value converted to inches is named as inches in every
month, the rainy and the nearly dry."""

from __future__ import annotations

import json

import numpy as np

from onboard_support import NAME, cli, copy_ws, weather

AT = "2013-01-01T08:00:00+00:00"


def _history(ws, table) -> tuple[int, list[dict]]:
    table.to_parquet(ws.root / "data" / "seattle-weather.parquet", index=False)
    code, out, err = cli("guard", NAME, "--now", AT, "--json", workspace=ws.root)
    assert code in (0, 1), err
    return code, [f for f in json.loads(out)["findings"] if "passed earlier" in f["message"]]


def test_a_broken_join_over_the_history_is_nulls_not_rescales(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    table = weather()
    lost = np.random.default_rng(3).random(len(table)) < 0.25
    table.loc[lost, ["precipitation", "wind", "temp_min"]] = np.nan
    code, found = _history(ws, table)
    blocking = {(f["kind"], f["column"]) for f in found if f["severity"] == "block"}
    assert code == 1 and blocking and {kind for kind, _ in blocking} <= {"null_limit", "null_spike"}, blocking


def test_every_month_rewritten_in_inches_is_named_inches(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    table = weather()
    code, found = _history(ws, table.assign(precipitation=table["precipitation"] / 25.4))
    blocking = [f for f in found if f["severity"] == "block"]
    assert code == 1 and blocking
    assert all(f["kind"] == "unit_mismatch" and f["observed"]["unit"] == "inch" for f in blocking), [
        (f["kind"], f["column"], f["message"][:80]) for f in blocking
    ]
