"""The champion's holdout scores are kept by (version, table, holdout) in the workspace: a later run on the same table
and champion reads them instead of loading and predicting with the champion again; a kept file that is unreadable
or another key's is scored again, never trusted."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np

from controlplane.models.champion_scores import ScoresKey, load_scores, save_scores
from controlplane.pipeline import run_pipeline
from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from demo.seed import PIPELINE
from tests.support import DEMO_NOW, champion
from training.model import Predictions, Scored


def _run(ws: Workspace, minutes: int) -> tuple[str, dict]:
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


def _stored(path: Path) -> tuple[ScoresKey, int]:
    with np.load(path, allow_pickle=False) as kept:
        document = json.loads(str(kept["key"]))
        rows = len(kept["predicted"])
    del document["format"]
    return ScoresKey(**{**document, "features": tuple(document["features"])}), rows


def test_a_later_run_on_the_same_table_and_champion_reads_the_kept_scores(demo_copy):
    ws, _ = demo_copy
    version = champion(ws, PIPELINE)
    status, first = _run(ws, 0)
    assert status == "paused" and champion(ws, PIPELINE) == version  # the champion stays: the next run's key
    kept = max((ws.cache / "champion-scores").glob("*.npz"), key=lambda path: path.stat().st_mtime_ns)  # this run's
    key, rows = _stored(kept)
    assert (key.model, key.version) == (PIPELINE, version) and first["champion_version"] == version
    stored = load_scores(ws, key, rows)
    assert stored is not None and stored.metrics == first["champion"]
    marked = {name: value + 1000.0 for name, value in first["champion"].items()}
    save_scores(ws, key, Scored(marked, stored.said))  # marked: what the next run reads shows through
    _, again = _run(ws, 1)
    assert again["champion"] == marked
    kept.write_bytes(b"not a kept score")  # unreadable: a miss, scored again and kept again
    _, third = _run(ws, 2)
    assert third["champion"] == first["champion"]
    restored = load_scores(ws, key, rows)
    assert restored is not None and restored.metrics == first["champion"]


def test_kept_scores_answer_only_their_own_key_and_row_count(tmp_path):
    ws = Workspace(tmp_path / "ws")
    key = ScoresKey("m", 3, "run-a", "table-a", "regression", "y", ("x",), "t", 0.2, 100, 0, "arrow")
    scored = Scored({"mae": 1.5}, Predictions(np.arange(4.0)))
    save_scores(ws, key, scored)
    kept = load_scores(ws, key, 4)
    assert kept is not None and kept.metrics == {"mae": 1.5} and np.array_equal(kept.said.predicted, np.arange(4.0))
    assert load_scores(ws, key, 5) is None  # another holdout's size
    for other in ({"table_hash": "table-b"}, {"mlflow_run": "run-b"}, {"holdout_fraction": 0.25}, {"seed": 1}):
        assert load_scores(ws, replace(key, **other), 4) is None
    labels = Scored({"accuracy": 1.0}, Predictions(np.array(["a", None], dtype=object)))
    save_scores(ws, replace(key, task="classification"), labels)  # would need a pickle: not kept
    assert load_scores(ws, replace(key, task="classification"), 2) is None
