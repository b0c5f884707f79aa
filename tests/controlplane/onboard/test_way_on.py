"""A run blocked only by a finding no playbook heals says, in one line, the command that moves on, and that command
works: here a stale upstream (nothing can heal a feed that did not arrive), accepted as the new normal."""

from __future__ import annotations

import json
import re

from onboard_support import NAME, cli, copy_ws, weather

LANDED_AT, RUN_AT = "2013-02-01T06:00:00+00:00", "2013-02-01T07:00:00+00:00"


def test_a_block_no_playbook_heals_names_the_one_command_that_moves_on_and_it_does(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    weather("2013-01-01", "2013-02-01").to_parquet(tmp_path / "january.parquet", index=False)
    assert cli("land", NAME, str(tmp_path / "january.parquet"), "--now", LANDED_AT, workspace=ws.root)[0] == 0
    code, out, _ = cli("run", NAME, "--now", RUN_AT, "--json", workspace=ws.root)  # the upstream reported no load
    record = json.loads(out)
    assert code == 1 and record["status"] == "blocked", record["outcome"]
    (command,) = re.findall(r"to move on: .*?`(kintsugi accept [^`]+)`", record["outcome"])
    assert command == f"kintsugi accept {record['run_id']} --finding upstream_stale --reason ...", record["outcome"]
    words = ["the feed is paused by its owner this month" if w == "..." else w for w in command.split()[1:]]
    code, out, err = cli(*words, "--as", "operator", workspace=ws.root)
    assert code == 0, err
    assert "accepted as the new normal by operator" in out, out
