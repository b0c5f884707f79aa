"""Split, build, fit and score scikit-learn models from a TrainingSpec. Pure: no MLflow."""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import InvalidParameterError

from training._estimator import make_estimator
from training._scores import Predictions, predict, score_of, scores_of
from training._threads import one_thread
from training.errors import SpecError, TrainingError
from training.spec import TrainingSpec, metric_direction

__all__ = [
    "Predictions",
    "Scored",
    "build_estimator",
    "evaluate",
    "score",
    "scored",
    "fit",
    "gain_error_of",
    "is_better",
    "leaned_on",
    "relative_gain",
    "time_holdout",
    "training_rows_key",
]

# A feature the model leans on holds at least this share of the holdout score the features explain between them
# (permutation importance: the score lost when that feature's values are shuffled). With k features of equal use
# each holds 1/k, so up to ten equal features all count; a feature under 10% of the total is one the model could
# mostly do without, and a warning on it alone does not stop a better model from promoting.
LEAN_SHARE = 0.10
IMPORTANCE_ROWS = 2000  # holdout rows the importances are measured on (evenly spaced, so deterministic)
IMPORTANCE_REPEATS = 3
# Up to this many features each is shuffled alone (a score per feature and repeat). Beyond it, by group testing:
# the features in this many groups, each group shuffled as one; a group holding LEAN_SHARE of the groups' total is
# split IMPORTANCE_FAN_OUT ways, down to single features, and a group under it holds no feature the model leans on.
# The scores cost about (groups + leaned-on features x fan-out x depth) x repeats, not features x repeats (1,000
# features: 3,000 predictions of the holdout's rows became about 300).
EXACT_IMPORTANCE_FEATURES = 64
IMPORTANCE_FAN_OUT = 8
# The gain's sampling error is the spread of the gain over this many seeded resamples of the holdout's rows (both
# models scored on the same resample), on up to GAIN_ROWS evenly spaced holdout rows and scaled to the whole holdout
# by the square root of the row ratio, as a mean's error scales. 200 resamples put the error of the error at about 5%.
GAIN_RESAMPLES = 200
GAIN_ROWS = 5000


