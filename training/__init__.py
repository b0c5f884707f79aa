"""Kintsugi's training: build, fit, score scikit-learn models; log, register, alias them in MLflow.

``training`` is the only package that talks to MLflow and imports nothing else from the project.
``ModelStore`` (and with it MLflow) is imported on first use, so pure training code stays light.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# MLflow draws a progress bar on stderr for every artifact download: the CLI's stderr is for one-line errors and
# progress the command itself reports, so the bar is off unless a user turns it on
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")

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
