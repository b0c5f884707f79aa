"""A small drill end to end through the real loop: the scoreboard's shape and verdicts, its determinism,
and the user's workspace left byte for byte as it was — even with the environment pointing at it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from chaos.drill.demo import isolated
from chaos.drill.demo_tasks import run_scenario, run_sweep
from chaos.drill.estate import load_estate
from chaos.drill.scoreboard import strip_timings
from tests.chaos.helpers import kintsugi

SCENARIOS = ("unit_km_to_m", "volume_drop", "upstream_deprecated")


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def drill(drill_root, demo_run, tmp_path_factory):
    """`kintsugi drill --json --out DIR` with KINTSUGI_HOME, MLFLOW_TRACKING_URI and DATAHUB_GMS_URL aimed at a
    user's stores."""
    import shutil

    user = tmp_path_factory.mktemp("user") / "ws"
    shutil.copytree(demo_run[0].root, user)
    before = _tree(user)
    out = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KINTSUGI_HOME", str(user))
        patch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{user / 'mlflow.db'}")
        patch.setenv("DATAHUB_GMS_URL", "http://127.0.0.1:9")  # a team's DataHub: the drill must not reach it
        patch.chdir(user.parent)
        code, stdout, stderr = kintsugi(
            "drill",
            "--scenarios",
            ",".join(SCENARIOS),
            "--seeds",
            "1",
            "--controls",
            "1",
            "--sweep-seeds",
            "0",
            "--jobs",
            "2",
            "--json",
            "--out",
            str(out),
            "--keep",
            str(drill_root),
        )
    return code, json.loads(stdout), stderr, out, before, _tree(user)


def test_the_scoreboard_has_the_overall_keys_and_one_row_per_scenario(drill):
    code, board, _, _, _, _ = drill
    assert code == 0, board["scenarios_failed"]
    for key in ("detection_recall", "localization_rate", "false_alarms", "heal_rate", "scenarios"):
        assert key in board
    assert [row["name"] for row in board["scenarios"]] == list(SCENARIOS)
    assert (board["detection_recall"], board["localization_rate"], board["false_alarms"], board["heal_rate"]) == (
        1.0,
        1.0,
        0,
        1.0,
    )
    assert board["drill"]["controls"] == 1 and board["controls"][0]["status"] == "promoted"


def test_each_scenario_ends_as_it_should(drill):
    rows = {row["name"]: row for row in drill[1]["scenarios"]}
    heal = rows["unit_km_to_m"]
    assert heal["outcomes"] == {"promoted": 1} and heal["passed_all"]
    assert heal["repair_accuracy"]["mean"] == 1.0 and heal["collateral_damage"]["mean"] == 0.0
    assert abs(heal["impact"]["healed_vs_clean"]["mean"]) <= 0.02 < heal["impact"]["poisoned_vs_clean"]["mean"]
    assert heal["impact"]["recovery"]["mean"] == pytest.approx(1.0, abs=0.05)
    for name in ("volume_drop", "upstream_deprecated"):
        assert rows[name]["outcomes"] == {"blocked": 1} and rows[name]["incident_open"]["mean"] == 1.0


def test_progress_goes_to_stderr_and_reports_are_written(drill):
    _, board, stderr, out, _, _ = drill
    lines = [line for line in stderr.splitlines() if line.startswith("[")]
    assert len(lines) == len(SCENARIOS) + 1 and "PASS unit_km_to_m" in lines[0]
    assert json.loads((out / "scoreboard.json").read_text()) == board
    assert (out / "scoreboard.md").read_text().count("\n| `") == len(SCENARIOS)
    assert (out / "scoreboard.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_users_workspace_is_untouched(drill):
    _, _, _, _, before, after = drill
    assert after == before


def test_same_seed_same_result(drill, drill_root):
    row = next(r for r in drill[1]["scenarios"] if r["name"] == "volume_drop")
    with isolated():
        again = run_scenario(load_estate(drill_root / "seed-1"), "volume_drop")
    again.pop("scenario")
    assert strip_timings(again) == strip_timings(row["runs"][0])


def test_the_sweep_finds_the_freshness_sla(drill_root):
    with isolated():
        sweep = run_sweep(load_estate(drill_root / "seed-1"), "upstream_stale")
    assert [(p["magnitude"], p["detected"]) for p in sweep["points"]] == [
        (6.0, False),
        (12.0, False),
        (23.0, False),
        (30.0, True),
        (48.0, True),
    ]
