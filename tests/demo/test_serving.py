"""The next day served: a retrain on a broken feed against the champion that serves the healed one, measured."""

from __future__ import annotations

import shutil

import pytest
from mlflow import MlflowClient

from controlplane.frontdoor.served import read_served
from controlplane.runs.identity import rebase_if_moved
from controlplane.workspace import Workspace
from demo.commands import served_table
from demo.seed import PIPELINE
from demo.serving import ServedDay, serve_next_day


@pytest.fixture(scope="module")
def served(demo_run, tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, ServedDay]:
    """The demo's next day, served in a private copy of the shared demo workspace (it lands a batch and runs)."""
    ws, result = demo_run
    copy = Workspace(tmp_path_factory.mktemp("served") / "ws")
    shutil.copytree(ws.root, copy.root)
    rebase_if_moved(copy)
    return copy, serve_next_day(copy, result.healed, seed=7, now=result.now)


def test_a_retrain_that_never_saw_the_new_unit_serves_it_far_worse_than_the_healed_champion(served):
    _, day = served
    assert day.broken_in_training == 0 and day.training_rows > 0  # the batch in metres is newer than its training
    assert day.without_gate >= 1.5 * day.healed
    assert day.healed == pytest.approx(day.clean, rel=0.01)  # the heal is exact: healed serves as a working feed


def test_the_healed_row_names_the_champion_that_serves_after_the_days_run(served):
    ws, day = served
    champion = int(MlflowClient(tracking_uri=ws.mlflow_uri).get_model_version_by_alias(PIPELINE, "champion").version)
    assert day.champion == champion
    if day.run.status == "promoted":  # the day's run promoted: the version that serves is the one it promoted
        promote = next(e for e in day.run.events if e.stage == "promote")
        assert promote.evidence["version"] == champion
    table = served_table(day)
    assert f"with Kintsugi: the champion v{champion} after the day's run" in table
    assert f"{day.without_gate:6.2f} min" in table and f"{day.healed:6.2f} min" in table


def test_the_day_served_is_kept_for_the_console_as_measured(served):
    ws, day = served
    (kept,) = read_served(ws)
    assert (kept.pipeline, kept.metric, kept.rows, kept.champion) == (PIPELINE, day.metric, day.rows, day.champion)
    assert (kept.without_gate, kept.with_gate, kept.clean) == (day.without_gate, day.healed, day.clean)
    assert kept.note == day.gap_measures and "cost of serving the feed as sent" in kept.note
