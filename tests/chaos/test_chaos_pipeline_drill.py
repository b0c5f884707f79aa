"""`kintsugi drill --pipeline NAME` on a pipeline onboarded with `kintsugi init` from real data (Seattle's daily
weather in 2012, shipped by vega_datasets): the scenarios that apply to its contract, injected into its newest
batch through the real loop on scratch copies of the workspace, named right; a clean control not blocked; the
workspace itself untouched. Plus the pure parts: which scenarios a contract gets, and what counts as invented."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.chaos.helpers import whole_cli

NAME = "seattle-weather"
SCENARIOS = "unit_change,column_rename,label_copy,duplicate_keys"


def _weather_2012() -> pd.DataFrame:
    from vega_datasets import data

    frame = data.seattle_weather()
    frame["date"] = frame["date"].astype("datetime64[us]")
    frame["weather"] = frame["weather"].astype(object)
    return frame[(frame["date"] >= "2012-01-01") & (frame["date"] < "2013-01-01")].reset_index(drop=True)


def _fingerprint(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.endswith(".lock")
    }


@pytest.fixture(scope="module")
def onboarded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`kintsugi init --yes` on a year of weather, then a first run (a champion): as a new user would."""
    root = tmp_path_factory.mktemp("onboarded")
    table = root / "seattle-weather.parquet"
    _weather_2012().to_parquet(table, index=False)
    ws = root / "ws"
    code, out, err = whole_cli(
        "init",
        NAME,
        "--data",
        str(table),
        "--target",
        "temp_max",
        "--time-column",
        "date",
        "--now",
        "2013-01-01T06:00:00+00:00",
        "--yes",
        "--workspace",
        str(ws),
    )
    assert code == 0, out + err
    code, out, err = whole_cli("run", NAME, "--now", "2013-01-01T07:00:00+00:00", "--workspace", str(ws))
    assert code == 0 and "APPROVED v1" in out, out + err
    return ws


@pytest.fixture(scope="module")
def drilled(
    onboarded: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, dict, str, dict[str, str], dict[str, str]]:
    before = _fingerprint(onboarded.parent)
    here = tmp_path_factory.mktemp("cwd")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(here)  # --keep relative to where the user stands
        code, out, err = _drill(onboarded)
    assert (here / "kept" / "copy.json").is_file(), err[-400:]
    return code, json.loads(out), err, before, _fingerprint(onboarded.parent)


def _drill(onboarded: Path) -> tuple[int, str, str]:
    return whole_cli(
        "drill",
        "--pipeline",
        NAME,
        "--workspace",
        str(onboarded),
        "--scenarios",
        SCENARIOS,
        "--scope",
        "batch",
        "--controls",
        "1",
        "--jobs",
        "2",
        "--json",
        "--keep",
        "kept",
    )


def test_each_scenario_is_named_right_through_the_loop(drilled):
    code, board, err, _, _ = drilled
    assert code == 0, err
    runs = {row["name"]: row["runs"][0] for row in board["scenarios"]}
    assert set(runs) == {"unit_change@batch", "column_rename@batch", "label_copy@batch", "duplicate_keys@batch"}
    assert all(r["detected"] and r["localized"] and r["passed"] for r in runs.values()), runs
    assert "unit_mismatch:precipitation:block" in runs["unit_change@batch"]["findings"]
    assert "duplicate_keys:date:block" in runs["duplicate_keys@batch"]["findings"]  # no key: whole rows, by day
    assert all(runs[name]["healed"] for name in ("unit_change@batch", "column_rename@batch", "duplicate_keys@batch"))
    assert runs["label_copy@batch"]["status"] == "blocked" and runs["label_copy@batch"]["incident_open"]
    assert board["invented_cells"] == 0 and board["drill"]["mode"] == "pipeline"


def test_the_clean_newest_batch_is_not_blocked(drilled):
    _, board, _, _, _ = drilled
    (control,) = board["controls"]
    assert not control["alarm"] and control["findings"] == [], control
    assert board["false_alarms"] == 0
    # the champion was trained on this very batch: the healed runs end as the clean one does, not promoted
    assert {r["runs"][0]["status"] for r in board["scenarios"] if r["expected"]["healable"]} == {control["status"]}


def test_every_scenario_asked_applies_and_progress_goes_to_stderr(drilled):
    _, board, err, _, _ = drilled
    assert board["skipped"] == [] and "[  5/5]" in err, err[-400:]


def test_the_workspace_and_its_table_are_left_alone(drilled):
    _, _, _, before, after = drilled
    assert after == before


def test_an_unknown_pipeline_is_one_line_and_exit_2(onboarded):
    code, out, err = whole_cli("drill", "--pipeline", "nope", "--workspace", str(onboarded))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: unknown pipeline 'nope'") and NAME in err, err


