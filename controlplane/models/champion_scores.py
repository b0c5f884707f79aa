"""The champion's scores on a holdout, kept in the workspace so a later run on the same table and champion does not
load and predict with it again.

Keyed strictly: the model and version, the MLflow run that made the version (a replaced store with the same version
number is another model), the content hash of the table the holdout comes from, and everything that decides which
rows the holdout holds and what is scored on them (task, target, features, time column, holdout fraction, the row
budget, seed and engine of a sample). A key is a file name; the file repeats its key and its row count, and any file
that is missing, unreadable or does not match is a miss: the champion is scored again. Only numeric, boolean or text
predictions are kept (no pickles); a classifier with other labels is scored every time. The files are a cache, not a
record: no run's ledger names them, and removing the folder only costs a scoring.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from controlplane.workspace import Workspace
from training.model import Predictions, Scored

__all__ = ["ScoresKey", "load_scores", "save_scores"]

_FORMAT = 1
_ARRAYS = ("predicted", "proba", "classes")


@dataclass(frozen=True)
class ScoresKey:
    """What the champion's scores on a holdout depend on."""

    model: str
    version: int
    mlflow_run: str
    table_hash: str
    task: str
    target: str
    features: tuple[str, ...]
    time_column: str
    holdout_fraction: float
    row_budget: int
    seed: int
    engine: str

    def document(self) -> dict[str, Any]:
        return {"format": _FORMAT, **{k: list(v) if isinstance(v, tuple) else v for k, v in vars(self).items()}}

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.document(), sort_keys=True).encode()).hexdigest()


def _path(ws: Workspace, key: ScoresKey) -> Path:
    return ws.cache / "champion-scores" / f"{key.digest}.npz"


def load_scores(ws: Workspace, key: ScoresKey, rows: int) -> Scored | None:
    """The kept scores for `key` on a holdout of `rows` rows, or None (absent, unreadable, or another key's)."""
    try:
        with np.load(_path(ws, key), allow_pickle=False) as kept:
            if json.loads(str(kept["key"])) != key.document():
                return None
            metrics = {str(k): float(v) for k, v in json.loads(str(kept["metrics"])).items()}
            arrays = {name: kept[name] if name in kept.files else None for name in _ARRAYS}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    predicted = arrays["predicted"]
    if predicted is None or len(predicted) != rows or (arrays["proba"] is not None and len(arrays["proba"]) != rows):
        return None
    return Scored(metrics, Predictions(predicted, arrays["proba"], arrays["classes"]))


def save_scores(ws: Workspace, key: ScoresKey, scored: Scored) -> None:
    """Keep `scored` under `key` (atomically); predictions that need pickling to be kept are not kept."""
    arrays = {
        name: value
        for name in _ARRAYS
        if (value := getattr(scored.said, name)) is not None and np.asarray(value).dtype != object
    }
    if "predicted" not in arrays or any(getattr(scored.said, n) is not None and n not in arrays for n in _ARRAYS):
        return
    path = _path(ws, key)
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".scores-", suffix=".npz")
        with os.fdopen(handle, "wb") as out:
            np.savez(
                out,
                key=np.array(json.dumps(key.document(), sort_keys=True)),
                metrics=np.array(json.dumps(scored.metrics, sort_keys=True)),
                **arrays,
            )
        os.replace(temporary, path)
    except OSError:  # a cache that cannot be written costs only a scoring next time
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
