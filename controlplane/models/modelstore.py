"""The one door to training and the MLflow store: opens the workspace's store and maps training's errors.

`training` raises its own tree (SpecError, RegistryError, TrainingError); here, and only here, they become the
control plane's: a bad estimator or params is a SpecError, an MLflow failure a RegistryError, data that cannot
be trained or scored (a holdout too small, one class only...) a TrainingFailed.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from controlplane.errors import RegistryError, SpecError, TrainingFailed
from controlplane.workspace import Workspace
from training import errors as training_errors

if TYPE_CHECKING:
    from training.registry import ModelStore

__all__ = ["training_errors_mapped", "open_store"]


@contextmanager
def training_errors_mapped() -> Iterator[None]:
    try:
        yield
    except training_errors.SpecError as exc:
        raise SpecError(exc.message, exc.fix) from exc
    except training_errors.RegistryError as exc:
        raise RegistryError(exc.message, exc.fix) from exc
    except training_errors.TrainingError as exc:
        raise TrainingFailed(exc.message, exc.fix) from exc


def open_store(ws: Workspace) -> ModelStore:
    """The workspace's MLflow store, checked to be this workspace's (imported lazily: MLflow is slow to import)."""
    from controlplane.runs.identity import check_mlflow_store
    from training.registry import ModelStore

    with training_errors_mapped():
        store = ModelStore(ws.mlflow_uri, ws.artifacts)
    check_mlflow_store(ws, store)
    return store
