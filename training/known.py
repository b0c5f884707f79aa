"""Scores of a model on rows it has predicted before: the known rows' predictions are reused, only the others are
predicted.

A fitted model's prediction of a row depends on that row's feature values alone, so a row with the same values in
the same feature columns gets the same prediction whatever table or holdout it is in. Each row is keyed by those
values (128 bits: two seeded 64-bit hashes, so two different rows sharing a key is not a practical concern); a
model's predictions kept by key answer the rows it has seen, and the model is loaded and predicts only the rest.
The scores are computed on the whole frame's predictions in its own row order, as `training.model.score` computes
them: the same numbers. A table that grew by a batch keeps most of its holdout rows from one run to the next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from training._scores import Predictions, check_labels, predictions_of
from training.model import Scored, scored
from training.spec import TrainingSpec

__all__ = ["KnownPredictions", "row_keys", "score_known"]

_SALTS = ("kintsugi-rowkey1", "kintsugi-rowkey2")  # pandas' hash keys: 16 bytes each


@dataclass(frozen=True)
class KnownPredictions:
    """A model's predictions of rows, one per distinct row key (`row_keys`)."""

    keys: np.ndarray  # (rows, 2) uint64
    said: Predictions

    def __post_init__(self) -> None:
        rows = len(self.keys)
        if self.keys.shape != (rows, 2) or len(self.said.predicted) != rows:
            raise ValueError(f"{rows} row keys for {len(self.said.predicted)} predictions")
        if self.said.proba is not None and len(self.said.proba) != rows:
            raise ValueError(f"{rows} row keys for {len(self.said.proba)} rows of probabilities")

    @classmethod
    def of(cls, keys: np.ndarray, said: Predictions) -> KnownPredictions:
        """`said` of the rows keyed `keys`, each distinct key once (a repeated row has one prediction)."""
        first = ~pd.MultiIndex.from_arrays([keys[:, 0], keys[:, 1]]).duplicated()
        return cls(keys[first], _rows(said, np.flatnonzero(first)))


def row_keys(spec: TrainingSpec, df: pd.DataFrame) -> np.ndarray:
    """The key of each row of ``df``: its values in the spec's feature columns, in order, as an (rows, 2) uint64
    array. Values of another type (an integer column read as floats) give another key: a miss, never a wrong hit."""
    features = df[list(spec.features)]
    hashes = [pd.util.hash_pandas_object(features, index=False, hash_key=salt).to_numpy() for salt in _SALTS]
    return np.column_stack(hashes).astype(np.uint64, copy=False)


def score_known(
    spec: TrainingSpec,
    df: pd.DataFrame,
    keys: np.ndarray,
    known: KnownPredictions | None,
    model_of: Callable[[], Any],
) -> tuple[Scored, int]:
    """(what `training.model.score(spec, model_of(), df)` says, the rows the model predicted): the rows of ``df``
    (keyed ``keys``) that ``known`` holds take its predictions; `model_of` loads the model only if others remain."""
    where = _positions(known, keys)
    missing = np.flatnonzero(where < 0)

    def said_of(rows: pd.DataFrame) -> Predictions:
        if known is not None and not missing.size:
            said = _rows(known.said, where)
        else:
            said = _predicted(spec, model_of(), rows[spec.features], known, where, missing)
        if said.classes is not None:  # as `predict` does, on every row of the holdout
            check_labels(said.classes, rows[spec.target])
        return said

    return scored(spec, df, said_of), int(missing.size)


def _predicted(
    spec: TrainingSpec,
    model: Any,
    features: pd.DataFrame,
    known: KnownPredictions | None,
    where: np.ndarray,
    missing: np.ndarray,
) -> Predictions:
    """The model's predictions of the rows at ``missing``, the others taken from ``known``."""
    if known is None or len(missing) == len(features):
        return predictions_of(spec.task, model, features)
    fresh = predictions_of(spec.task, model, features.iloc[missing])
    if not _same_classes(known.said.classes, fresh.classes):  # kept from other classes: none of them is reused
        return predictions_of(spec.task, model, features)
    return _merged(known.said, where, fresh, missing)


def _positions(known: KnownPredictions | None, keys: np.ndarray) -> np.ndarray:
    """For each key, its row in ``known`` or -1."""
    if known is None or not len(known.keys):
        return np.full(len(keys), -1, dtype=np.intp)
    kept = pd.MultiIndex.from_arrays([known.keys[:, 0], known.keys[:, 1]])
    return np.asarray(kept.get_indexer(pd.MultiIndex.from_arrays([keys[:, 0], keys[:, 1]])), dtype=np.intp)


def _rows(said: Predictions, rows: np.ndarray) -> Predictions:
    return Predictions(said.predicted[rows], None if said.proba is None else said.proba[rows], said.classes)


def _merged(known: Predictions, where: np.ndarray, fresh: Predictions, missing: np.ndarray) -> Predictions:
    """The known rows' predictions with the fresh ones (of the rows at ``missing``) in their places."""
    predicted = np.empty(len(where), dtype=np.result_type(known.predicted, fresh.predicted))
    predicted[where >= 0] = known.predicted[where[where >= 0]]
    predicted[missing] = fresh.predicted
    if known.proba is None or fresh.proba is None:
        return Predictions(predicted)
    proba = np.empty((len(where), fresh.proba.shape[1]), dtype=np.result_type(known.proba, fresh.proba))
    proba[where >= 0] = known.proba[where[where >= 0]]
    proba[missing] = fresh.proba
    return Predictions(predicted, proba, fresh.classes)


def _same_classes(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
