"""What to train: the training spec and the direction of each metric."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from training.errors import SpecError

__all__ = ["TrainingSpec", "metric_direction"]

Direction = Literal["min", "max"]

_DIRECTIONS: dict[str, Direction] = {
    "mae": "min",
    "rmse": "min",
    "r2": "max",
    "accuracy": "max",
    "roc_auc": "max",
    "log_loss": "min",
    "f1": "max",
}
_TASK_METRICS: dict[str, tuple[str, ...]] = {
    "regression": ("mae", "rmse", "r2"),
    "classification": ("accuracy", "f1", "roc_auc", "log_loss"),
}


def metric_direction(metric: str) -> Direction:
    """Return ``"min"`` if a lower ``metric`` is better, ``"max"`` if a higher one is."""
    try:
        return _DIRECTIONS[metric]
    except KeyError:
        valid = ", ".join(sorted(_DIRECTIONS))
        raise SpecError(f"unknown metric {metric!r}", f"use one of: {valid}") from None


@dataclass(frozen=True)
class TrainingSpec:
    """How to train one model: columns, estimator import path and params, metric, seed."""

    task: str
    target: str
    numeric_features: list[str]
    categorical_features: list[str]
    time_column: str
    estimator: str
    params: dict[str, Any]
    metric: str
    seed: int = 0
    holdout_fraction: float = 0.2

    def __post_init__(self) -> None:
        _check_task_and_metric(self.task, self.metric)
        _check_columns(self)
        _check_scalars(self)

    @property
    def features(self) -> list[str]:
        """Numeric then categorical feature columns, in spec order."""
        return [*self.numeric_features, *self.categorical_features]


def _check_task_and_metric(task: str, metric: str) -> None:
    if task not in _TASK_METRICS:
        raise SpecError(f"unknown task {task!r}", "set task to 'regression' or 'classification'")
    metric_direction(metric)
    if metric not in _TASK_METRICS[task]:
        valid = ", ".join(_TASK_METRICS[task])
        raise SpecError(
            f"metric {metric!r} does not apply to a {task} task",
            f"use one of: {valid}",
        )


def _check_columns(spec: TrainingSpec) -> None:
    features = spec.features
    if not features:
        raise SpecError(
            "the spec names no feature columns",
            "list at least one column in numeric_features or categorical_features",
        )
    duplicates = sorted({c for c in features if features.count(c) > 1})
    if duplicates:
        raise SpecError(
            f"feature columns listed more than once: {', '.join(duplicates)}",
            "list each column once, as numeric or as categorical",
        )
    leaked = [c for c in (spec.target, spec.time_column) if c in features]
    if leaked:
        raise SpecError(
            f"columns used as features and as target/time column: {', '.join(leaked)}",
            "remove the target and the time column from the feature lists",
        )


def _check_scalars(spec: TrainingSpec) -> None:
    if not spec.estimator.strip():
        raise SpecError(
            "the spec names no estimator",
            "set estimator to an import path such as 'sklearn.ensemble.HistGradientBoostingRegressor'",
        )
    if not isinstance(spec.params, dict):
        raise SpecError(
            f"estimator params must be a mapping, got {type(spec.params).__name__}",
            "write params as a mapping of parameter name to value",
        )
    if isinstance(spec.seed, bool) or not isinstance(spec.seed, int):
        raise SpecError(f"seed must be an integer, got {spec.seed!r}", "set seed to an integer")
    fraction = spec.holdout_fraction
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise SpecError(
            f"holdout_fraction must be between 0 and 1, got {spec.holdout_fraction!r}",
            "set holdout_fraction to a fraction such as 0.2",
        )
