"""Holdout metrics for fitted regressors and classifiers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn import metrics

from training.errors import SpecError, TrainingError

__all__ = ["classification_scores", "regression_scores"]


def regression_scores(model: Any, features: pd.DataFrame, target: pd.Series) -> dict[str, float]:
    """mae, rmse and r2 of ``model`` on the given rows."""
    predicted = model.predict(features)
    return {
        "mae": float(metrics.mean_absolute_error(target, predicted)),
        "rmse": float(metrics.root_mean_squared_error(target, predicted)),
        "r2": float(metrics.r2_score(target, predicted)),
    }


def classification_scores(model: Any, features: pd.DataFrame, target: pd.Series) -> dict[str, float]:
    """accuracy, f1, roc_auc and log_loss; binary f1/roc_auc score the second class.

    With more than two classes f1 is macro-averaged and roc_auc is one-vs-rest.
    """
    if not hasattr(model, "predict_proba"):
        raise SpecError(
            f"{type(model).__name__} has no predict_proba, so roc_auc and log_loss cannot be computed",
            "use a classifier with predict_proba (e.g. HistGradientBoostingClassifier)",
        )
    classes = np.asarray(model.classes_)
    _check_labels(classes, target)
    predicted = model.predict(features)
    proba = np.asarray(model.predict_proba(features))
    binary = len(classes) == 2
    if binary:
        f1 = metrics.f1_score(target, predicted, pos_label=classes[1])
        roc_auc = metrics.roc_auc_score(target == classes[1], proba[:, 1])
    else:
        f1 = metrics.f1_score(target, predicted, average="macro", labels=classes)
        roc_auc = metrics.roc_auc_score(target, proba, multi_class="ovr", labels=classes)
    return {
        "accuracy": float(metrics.accuracy_score(target, predicted)),
        "f1": float(f1),
        "roc_auc": float(roc_auc),
        "log_loss": float(metrics.log_loss(target, proba, labels=classes)),
    }


def _check_labels(classes: np.ndarray, target: pd.Series) -> None:
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
