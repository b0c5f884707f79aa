"""Holdout metrics for fitted regressors and classifiers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn import metrics

from training._threads import in_parts
from training.errors import SpecError, TrainingError

__all__ = [
    "Predictions",
    "check_labels",
    "classification_scores",
    "predict",
    "predictions_of",
    "regression_scores",
    "score_of",
    "scores_of",
]


@dataclass(frozen=True)
class Predictions:
    """What a model said about each holdout row: its label or value, and for a classifier each class's probability."""

    predicted: np.ndarray
    proba: np.ndarray | None = None
    classes: np.ndarray | None = None


def predict(task: str, model: Any, features: pd.DataFrame, target: pd.Series) -> Predictions:
    """The model's predictions on the given rows (a classifier's classes checked against ``target``'s labels)."""
    if task == "regression":
        return Predictions(in_parts(model.predict, features))
    _require_proba(model)
    check_labels(np.asarray(model.classes_), target)
    return predictions_of(task, model, features)


def predictions_of(task: str, model: Any, features: pd.DataFrame) -> Predictions:
    """The model's predictions on the given rows, labels unchecked (`predict` checks them against a target)."""
    if task == "regression":
        return Predictions(in_parts(model.predict, features))
    _require_proba(model)
    classes = np.asarray(model.classes_)
    return Predictions(in_parts(model.predict, features), in_parts(model.predict_proba, features), classes)


def _require_proba(model: Any) -> None:
    if not hasattr(model, "predict_proba"):
        raise SpecError(
            f"{type(model).__name__} has no predict_proba, so roc_auc and log_loss cannot be computed",
            "use a classifier with predict_proba (e.g. HistGradientBoostingClassifier)",
        )


def scores_of(target: np.ndarray, said: Predictions) -> dict[str, float]:
    """The metrics of predictions against the true target: mae/rmse/r2, or accuracy/f1/roc_auc/log_loss."""
    names = _REGRESSION if said.proba is None else _CLASSIFICATION
    return {name: score_of(name, target, said) for name in names}


def score_of(metric: str, target: np.ndarray, said: Predictions) -> float:
    """One metric of predictions against the true target (binary f1/roc_auc score the second class; with more
    than two classes f1 is macro-averaged and roc_auc is one-vs-rest)."""
    predicted, proba, classes = said.predicted, said.proba, said.classes
    if metric in _REGRESSION:
        return float(_REGRESSION[metric](target, predicted))
    assert proba is not None and classes is not None
    binary = len(classes) == 2
    if metric == "f1":
        if binary:
            return float(metrics.f1_score(target, predicted, pos_label=classes[1]))
        return float(metrics.f1_score(target, predicted, average="macro", labels=classes))
    if metric == "roc_auc":
        if binary:
            return float(metrics.roc_auc_score(target == classes[1], proba[:, 1]))
        return float(metrics.roc_auc_score(target, proba, multi_class="ovr", labels=classes))
    if metric == "log_loss":
        return float(metrics.log_loss(target, proba, labels=classes))
    return float(metrics.accuracy_score(target, predicted))


_REGRESSION = {
    "mae": metrics.mean_absolute_error,
    "rmse": metrics.root_mean_squared_error,
    "r2": metrics.r2_score,
}
_CLASSIFICATION = ("accuracy", "f1", "roc_auc", "log_loss")


def regression_scores(model: Any, features: pd.DataFrame, target: pd.Series) -> dict[str, float]:
    """mae, rmse and r2 of ``model`` on the given rows."""
    return scores_of(np.asarray(target), predict("regression", model, features, target))


def classification_scores(model: Any, features: pd.DataFrame, target: pd.Series) -> dict[str, float]:
    """accuracy, f1, roc_auc and log_loss; binary f1/roc_auc score the second class.

    With more than two classes f1 is macro-averaged and roc_auc is one-vs-rest.
    """
    return scores_of(np.asarray(target), predict("classification", model, features, target))


def check_labels(classes: np.ndarray, target: pd.Series) -> None:
    """Every class of the model in the holdout, and no label the model never saw."""
    present = set(pd.unique(target))
    unseen = sorted(map(str, present - set(classes)))
    if unseen:
        raise TrainingError(
            f"the holdout has labels the model never saw in training: {', '.join(unseen)}",
            "check the target column for new or mislabeled classes",
        )
    absent = sorted(map(str, set(classes) - present))
    if absent:
        raise TrainingError(
            f"the holdout lacks class(es) {', '.join(absent)}, so roc_auc is undefined",
            "use a holdout that spans every class (raise holdout_fraction or add rows)",
        )