def _contract_and_spec() -> tuple[Any, Any]:
    from controlplane.spec import PipelineSpec, PromotionRules
    from controlplane.vocab import Policy
    from guard.contract import ColumnContract, Contract
    from training.spec import TrainingSpec

    contract = Contract(
        "urn:li:dataset:(urn:li:dataPlatform:file,t,PROD)",
        (
            ColumnContract("ts", "timestamp", primary_key=True),
            ColumnContract("depth", "number", unit="m"),
            ColumnContract("count", "integer"),
            ColumnContract("y", "number"),
        ),
        label_column="y",
        event_timestamp_column="ts",
    )
    training = TrainingSpec(
        task="regression",
        target="y",
        numeric_features=["depth", "count"],
        categorical_features=[],
        time_column="ts",
        estimator="x",
        params={},
        metric="mae",
    )
    spec = PipelineSpec(
        "p",
        contract.dataset_urn,
        Path("t"),
        "t",
        training,
        PromotionRules("mae", 0.0, 0.0),
        Policy.AUTO,
        Path("p.yaml"),
    )
    return contract, spec


def test_scenarios_follow_the_contract():
    from chaos.failures.generic import generic_scenarios
    from guard.contract import ColumnContract, Contract

    contract, spec = _contract_and_spec()
    built, skipped = generic_scenarios(contract, spec)
    by_name = {s.name: s for s in built}
    assert by_name["unit_change"].columns == ("depth",) and by_name["unit_change"].unit == "ft"
    assert by_name["join_nulls"].kind.value == "null_spike"  # no null limit in the contract: a spike
    assert by_name["duplicate_keys"].columns == ("ts",) and by_name["columns_swapped"].columns == ("depth", "count")
    assert skipped == ()
    unitless = Contract(
        contract.dataset_urn,
        tuple(c for c in contract.columns if c.name != "depth") + (ColumnContract("depth", "number"),),
        label_column="y",
        event_timestamp_column="ts",
    )
    assert [s.name for s in generic_scenarios(unitless, spec)[1]] == ["unit_change"]
    untimed = Contract(contract.dataset_urn, tuple(c for c in contract.columns if c.name != "ts"), label_column="y")
    skipped_untimed = {s.name: s.why for s in generic_scenarios(untimed, spec)[1]}
    assert skipped_untimed["duplicate_keys"] == "the contract declares no key column and no time column"
    assert set(skipped_untimed) == {"timezone_shift", "timezone_late", "duplicate_keys"}


def test_every_scenario_changes_at_least_one_row_of_a_small_newest_batch():
    # a share of a batch of 12 rows can round to none (2.5% of 12): a case that changes nothing is no failure
    from chaos.drill.pipeline_tasks import ALL_ROWS, BATCH, corrupt
    from chaos.failures.generic import generic_scenarios

    contract, spec = _contract_and_spec()
    months = pd.date_range("2001-01-01", periods=48, freq="MS", tz="UTC")
    rng = np.random.default_rng(0)
    clean = pd.DataFrame(
        {"ts": months, "depth": rng.uniform(1, 9, 48), "count": rng.integers(0, 50, 48), "y": rng.normal(size=48)}
    )
    after_ms = int(months[35].value // 1_000_000)  # the newest batch: the last 12 rows
    built, _ = generic_scenarios(contract, spec)
    for scenario in built:
        for scope in (BATCH, ALL_ROWS):
            corrupted = corrupt(clean, scenario, contract, 1, scope, after_ms, "ts")
            same = corrupted.shape == clean.shape and corrupted.reset_index(drop=True).equals(clean)
            assert not same, f"{scenario.name}@{scope} changed no row"


def test_a_filled_in_cell_is_invented_a_corrected_or_untouched_one_is_not():
    from chaos.drill.pipeline_tasks import invented_cells

    clean = pd.DataFrame({"t": [10.0, 20.0, 30.0, 40.0], "k": ["a", "b", "c", "d"]})
    corrupted = clean.assign(t=[50.0, 68.0, np.nan, 104.0])  # degC written as degF, and a null
    corrected = clean.assign(t=[(50.0 - 32) / 1.8, (68.0 - 32) / 1.8, np.nan, (104.0 - 32) / 1.8])
    assert invented_cells(corrected, clean, corrupted) == 0
    assert invented_cells(corrupted, clean, corrupted) == 0  # left as it came (quarantined, or blocked)
    assert invented_cells(corrected.assign(t=corrected["t"].fillna(25.0)), clean, corrupted) == 1  # a median
    assert invented_cells(clean.assign(k=["a", "b", "x", "d"]), clean, corrupted) == 1
