"""A model version's predictions of the holdout rows it last saw, kept in the workspace so that a later run whose
champion it is predicts only the rows it has not seen (`training.known`): the same table again, or the table grown
by a batch, whose holdout keeps most of its rows.

Keyed strictly by what decides a row's prediction: the model and version, the MLflow run that made the version (a
replaced store with the same version number is another model), the task and the feature columns in order; rows are
keyed by their feature values. A candidate's predictions are kept when it is registered (the next run's champion),
a champion's whenever it predicted rows it had not seen; each version keeps the holdout it predicted last (one file,
replaced), and only the champion's and the newest candidate's files are kept (any other version is a former
champion or a candidate that was not promoted: predicted in full should it ever be the champion again). A file that is missing, unreadable or does not match is a miss: every row is predicted again. Only
numeric, boolean or text predictions are kept (no pickles); a classifier with other labels predicts every time. The
files are a cache, not a record: no run's ledger names them, and removing the folder only costs predictions.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from controlplane.workspace import Workspace
from training.known import KnownPredictions
from training.model import Predictions

__all__ = ["PredictionsKey", "load_known", "save_known"]

_FORMAT = 2
_ARRAYS = ("predicted", "proba", "classes")


@dataclass(frozen=True)
class PredictionsKey:
    """What a version's prediction of a row depends on, beside the row's feature values."""

    model: str
    version: int
    mlflow_run: str
    task: str
    features: tuple[str, ...]

    def document(self) -> dict[str, Any]:
        return {"format": _FORMAT, **{k: list(v) if isinstance(v, tuple) else v for k, v in vars(self).items()}}

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.document(), sort_keys=True).encode()).hexdigest()


def _folder(ws: Workspace) -> Path:
    return ws.cache / "champion-predictions"


def _model_tag(model: str) -> str:
    return hashlib.sha256(model.encode()).hexdigest()[:16]


def _path(ws: Workspace, key: PredictionsKey) -> Path:
    return _folder(ws) / f"{_model_tag(key.model)}-v{key.version}-{key.digest[:32]}.npz"


def load_known(ws: Workspace, key: PredictionsKey) -> KnownPredictions | None:
    """The kept predictions for `key`, or None (absent, unreadable, or another key's)."""
    try:
        with np.load(_path(ws, key), allow_pickle=False) as kept:
            if json.loads(str(kept["key"])) != key.document():
                return None
            keys = np.asarray(kept["rows"], dtype=np.uint64)
            arrays = {name: kept[name] if name in kept.files else None for name in _ARRAYS}
        predicted = arrays["predicted"]
        if predicted is None:
            return None
        return KnownPredictions(keys, Predictions(predicted, arrays["proba"], arrays["classes"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_known(
    ws: Workspace, key: PredictionsKey, rows: np.ndarray, said: Predictions, *, keep: Iterable[int] = ()
) -> None:
    """Keep `said` of the rows keyed `rows` under `key` (atomically, replacing the version's earlier rows) and drop
    the files of the model's versions other than this one and `keep`; predictions that need pickling to be kept
    are not kept."""
    arrays = {
        name: value
        for name in _ARRAYS
        if (value := getattr(said, name)) is not None and np.asarray(value).dtype != object
    }
    if "predicted" in arrays and all(getattr(said, n) is None or n in arrays for n in _ARRAYS):
        known = KnownPredictions.of(rows, said)
        _write(_path(ws, key), key, known.keys, {name: getattr(known.said, name) for name in arrays})
    _prune(ws, key.model, {key.version, *keep})


def _prune(ws: Workspace, model: str, versions: set[int]) -> None:
    for path in _folder(ws).glob(f"{_model_tag(model)}-v*-*.npz"):
        version = path.name.split("-")[1].removeprefix("v")
        if not (version.isdigit() and int(version) in versions):
            path.unlink(missing_ok=True)


def _write(path: Path, key: PredictionsKey, rows: np.ndarray, arrays: dict[str, Any]) -> None:
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".predictions-", suffix=".npz")
        with os.fdopen(handle, "wb") as out:
            np.savez(out, key=np.array(json.dumps(key.document(), sort_keys=True)), rows=rows, **arrays)
        os.replace(temporary, path)
    except OSError:  # a cache that cannot be written costs only predictions next time
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