def time_holdout(df: pd.DataFrame, time_column: str, fraction: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split ``df`` by time: the rows from the ``1 - fraction`` row quantile on are the holdout.

    Rows are stably sorted by ``time_column`` (timestamps, numbers or ISO 8601 strings); the
    boundary is the timestamp of the ``round(len(df) * fraction)``-th row from the end, and
    every row at or after it is held out, so each training row is strictly earlier than each
    holdout row (ties can make the holdout a little larger than ``fraction``). Both frames
    keep the original index and come back in time order. Missing or unparseable timestamps,
    and a split that leaves no training rows, are TrainingErrors.
    """
    _check_fraction(fraction)
    _require_columns(df, [time_column], "the frame to split")
    if len(df) < 2:
        raise TrainingError(
            f"cannot split {len(df)} row(s) into training and holdout",
            "train on a table with at least two rows",
        )
    times = _time_values(df[time_column], time_column)
    order = np.argsort(times, kind="stable")
    ordered, sorted_times = df.iloc[order], times[order]
    n_holdout = max(1, round(len(df) * fraction))
    boundary = sorted_times[len(df) - n_holdout]
    cut = int(np.searchsorted(sorted_times, boundary, side="left"))
    if cut == 0:
        raise TrainingError(
            f"every row of {time_column!r} is at or after the holdout boundary {boundary}",
            "train on rows that span more than one timestamp or lower holdout_fraction",
        )
    return ordered.iloc[:cut], ordered.iloc[cut:]


def training_rows_key(spec: TrainingSpec, train_df: pd.DataFrame) -> str:
    """What a fit depends on, as one digest: the spec (estimator, params, columns, seed...) and the training rows'
    values in the columns it reads, in order. Two fits with one key are one model (`fit` is deterministic), so a
    candidate whose key is its champion's is the champion again; a quantile holdout of a periodic table trains
    on the same periods twice in a row about once in 1 / holdout_fraction runs."""
    columns = [c for c in dict.fromkeys([*spec.features, spec.target, spec.time_column]) if c in train_df]
    digest = hashlib.sha256(json.dumps(asdict(spec), sort_keys=True, default=str).encode())
    digest.update(json.dumps(columns).encode())
    digest.update(pd.util.hash_pandas_object(train_df[columns], index=False).to_numpy().tobytes())
    return digest.hexdigest()


def build_estimator(spec: TrainingSpec) -> Pipeline:
    """Preprocessing (median / most-frequent imputation, one-hot) then the spec's estimator."""
    estimator = make_estimator(spec.estimator, spec.params, spec.seed)
    return Pipeline([("preprocess", _preprocessor(spec)), ("model", estimator)])


def fit(spec: TrainingSpec, train_df: pd.DataFrame) -> Pipeline:
    """Build the spec's pipeline and fit it on ``train_df``."""
    _require_columns(train_df, [*spec.features, spec.target], "the training frame")
    pipeline = build_estimator(spec)
    fix = "check that the target has no missing values and the features have the expected types"
    with _sklearn_errors(f"fitting {spec.estimator} on {len(train_df)} rows", fix=fix):
        pipeline.fit(train_df[spec.features], train_df[spec.target])
    return pipeline


@dataclass(frozen=True)
class Scored:
    """A model's metrics on a holdout, and the predictions they were computed from (one predict per model)."""

    metrics: dict[str, float]
    said: Predictions


def score(spec: TrainingSpec, model: Any, df: pd.DataFrame) -> Scored:
    """Predict ``df`` once with ``model`` and score it: mae/rmse/r2, or accuracy/f1/roc_auc/log_loss."""
    return scored(spec, df, lambda rows: predict(spec.task, model, rows[spec.features], rows[spec.target]))


def scored(spec: TrainingSpec, df: pd.DataFrame, said_of: Callable[[pd.DataFrame], Predictions]) -> Scored:
    """Score the predictions ``said_of(df)`` makes of ``df``'s rows, checked and with errors named as `score`'s."""
    _require_columns(df, [*spec.features, spec.target], "the evaluation frame")
    if df.empty:
        raise TrainingError(
            "the evaluation frame has no rows",
            "evaluate on a non-empty holdout (check holdout_fraction and the table's time range)",
        )
    fix = "check the holdout's feature types against the training data"
    with _sklearn_errors(f"evaluating {spec.estimator} on {len(df)} rows", fix=fix), one_thread():
        said = said_of(df)
        scores = scores_of(np.asarray(df[spec.target]), said)
    bad = sorted(name for name, value in scores.items() if not math.isfinite(value))
    if bad:
        raise TrainingError(
            f"metrics {', '.join(bad)} are not finite on {len(df)} holdout rows",
            "evaluate on a larger holdout (raise holdout_fraction or add rows)",
        )
    return Scored(scores, said)


def evaluate(spec: TrainingSpec, model: Any, df: pd.DataFrame) -> dict[str, float]:
    """Score ``model`` on ``df``: mae/rmse/r2, or accuracy/f1/roc_auc/log_loss."""
    return score(spec, model, df).metrics


def leaned_on(spec: TrainingSpec, model: Any, holdout: pd.DataFrame) -> tuple[str, ...]:
    """The features the model leans on, by permutation importance on (up to IMPORTANCE_ROWS of) the holdout,
    most important first. Every feature when the importances cannot be measured (fail closed: each then counts)."""
    features = list(spec.features)
    if len(holdout) < 2 or not features:
        return tuple(features)
    step = max(1, len(holdout) // IMPORTANCE_ROWS)
    rows = holdout.iloc[::step].iloc[:IMPORTANCE_ROWS]
    try:
        with one_thread():  # dozens of predictions of a few thousand rows: threads cost more than they give
            means, total = _importances(spec, model, rows[features], rows[spec.target])
    except (ValueError, TypeError):
        return tuple(features)
    if total <= 0:
        return tuple(features)
    order = np.argsort(-means, kind="stable")
    return tuple(features[i] for i in order if means[i] >= LEAN_SHARE * total)


def _importances(spec: TrainingSpec, model: Any, X: pd.DataFrame, y: pd.Series) -> tuple[np.ndarray, float]:
    """(each feature's permutation importance, floored at 0; their total): each feature shuffled alone, or by
    group testing on more than EXACT_IMPORTANCE_FEATURES features."""
    from sklearn.inspection import permutation_importance

    if X.shape[1] > EXACT_IMPORTANCE_FEATURES:
        return _importances_by_groups(model, X, y, spec.seed)
    found = permutation_importance(model, X, y, n_repeats=IMPORTANCE_REPEATS, random_state=spec.seed)
    means = np.clip(np.nan_to_num(found.importances_mean, nan=0.0), 0.0, None)
    return means, float(means.sum())


def _importances_by_groups(model: Any, X: pd.DataFrame, y: pd.Series, seed: int) -> tuple[np.ndarray, float]:
    """(each feature's permutation importance where its groups held LEAN_SHARE of the total, else 0; the total):
    group testing over EXACT_IMPORTANCE_FEATURES groups of adjacent features, split IMPORTANCE_FAN_OUT ways."""
    rng = np.random.default_rng(seed)
    shuffles = [rng.permutation(len(X)) for _ in range(IMPORTANCE_REPEATS)]
    base = float(model.score(X, y))

    def loss(group: tuple[int, ...]) -> float:
        columns = [X.columns[i] for i in group]
        lost, mixed, kept = [], X.copy(), X[columns].to_numpy()
        for rows in shuffles:  # each shuffle overwrites the same columns whole
            mixed[columns] = kept[rows]
            lost.append(base - float(model.score(mixed, y)))
        return max(float(np.nan_to_num(np.mean(lost), nan=0.0)), 0.0)

    groups = _split(tuple(range(X.shape[1])), EXACT_IMPORTANCE_FEATURES)
    lost = {group: loss(group) for group in groups}
    total = sum(lost.values())
    means = np.zeros(X.shape[1])
    if total <= 0:
        return means, 0.0
    holding = [group for group in groups if lost[group] >= LEAN_SHARE * total]
    while holding:
        group = holding.pop()
        if len(group) == 1:
            means[group[0]] = lost[group]
            continue
        for part in _split(group, IMPORTANCE_FAN_OUT):
            lost[part] = loss(part)
            if lost[part] >= LEAN_SHARE * total:
                holding.append(part)
    return means, total


def _split(indices: tuple[int, ...], parts: int) -> list[tuple[int, ...]]:
    """``indices`` in up to ``parts`` runs of adjacent ones, of sizes as equal as they can be."""
    return [tuple(int(i) for i in run) for run in np.array_split(np.asarray(indices), min(parts, len(indices)))]


def gain_error_of(spec: TrainingSpec, holdout: pd.DataFrame, candidate: Predictions, champion: Predictions) -> float:
    """The sampling error of ``relative_gain(candidate, champion)`` on this holdout, as a fraction, from both models'
    predictions on the whole holdout (as `score` made them: no predict again).

    A paired bootstrap: GAIN_RESAMPLES seeded resamples of the holdout's rows, with replacement, both models
    scored on each; the error is the standard deviation of the gain across them (on a larger holdout, that of
    GAIN_ROWS evenly spaced rows, scaled by ``sqrt(GAIN_ROWS / rows)``). It says how far the gain could move on
    another holdout of the same size from the same period. ``nan`` when fewer than half the resamples can be
    scored (a class absent, a constant target): then no gain is within the error.
    """
    _require_columns(holdout, [spec.target], "the evaluation frame")
    for role, said in (("candidate", candidate), ("champion", champion)):
        if len(said.predicted) != len(holdout):
            raise TrainingError(
                f"the {role}'s predictions cover {len(said.predicted)} rows, the holdout {len(holdout)}",
                "score both models on the same holdout",
            )
    rows = _gain_rows(len(holdout))
    target = np.asarray(holdout[spec.target])[rows]
    return _bootstrap(spec, target, [_rows_of(candidate, rows), _rows_of(champion, rows)], len(holdout))


def _gain_rows(rows: int) -> np.ndarray:
    """The evenly spaced holdout rows (up to GAIN_ROWS) the gain's error is measured on."""
    return np.arange(0, rows, max(1, math.ceil(rows / GAIN_ROWS)))


def _bootstrap(spec: TrainingSpec, target: np.ndarray, said: list[Predictions], all_rows: int) -> float:
    rng = np.random.default_rng(spec.seed)
    gains = []
    for _ in range(GAIN_RESAMPLES):
        rows = rng.integers(0, len(target), len(target))
        gain = _gain_on(spec.metric, target[rows], [_rows_of(s, rows) for s in said])
        if gain is not None:
            gains.append(gain)
    if len(gains) < GAIN_RESAMPLES / 2:
        return math.nan
    return float(np.std(gains, ddof=1)) * math.sqrt(len(target) / all_rows)


def _rows_of(said: Predictions, rows: np.ndarray) -> Predictions:
    return Predictions(said.predicted[rows], None if said.proba is None else said.proba[rows], said.classes)


def _gain_on(metric: str, target: np.ndarray, said: list[Predictions]) -> float | None:
    """The relative gain on one resample, or None where a score is undefined on it."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            candidate, champion = (score_of(metric, target, s) for s in said)
        except ValueError:
            return None
    if not (math.isfinite(candidate) and math.isfinite(champion)):
        return None
    gain = relative_gain(metric, candidate, champion)
    return gain if math.isfinite(gain) else None


def relative_gain(metric: str, candidate: float, champion: float) -> float:
    """How much better ``candidate`` is than ``champion``, as a fraction of ``|champion|``.

    Positive means the candidate is better whatever the metric's direction; a zero champion
    gives ``inf`` or ``-inf`` unless the two are equal.
    """
    direction = metric_direction(metric)
    for role, value in (("candidate", candidate), ("champion", champion)):
        if not math.isfinite(value):
            raise TrainingError(
                f"{role} {metric} is {value}, not a finite number",
                "re-evaluate the model; a missing score cannot be compared",
            )
    improvement = candidate - champion if direction == "max" else champion - candidate
    if improvement == 0:
        return 0.0
    if champion == 0:
        return math.copysign(math.inf, improvement)
    return improvement / abs(champion)


def is_better(metric: str, candidate: float, champion: float, min_gain: float = 0.0) -> bool:
    """True if ``candidate`` beats ``champion`` by more than ``min_gain`` (a relative gain)."""
    if not (math.isfinite(min_gain) and min_gain >= 0):
        raise SpecError(
            f"min_gain must be a non-negative fraction, got {min_gain}",
            "set min_gain to 0.0 or a positive fraction such as 0.01 (1% better)",
        )
    return relative_gain(metric, candidate, champion) > min_gain


def _preprocessor(spec: TrainingSpec) -> ColumnTransformer:
    categorical = Pipeline(
        [
            ("impute", SimpleImputer(strategy="most_frequent")),
            ("onehot", OneHotEncoder(handle_unknown="ignore", sparse_output=False)),
        ]
    )
    transformers: list[tuple[str, Any, list[str]]] = []
    if spec.numeric_features:
        transformers.append(("numeric", SimpleImputer(strategy="median"), list(spec.numeric_features)))
    if spec.categorical_features:
        transformers.append(("categorical", categorical, list(spec.categorical_features)))
    return ColumnTransformer(transformers, remainder="drop")


@contextmanager
def _sklearn_errors(action: str, fix: str) -> Iterator[None]:
    """The one place scikit-learn's exceptions become TrainingError / SpecError."""
    try:
        yield
    except InvalidParameterError as exc:
        raise SpecError(f"{action} failed: {_text(exc)}", "fix the estimator params in the training spec") from exc
    except (ValueError, TypeError, ArithmeticError, IndexError, KeyError) as exc:
        raise TrainingError(f"{action} failed: {_text(exc)}", fix) from exc


def _text(exc: BaseException) -> str:
    return " ".join(str(exc).split()).rstrip(".")


def _check_fraction(fraction: float) -> None:
    if isinstance(fraction, bool) or not isinstance(fraction, (int, float)):
        raise SpecError(f"holdout fraction must be a number, got {fraction!r}", "use e.g. 0.2")
    if not 0 < fraction < 1:
        raise SpecError(f"holdout fraction must be between 0 and 1, got {fraction}", "use e.g. 0.2")


def _require_columns(df: pd.DataFrame, columns: Sequence[str], where: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise SpecError(
            f"{where} lacks columns named in the spec: {', '.join(missing)}",
            "fix the column names in the training spec or add the columns to the table",
        )


def _time_values(column: pd.Series, name: str) -> np.ndarray:
    """The time column as a sortable array; missing or unparseable timestamps are errors."""
    missing = int(column.isna().sum())
    if missing:
        raise TrainingError(
            f"{missing} row(s) have no {name!r} timestamp",
            "fill or drop rows with missing timestamps before training",
        )
    if pd.api.types.is_datetime64_any_dtype(column):
        return _as_utc_ns(column)
    if pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column):
        return np.asarray(column.to_numpy())
    try:
        parsed = pd.to_datetime(column, utc=True, format="ISO8601")
    except (ValueError, TypeError) as exc:
        raise TrainingError(
            f"column {name!r} has values that do not parse as ISO 8601 timestamps: {exc}",
            "store the time column as timestamps or ISO 8601 strings",
        ) from exc
    return _as_utc_ns(parsed)


def _as_utc_ns(column: pd.Series) -> np.ndarray:
    if getattr(column.dt, "tz", None) is not None:
        column = column.dt.tz_convert("UTC").dt.tz_localize(None)
    return np.asarray(column.to_numpy(dtype="datetime64[ns]"))
