"""Rows a heal set aside stay known to every later check: the next clean batch's run is CLEAN, names nothing in the
batch that passed (its rows set aside are no rewrite of history), and trains without them, with no command in
between. On a table without a key, onboarded with `kintsugi init --yes`, batch after batch."""

from __future__ import annotations

import json

from controlplane.runs.journal import load_run
from controlplane.vocab import Stage

from onboard_support import NAME, UPSTREAM, cli, copy_ws, weather

PLACEHOLDER_AT = "2013-02-01T06:00:00+00:00"
CLEAN_AT = "2013-03-01T06:00:00+00:00"


def _land_and_run(ws, batch, at: str) -> dict:
    assert cli("land", NAME, str(batch), "--now", at, "--upstream", UPSTREAM, workspace=ws.root)[0] == 0
    code, out, err = cli("run", NAME, "--now", at.replace("T06", "T07"), "--json", workspace=ws.root)
    assert code in (0, 1, 3), err
    return json.loads(out)


def test_rows_set_aside_once_are_left_out_of_every_later_training_and_never_read_as_a_rewrite(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    january = weather("2013-01-01", "2013-02-01")
    january.loc[january.index[::5], "wind"] = -1.0  # a placeholder on a fifth of a feature's rows
    placeholders = int((january["wind"] == -1.0).sum())
    january.to_parquet(tmp_path / "january.parquet", index=False)
    first = _land_and_run(ws, tmp_path / "january.parquet", PLACEHOLDER_AT)
    heal = next(e for e in first["events"] if e["stage"] == "heal")
    assert f"{placeholders} row(s) quarantined" in heal["summary"], heal["summary"]
    assert first["status"] != "blocked", first["outcome"]

    weather("2013-02-01", "2013-03-01").to_parquet(tmp_path / "february.parquet", index=False)
    second = _land_and_run(ws, tmp_path / "february.parquet", CLEAN_AT)
    detect = next(e for e in second["events"] if e["stage"] == "detect")
    assert detect["status"] == "CLEAN", detect["summary"]
    assert not detect["evidence"]["findings"], [f["message"] for f in detect["evidence"]["findings"]]
    record = load_run(ws, second["run_id"])
    trained = record.last_event(Stage.TRAIN)
    assert trained is not None and trained.status == "trained", record.outcome
    assert trained.evidence["rows_set_aside"] == placeholders  # still in the table, never learned
    assert second["status"] in ("promoted", "kept", "paused"), second["outcome"]
