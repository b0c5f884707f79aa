"""The demo drill with one seed: every injected failure detected, every scenario ending as it should, none in error, no
clean control blocked."""

from __future__ import annotations

import json
from pathlib import Path

from smoke_support import kintsugi


def test_the_drill_detects_every_failure_and_blocks_no_clean_control(tmp_path: Path) -> None:
    done = kintsugi("drill", "--seeds", "1", "--json", "--out", str(tmp_path / "drill"), timeout=1800)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: some scenario's outcome was not the expected one
    board = json.loads(done.stdout)
    runs = [run for scenario in board["scenarios"] for run in scenario["runs"]]
    errors = [f"{run.get('scenario')}: {run['outcome']}" for run in runs if run["status"] == "error"]
    print(
        f"drill: recall {board['detection_recall']}, localization {board['localization_rate']}, "
        f"heal {board['heal_rate']}, false alarms {board['false_alarms']} of {len(board['controls'])} controls, "
        f"passed {len(board['scenarios_passed'])} of {len(board['scenarios'])} scenarios "
        f"(failed: {', '.join(board['scenarios_failed']) or 'none'})"
    )
    assert errors == []
    assert board["detection_recall"] == 1.0
    assert len(board["controls"]) == 20 and board["false_alarms"] == 0
    assert all(control["status"] != "error" for control in board["controls"])
    assert board["scenarios_failed"] == [] and done.returncode == 0  # every scenario ends as it should
