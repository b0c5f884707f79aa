"""What a training run writes to MLflow beside its dataset: params and the saved sklearn model."""

from __future__ import annotations

import json
import logging
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import mlflow.sklearn
import mlflow.utils.environment as mlflow_environment
import pandas as pd
from mlflow.entities import LoggedModel
from mlflow.models import Model, infer_signature

from training._threads import one_thread
from training.errors import SpecError
from training.spec import TrainingSpec

__all__ = [
    "MODEL_NAME",
    "pip_requirements",
    "save_sklearn_model",
    "signature_sample",
    "training_params",
]

MODEL_NAME = "model"
_SIGNATURE_ROWS = 5
_INTEGER_HINT = "Hint: Inferred schema contains integer column"
_REQUIRED_DISTRIBUTIONS = ("scikit-learn", "pandas", "numpy", "cloudpickle")
_MISMATCH_CHECK = "warn_dependency_requirement_mismatches"  # what mlflow.utils.environment calls on every save
_ENVIRONMENT_SCAN_LOCK = threading.Lock()


def training_params(spec: TrainingSpec) -> dict[str, str]:
    """The spec as MLflow run params (lists and mappings as sorted JSON)."""
    return {
        "task": spec.task,
        "estimator": spec.estimator,
        "params": json.dumps(spec.params, sort_keys=True, default=str),
        "seed": str(spec.seed),
        "metric": spec.metric,
        "target": spec.target,
        "numeric_features": json.dumps(spec.numeric_features),
        "categorical_features": json.dumps(spec.categorical_features),
        "time_column": spec.time_column,
        "holdout_fraction": str(spec.holdout_fraction),
    }


def signature_sample(spec: TrainingSpec, train_df: pd.DataFrame) -> pd.DataFrame:
    """The first rows of the feature columns, from which the model signature is inferred."""
    missing = [c for c in (*spec.features, spec.target) if c not in train_df.columns]
    if missing:
        raise SpecError(
            f"the training frame lacks columns {', '.join(missing)} named in the spec",
            "log the frame the model was fitted on",
        )
    return train_df[spec.features].head(_SIGNATURE_ROWS)


def pip_requirements() -> list[str]:
    """Pinned requirements of a saved model, given explicitly so MLflow does not infer them."""
    return [f"{name}=={metadata.version(name)}" for name in _REQUIRED_DISTRIBUTIONS]


def save_sklearn_model(model: Any, sample: pd.DataFrame, path: Path, logged: LoggedModel, run_id: str) -> None:
    """Save ``model`` in MLflow's sklearn format under ``path``, with a signature.

    cloudpickle, not MLflow's default skops: skops took ~25x longer on a 200-tree forest
    (0.8 s vs 0.04 s), and its trusted-type list would come from the model itself anyway.
    """
    with warnings.catch_warnings(), one_thread():  # five rows through every tree: one thread is enough
        warnings.filterwarnings("ignore", message=_INTEGER_HINT, category=UserWarning)
        signature = infer_signature(sample, model.predict(sample))
    mlflow_model = Model(
        artifact_path=logged.artifact_location,
        run_id=run_id,
        model_uuid=logged.model_id,
        model_id=logged.model_id,
    )
    with _without_pickle_caution(), _without_environment_scan():
        mlflow.sklearn.save_model(
            model,
            str(path),
            mlflow_model=mlflow_model,
            serialization_format=mlflow.sklearn.SERIALIZATION_FORMAT_CLOUDPICKLE,
            signature=signature,
            pip_requirements=pip_requirements(),
        )


@contextmanager
def _without_environment_scan() -> Iterator[None]:
    """Skip MLflow's check that the current environment satisfies the model's requirements, during one save.

    The requirements are pinned from this very environment (`pip_requirements`, and MLflow's own pin of itself),
    so the check cannot find a mismatch; but its first call in a process maps every installed distribution to its
    modules (`importlib.metadata.packages_distributions`: 0.4 s on an idle machine, 1.2 s profiled on a busy one),
    which every `kintsugi run`, a process of its own, paid. Should an MLflow release move the check, saving pays
    it again and nothing else changes. The lock keeps concurrent saves from restoring each other's stand-in."""
    with _ENVIRONMENT_SCAN_LOCK:
        checked = getattr(mlflow_environment, _MISMATCH_CHECK, None)
        if checked is None:
            yield
            return
        setattr(mlflow_environment, _MISMATCH_CHECK, _requirements_from_here)
        try:
            yield
        finally:
            setattr(mlflow_environment, _MISMATCH_CHECK, checked)


def _requirements_from_here(requirements: list[str]) -> None:
    """Stands in for MLflow's mismatch check: requirements pinned from this environment match it."""


@contextmanager
def _without_pickle_caution() -> Iterator[None]:
    """Drop MLflow's per-save warning about the pickle format, which we chose on purpose."""
    logger = logging.getLogger("mlflow.sklearn")
    caution = _DropMessage("Saving scikit-learn models in the pickle or cloudpickle format")
    logger.addFilter(caution)
    try:
        yield
    finally:
        logger.removeFilter(caution)


class _DropMessage(logging.Filter):
    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(self.prefix)
