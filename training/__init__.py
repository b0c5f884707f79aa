"""Kintsugi's training: build, fit, score scikit-learn models; log, register, alias them in MLflow.

``training`` is the only package that talks to MLflow and imports nothing else from the project.
``ModelStore`` (and with it MLflow) is imported on first use, so pure training code stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from training.errors import RegistryError, SpecError, TrainingError
from training.model import build_estimator, evaluate, fit, is_better, relative_gain, time_holdout
from training.spec import TrainingSpec, metric_direction

if TYPE_CHECKING:
    from training.registry import ModelStore

__all__ = [
    "ModelStore",
    "RegistryError",
    "SpecError",
    "TrainingError",
    "TrainingSpec",
    "build_estimator",
    "evaluate",
    "fit",
    "is_better",
    "metric_direction",
    "relative_gain",
    "time_holdout",
]


def __getattr__(name: str) -> Any:
    if name == "ModelStore":
        from training.registry import ModelStore  # noqa: PLC0415 - keeps MLflow off import

        return ModelStore
    raise AttributeError(f"module 'training' has no attribute {name!r}")
