"""A model's kept predictions answer the rows it has seen: the scores are those of predicting every row, and the
model predicts only the rows no kept prediction answers (a holdout that moved by a batch keeps most of its rows)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from training.errors import TrainingError
from training.known import KnownPredictions, row_keys, score_known
from training.model import fit, score, time_holdout
from training.spec import TrainingSpec

SpecFactory = Callable[..., TrainingSpec]


class Loads:
    """Counts how often the model had to be loaded (and so predicted)."""

    def __init__(self, model: Any) -> None:
        self.model, self.count = model, 0

    def __call__(self) -> Any:
        self.count += 1
        return self.model


def _moved_holdouts(deliveries: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(training rows, yesterday's holdout, today's holdout): today's drops yesterday's first 30 rows and adds 30."""
    ordered = deliveries.sort_values("event_time")
    train, rest = ordered.iloc[:240], ordered.iloc[240:]
    return train, rest.iloc[:130], rest.iloc[30:]


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_a_holdout_moved_by_a_batch_predicts_only_its_new_rows_and_scores_as_predicting_all(
    deliveries: pd.DataFrame, spec_factory: SpecFactory, task: str
) -> None:
    spec = spec_factory(task)
    train, yesterday, today = _moved_holdouts(deliveries)
    model = fit(spec, train)
    kept = score(spec, model, yesterday)
    known = KnownPredictions.of(row_keys(spec, yesterday), kept.said)
    loads = Loads(model)
    scored, predicted = score_known(spec, today, row_keys(spec, today), known, loads)
    whole = score(spec, model, today)
    assert scored.metrics == whole.metrics
    assert np.array_equal(scored.said.predicted, whole.said.predicted)
    if task == "classification":
        assert np.array_equal(scored.said.proba, whole.said.proba)  # type: ignore[arg-type]
    assert (predicted, loads.count) == (30, 1)


def test_a_holdout_every_row_of_which_is_known_never_loads_the_model(
    deliveries: pd.DataFrame, regression_spec: TrainingSpec
) -> None:
    train, holdout = time_holdout(deliveries, "event_time", 0.3)
    model = fit(regression_spec, train)
    keys = row_keys(regression_spec, holdout)
    known = KnownPredictions.of(keys, score(regression_spec, model, holdout).said)
    loads = Loads(model)
    scored, predicted = score_known(regression_spec, holdout.iloc[::-1], keys[::-1], known, loads)
    assert (predicted, loads.count) == (0, 0)
    assert scored.metrics == score(regression_spec, model, holdout.iloc[::-1]).metrics


def test_a_row_keys_its_feature_values_and_their_types_not_its_place_or_label(
    deliveries: pd.DataFrame, regression_spec: TrainingSpec
) -> None:
    rows = deliveries.head(5).reset_index(drop=True)
    keys = row_keys(regression_spec, rows)
    assert keys.shape == (5, 2) and keys.dtype == np.uint64
    relabelled = rows.assign(delivery_minutes=rows["delivery_minutes"] + 1.0, event_time=rows["event_time"].iloc[0])
    assert np.array_equal(row_keys(regression_spec, relabelled.iloc[::-1]), keys[::-1])
    nudged = rows.assign(weight_kg=rows["weight_kg"] + 1e-9)
    assert not (row_keys(regression_spec, nudged) == keys).all(axis=1).any()


def test_labels_the_model_never_saw_fail_as_when_every_row_is_predicted(
    deliveries: pd.DataFrame, spec_factory: SpecFactory
) -> None:
    spec = spec_factory("classification")
    train, holdout = time_holdout(deliveries, "event_time", 0.3)
    model = fit(spec, train)
    keys = row_keys(spec, holdout)
    known = KnownPredictions.of(keys, score(spec, model, holdout).said)
    relabelled = holdout.assign(late=np.where(np.arange(len(holdout)) == 0, 7, holdout["late"]))
    with pytest.raises(TrainingError, match="labels the model never saw in training: 7"):
        score(spec, model, relabelled)
    with pytest.raises(TrainingError, match="labels the model never saw in training: 7"):
        score_known(spec, relabelled, keys, known, Loads(model))
