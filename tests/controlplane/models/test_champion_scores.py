"""A model version's predictions of the holdout rows it last saw are kept in the workspace: a later run whose champion
it is takes them for those rows instead of loading and predicting with the champion again; a kept file that is
unreadable or another key's is predicted again, never trusted."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import numpy as np

from controlplane.models.champion_scores import PredictionsKey, load_known, save_known
from controlplane.models.modelstore import open_store
from controlplane.pipeline import run_pipeline
from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from demo.seed import PIPELINE
from tests.support import DEMO_NOW, champion
from training.model import Predictions


def _run(ws: Workspace, minutes: int) -> tuple[str, dict[str, Any]]:
    """One run whose candidate differs from the champion in its fit alone (max_iter), so a candidate is trained
    and scored beside the champion rather than the champion standing on the same rows and spec."""
    now_ms = int((DEMO_NOW + timedelta(minutes=30 + minutes)).timestamp() * 1000)
    spec = load_spec(ws, PIPELINE)
    params = {**spec.training.params, "max_iter": int(spec.training.params.get("max_iter", 100)) + 1 + minutes}
    spec = replace(spec, training=replace(spec.training, params=params))
    record = run_pipeline(ws, spec, policy="ratify", now_ms=now_ms)
    trained = next((e for e in record.events if e.status == "trained"), None)
    assert trained is not None, (record.status, record.outcome)
    return record.status, trained.evidence


def _key(ws: Workspace, version: int) -> PredictionsKey:
    training = load_spec(ws, PIPELINE).training
    mlflow_run = open_store(ws).run_for_version(PIPELINE, version)
    return PredictionsKey(PIPELINE, version, mlflow_run, training.task, tuple(training.features))


def test_a_later_run_on_the_same_champion_reads_its_kept_predictions_and_the_candidates_are_kept(demo_copy):
    ws, _ = demo_copy
    version = champion(ws, PIPELINE)
    assert version is not None
    status, first = _run(ws, 0)
    assert status == "paused" and champion(ws, PIPELINE) == version  # the champion stays: the next run's key
    assert first["champion_version"] == version
    kept = load_known(ws, _key(ws, version))
    assert kept is not None and len(kept.keys) == first["rows_holdout"]  # the holdout's rows, each distinct
    assert load_known(ws, _key(ws, first["version"])) is not None  # the candidate's, kept when it was registered
    save_known(ws, _key(ws, version), kept.keys, Predictions(kept.said.predicted + 100.0))  # marked
    _, again = _run(ws, 1)
    assert again["champion"]["mae"] > first["champion"]["mae"] + 50  # the marked predictions were read
    (kept_file,) = (ws.cache / "champion-predictions").glob(f"*-v{version}-*.npz")
    kept_file.write_bytes(b"not kept predictions")
    _, third = _run(ws, 2)  # unreadable: a miss, predicted again and kept again
    assert third["champion"] == first["champion"]
    restored = load_known(ws, _key(ws, version))
    assert restored is not None and np.array_equal(restored.said.predicted, kept.said.predicted)


def test_kept_predictions_answer_only_their_own_key(tmp_path):
    ws = Workspace(tmp_path / "ws")
    key = PredictionsKey("m", 3, "run-a", "regression", ("x", "z"))
    rows = np.array([[1, 2], [3, 4], [1, 2]], dtype=np.uint64)
    save_known(ws, key, rows, Predictions(np.array([0.5, 1.5, 0.5])))
    kept = load_known(ws, key)
    assert kept is not None and kept.keys.tolist() == [[1, 2], [3, 4]]  # a repeated row kept once
    assert kept.said.predicted.tolist() == [0.5, 1.5]
    for other in ({"version": 4}, {"mlflow_run": "run-b"}, {"features": ("z", "x")}, {"task": "classification"}):
        assert load_known(ws, replace(key, **other)) is None
    labels = Predictions(np.array(["a", None], dtype=object))
    save_known(ws, replace(key, version=5), rows[:2], labels)  # would need a pickle: not kept
    assert load_known(ws, replace(key, version=5)) is None


def test_only_the_champions_and_the_newest_candidates_predictions_are_kept(tmp_path):
    ws = Workspace(tmp_path / "ws")
    rows, said = np.array([[1, 2]], dtype=np.uint64), Predictions(np.array([0.5]))

    def key(model: str, version: int) -> PredictionsKey:
        return PredictionsKey(model, version, f"run-{version}", "regression", ("x",))

    save_known(ws, key("other", 1), rows, said)
    save_known(ws, key("m", 3), rows, said)  # the champion's
    save_known(ws, key("m", 4), rows, said, keep=(3,))  # a candidate registered beside champion v3
    assert all(load_known(ws, key("m", v)) is not None for v in (3, 4))
    save_known(ws, key("m", 5), rows, said, keep=(3,))  # the next candidate: v4 was not promoted
    assert [load_known(ws, key("m", v)) is not None for v in (3, 4, 5)] == [True, False, True]
    save_known(ws, key("m", 5), rows, said)  # v5 the champion now, predicting on its own
    assert [load_known(ws, key("m", v)) is not None for v in (3, 5)] == [False, True]
    assert load_known(ws, key("other", 1)) is not None  # another model's are its own
