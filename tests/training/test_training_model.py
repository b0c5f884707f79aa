"""Time holdout, estimator building, fit/evaluate determinism and champion comparison."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder

from training.errors import SpecError, TrainingError
from training.model import (
    build_estimator,
    evaluate,
    fit,
    gain_error_of,
    is_better,
    leaned_on,
    relative_gain,
    score,
    time_holdout,
    training_rows_key,
)
from training.spec import TrainingSpec

SpecFactory = Callable[..., TrainingSpec]

# -- time_holdout --------------------------------------------------------------------------


def test_holdout_is_the_latest_rows(deliveries: pd.DataFrame) -> None:
    train, holdout = time_holdout(deliveries, "event_time", 0.2)
    assert (len(train), len(holdout)) == (320, 80)
    assert train["event_time"].max() < holdout["event_time"].min()
    assert holdout["event_time"].min() == deliveries["event_time"].sort_values().iloc[320]
    assert train["event_time"].is_monotonic_increasing
    assert holdout["event_time"].is_monotonic_increasing


def test_holdout_is_deterministic_whatever_the_row_order(deliveries: pd.DataFrame) -> None:
    first = time_holdout(deliveries, "event_time", 0.25)
    again = time_holdout(deliveries, "event_time", 0.25)
    reshuffled = time_holdout(deliveries.sample(frac=1.0, random_state=99), "event_time", 0.25)
    for left, right in ((first, again), (first, reshuffled)):
        pd.testing.assert_frame_equal(left[0], right[0])
        pd.testing.assert_frame_equal(left[1], right[1])


def test_rows_sharing_the_boundary_timestamp_all_go_to_the_holdout() -> None:
    times = pd.to_datetime(["2024-01-01"] * 3 + ["2024-01-02"] * 4 + ["2024-01-03"] * 3)
    df = pd.DataFrame({"t": times, "x": range(10)}).iloc[::-1]
    train, holdout = time_holdout(df, "t", 0.5)
    assert sorted(train["x"]) == [0, 1, 2]
    assert sorted(holdout["x"]) == [3, 4, 5, 6, 7, 8, 9]


def _periods(count: int, rows: int = 4) -> pd.DataFrame:
    """A panel: `rows` entities, one row each per period, every row of a period on one timestamp."""
    times = pd.date_range("2024-01-01", periods=count, freq="MS", tz="UTC").repeat(rows)
    values = np.arange(count * rows, dtype=float)
    return pd.DataFrame({"event_time": times, "distance_km": values, "delivery_minutes": values % 7})


def test_a_periodic_table_one_period_longer_can_train_on_the_same_rows_and_the_key_says_so(
    spec_factory: SpecFactory,
) -> None:
    spec = spec_factory(numeric_features=["distance_km"], categorical_features=[])
    keys = [training_rows_key(spec, time_holdout(_periods(n), "event_time", 0.2)[0]) for n in (4, 5, 6, 7)]
    # 0.8 of the periods train: 3.2, 4.0, 4.8, 5.6 -> the boundary period is the 4th, 5th, 5th, 6th
    assert keys[1] == keys[2] and len({keys[0], keys[1], keys[3]}) == 3


def test_the_training_rows_key_follows_every_value_their_order_and_the_spec_not_unread_columns(
    spec_factory: SpecFactory, deliveries: pd.DataFrame
) -> None:
    spec = spec_factory()
    key = training_rows_key(spec, deliveries)
    assert training_rows_key(spec, deliveries.sort_values("event_time")) != key  # a fit can depend on the order
    assert training_rows_key(spec, deliveries.copy()) == key
    nudged = deliveries.copy()
    nudged.iloc[5, nudged.columns.get_loc("weight_kg")] += 1e-9
    assert training_rows_key(spec, nudged) != key
    assert training_rows_key(spec_factory(seed=4), deliveries) != key
    assert training_rows_key(spec, deliveries.assign(unread=1)) == key  # a column the spec does not read


def test_iso_strings_split_like_timestamps(deliveries: pd.DataFrame) -> None:
    as_text = deliveries.assign(event_time=deliveries["event_time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
    _, holdout = time_holdout(deliveries, "event_time", 0.2)
    _, text_holdout = time_holdout(as_text, "event_time", 0.2)
    assert list(text_holdout.index) == list(holdout.index)


@pytest.mark.parametrize(
    ("times", "expected"),
    [
        (["2024-01-01", None, "2024-01-03"], "1 row(s) have no 't' timestamp"),
        (["2024-01-01", "yesterday", "2024-01-03"], "column 't' has values that do not parse"),
        (["2024-01-01"] * 3, "every row of 't' is at or after the holdout boundary"),
        (["2024-01-01"], "cannot split 1 row(s)"),
    ],
)
def test_unsplittable_time_column_is_refused(times: list[str | None], expected: str) -> None:
    with pytest.raises(TrainingError) as info:
        time_holdout(pd.DataFrame({"t": times}), "t", 0.5)
    assert info.value.message.startswith(expected)


@pytest.mark.parametrize("fraction", [0, 1, 1.5, -0.1, "0.2"])
def test_holdout_fraction_must_be_a_fraction(deliveries: pd.DataFrame, fraction: object) -> None:
    with pytest.raises(SpecError, match="holdout fraction must be"):
        time_holdout(deliveries, "event_time", fraction)  # type: ignore[arg-type]


def test_holdout_needs_the_time_column(deliveries: pd.DataFrame) -> None:
    with pytest.raises(SpecError, match="lacks columns named in the spec: ts"):
        time_holdout(deliveries, "ts", 0.2)


# -- build_estimator -----------------------------------------------------------------------


def test_build_preprocesses_then_seeds_the_estimator(spec_factory: SpecFactory) -> None:
    pipeline = build_estimator(spec_factory("regression", seed=11))
    assert [name for name, _ in pipeline.steps] == ["preprocess", "model"]
    pre = pipeline.named_steps["preprocess"]
    assert isinstance(pre, ColumnTransformer)
    numeric, categorical = pre.transformers[0], pre.transformers[1]
    assert numeric[1].strategy == "median" and numeric[2] == ["distance_km", "weight_kg"]
    impute, onehot = categorical[1].steps
    assert impute[1].strategy == "most_frequent"
    assert isinstance(onehot[1], OneHotEncoder) and onehot[1].handle_unknown == "ignore"
    assert pipeline.named_steps["model"].random_state == 11
    assert pipeline.named_steps["model"].n_estimators == 15


def test_params_win_over_the_seed(spec_factory: SpecFactory) -> None:
    spec = spec_factory("regression", params={"random_state": 5})
    assert build_estimator(spec).named_steps["model"].random_state == 5


def test_estimators_without_random_state_build(spec_factory: SpecFactory) -> None:
    spec = spec_factory("regression", estimator="sklearn.linear_model.Ridge", params={})
    assert isinstance(build_estimator(spec), Pipeline)


FACTORIES = """
from sklearn.ensemble import RandomForestRegressor
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler


def scaled_forest(n_estimators):
    return Pipeline(
        [("scale", StandardScaler()), ("forest", RandomForestRegressor(n_estimators=n_estimators))]
    )


def seeded_forest(n_estimators, random_state=None):
    return RandomForestRegressor(n_estimators=n_estimators, random_state=random_state)
"""


@pytest.fixture
def factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "kintsugi_test_factories.py").write_text(FACTORIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "kintsugi_test_factories"


def test_pipeline_factory_gets_its_nested_steps_seeded(spec_factory: SpecFactory, factories: str) -> None:
    spec = spec_factory("regression", estimator=f"{factories}:scaled_forest", params={"n_estimators": 4})
    model = build_estimator(spec).named_steps["model"]
    assert isinstance(model, Pipeline)
    assert model.get_params()["forest__random_state"] == spec.seed
    assert model.get_params()["forest__n_estimators"] == 4


def test_factory_accepting_random_state_gets_the_seed(spec_factory: SpecFactory, factories: str) -> None:
    spec = spec_factory("regression", estimator=f"{factories}.seeded_forest", params={"n_estimators": 4})
    assert build_estimator(spec).named_steps["model"].random_state == spec.seed


@pytest.mark.parametrize(
    ("estimator", "params", "message"),
    [
        (
            "sklearn.ensemble.NoSuchForest",
            {},
            "cannot import estimator 'sklearn.ensemble.NoSuchForest'",
        ),
        ("no_such_package.Model", {}, "cannot import estimator 'no_such_package.Model'"),
        ("RandomForestRegressor", {}, "estimator 'RandomForestRegressor' is not an import path"),
        ("sklearn.__version__", {}, "estimator 'sklearn.__version__' is a str"),
        (
            "sklearn.ensemble.RandomForestRegressor",
            {"n_trees": 5},
            "estimator 'sklearn.ensemble.RandomForestRegressor' rejected params",
        ),
        (
            "sklearn.ensemble.RandomForestRegressor",
            {"n_estimators": -1},
            "estimator 'sklearn.ensemble.RandomForestRegressor' rejected its params",
        ),
        ("sklearn.base.clone", {}, "estimator 'sklearn.base.clone' rejected params"),
    ],
)
def test_bad_estimator_is_a_spec_error_naming_the_fix(
    spec_factory: SpecFactory, estimator: str, params: dict[str, object], message: str
) -> None:
    with pytest.raises(SpecError) as info:
        build_estimator(spec_factory("regression", estimator=estimator, params=params))
    assert info.value.message.startswith(message)
    assert info.value.fix


def test_unknown_param_error_lists_the_accepted_ones(spec_factory: SpecFactory) -> None:
    with pytest.raises(SpecError) as info:
        build_estimator(spec_factory("regression", params={"n_trees": 5}))
    assert "n_estimators" in info.value.fix and "max_depth" in info.value.fix


# -- fit / evaluate ------------------------------------------------------------------------


def _fit_and_score(spec: TrainingSpec, deliveries: pd.DataFrame) -> dict[str, float]:
    train, holdout = time_holdout(deliveries, spec.time_column, spec.holdout_fraction)
    return evaluate(spec, fit(spec, train), holdout)


def test_regression_scores_are_reproducible(regression_spec: TrainingSpec, deliveries: pd.DataFrame) -> None:
    first = _fit_and_score(regression_spec, deliveries)
    again = _fit_and_score(regression_spec, deliveries)
    assert first == again
    assert sorted(first) == ["mae", "r2", "rmse"]
    assert 0 < first["mae"] <= first["rmse"] and 0.5 < first["r2"] <= 1


def test_seed_changes_the_model(
    regression_spec: TrainingSpec, spec_factory: SpecFactory, deliveries: pd.DataFrame
) -> None:
    other = spec_factory("regression", seed=regression_spec.seed + 1)
    assert _fit_and_score(other, deliveries) != _fit_and_score(regression_spec, deliveries)


def test_classification_scores_are_reproducible(classification_spec: TrainingSpec, deliveries: pd.DataFrame) -> None:
    first = _fit_and_score(classification_spec, deliveries)
    again = _fit_and_score(classification_spec, deliveries)
    assert first == again
    assert sorted(first) == ["accuracy", "f1", "log_loss", "roc_auc"]
    assert 0.6 < first["roc_auc"] <= 1 and 0 < first["f1"] <= 1 and first["log_loss"] > 0


def test_multiclass_scores(spec_factory: SpecFactory, deliveries: pd.DataFrame) -> None:
    spec = spec_factory("classification", target="courier", categorical_features=["region"], metric="f1")
    scores = _fit_and_score(spec, deliveries)
    assert all(math.isfinite(v) for v in scores.values())


def test_unseen_categories_are_ignored_at_evaluation(regression_spec: TrainingSpec, deliveries: pd.DataFrame) -> None:
    train, holdout = time_holdout(deliveries, "event_time", 0.2)
    model = fit(regression_spec, train)
    scores = evaluate(regression_spec, model, holdout.assign(region="mars"))
    assert math.isfinite(scores["mae"])


def test_holdout_labels_must_match_the_model_classes(
    classification_spec: TrainingSpec, deliveries: pd.DataFrame
) -> None:
    train, holdout = time_holdout(deliveries, "event_time", 0.2)
    model = fit(classification_spec, train)
    with pytest.raises(TrainingError, match=r"the holdout lacks class\(es\) 0, so roc_auc"):
        evaluate(classification_spec, model, holdout.assign(late=1))
    with pytest.raises(TrainingError, match="labels the model never saw in training: 5"):
        evaluate(classification_spec, model, holdout.assign(late=5))


def test_classifier_without_probabilities_is_refused(spec_factory: SpecFactory, deliveries: pd.DataFrame) -> None:
    spec = spec_factory("classification", estimator="sklearn.svm.LinearSVC", params={})
    with pytest.raises(SpecError, match="has no predict_proba"):
        _fit_and_score(spec, deliveries)


def test_fit_needs_the_spec_columns(regression_spec: TrainingSpec, deliveries: pd.DataFrame) -> None:
    with pytest.raises(SpecError, match="lacks columns named in the spec: courier"):
        fit(regression_spec, deliveries.drop(columns=["courier"]))


def test_missing_target_values_fail_the_fit(regression_spec: TrainingSpec, deliveries: pd.DataFrame) -> None:
    broken = deliveries.assign(delivery_minutes=np.nan)
    with pytest.raises(TrainingError) as info:
        fit(regression_spec, broken)
    assert info.value.message.startswith("fitting sklearn.ensemble.RandomForestRegressor on 400")
    assert isinstance(info.value.__cause__, ValueError)


# -- comparing with the champion -----------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "candidate", "champion", "gain"),
    [
        ("mae", 8.0, 10.0, 0.2),
        ("mae", 12.0, 10.0, -0.2),
        ("r2", 0.9, 0.8, 0.125),
        ("r2", 0.7, 0.8, -0.125),
        ("r2", -0.2, -0.5, 0.6),
        ("log_loss", 0.5, 0.5, 0.0),
        ("r2", 0.3, 0.0, math.inf),
        ("mae", 0.1, 0.0, -math.inf),
    ],
)
def test_relative_gain_is_positive_when_the_candidate_is_better(
    metric: str, candidate: float, champion: float, gain: float
) -> None:
    assert relative_gain(metric, candidate, champion) == pytest.approx(gain)


def test_is_better_respects_direction_and_min_gain() -> None:
    assert is_better("rmse", 9.0, 10.0)
    assert not is_better("rmse", 11.0, 10.0)
    assert is_better("accuracy", 0.9, 0.8)
    assert not is_better("accuracy", 0.8, 0.8)
    assert not is_better("rmse", 9.5, 10.0, min_gain=0.1)
    assert is_better("rmse", 8.5, 10.0, min_gain=0.1)


def test_missing_scores_are_never_better() -> None:
    with pytest.raises(TrainingError, match="candidate mae is nan"):
        is_better("mae", math.nan, 1.0)
    with pytest.raises(SpecError, match="min_gain must be a non-negative fraction"):
        is_better("mae", 1.0, 2.0, min_gain=-0.5)
    with pytest.raises(SpecError, match="unknown metric"):
        relative_gain("mape", 1.0, 2.0)


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_the_gains_sampling_error_shrinks_with_the_holdout_and_is_seeded(
    deliveries: pd.DataFrame, spec_factory: SpecFactory, task: str
) -> None:
    spec = spec_factory(task)
    train, holdout = time_holdout(deliveries, "event_time", 0.5)
    candidate, champion = fit(spec, train), fit(spec_factory(task, seed=spec.seed + 1), train.iloc[::2])

    def error(rows: int, *models: object) -> float:
        part = holdout.iloc[:rows]
        return gain_error_of(spec, part, *(score(spec, m, part).said for m in models))

    small, large = error(40, candidate, champion), error(200, candidate, champion)
    assert 0 < large < small  # the error of a gain falls as the holdout grows (about 1/sqrt(rows))
    assert error(40, candidate, champion) == small  # the same resamples every time
    assert error(len(holdout), candidate, candidate) == 0.0  # one model against itself: no spread at all


# -- leaned_on -----------------------------------------------------------------------------


def test_the_features_a_model_leans_on_are_those_whose_shuffling_costs_the_score(
    deliveries: pd.DataFrame, regression_spec: TrainingSpec
) -> None:
    train, holdout = time_holdout(deliveries, "event_time", 0.25)
    model = fit(regression_spec, train)
    found = leaned_on(regression_spec, model, holdout)
    assert found[0] == "distance_km"  # 4 minutes a km: most of the label's spread
    assert "weight_kg" not in found  # 0.3 minutes a kg: a feature the model could do without
    assert leaned_on(regression_spec, model, holdout) == found  # seeded: the same answer every time


def test_on_many_features_group_testing_finds_the_features_shuffling_each_alone_finds(
    spec_factory: SpecFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 features, three carrying the label (51%, 29% and 20% of what they explain) and 197 a trace each: the
    groups find the three that shuffling every feature alone finds, in their order, at under half the scores (the
    groups' cost does not grow with the features: at 1,000, a tenth)."""
    import training.model as model_module

    rng = np.random.default_rng(11)
    rows, width = 1200, 200
    features = [f"x{i:03d}" for i in range(width)]
    frame = pd.DataFrame(rng.normal(0, 1, (rows, width)), columns=features)
    weights = np.full(width, 0.05)
    weights[[5, 77, 150]] = [4.0, 3.0, 2.5]
    frame["y"] = frame[features].to_numpy() @ weights + rng.normal(0, 0.5, rows)
    frame["t"] = pd.date_range("2024-01-01", periods=rows, freq="h", tz="UTC")
    spec = spec_factory(
        target="y", numeric_features=features, categorical_features=[], time_column="t",
        estimator="sklearn.linear_model.LinearRegression", params={},
    )  # fmt: skip
    train, holdout = time_holdout(frame, "t", 0.25)

    class Counted(Pipeline):
        scores = 0

        def score(self, X, y=None, **kwargs):  # type: ignore[no-untyped-def, override]
            Counted.scores += 1
            return super().score(X, y, **kwargs)

    model = Counted(fit(spec, train).steps)
    grouped = leaned_on(spec, model, holdout)
    by_groups, Counted.scores = Counted.scores, 0
    monkeypatch.setattr(model_module, "EXACT_IMPORTANCE_FEATURES", width)
    alone = leaned_on(spec, model, holdout)
    assert grouped == alone == ("x005", "x077", "x150")
    assert by_groups * 2.5 <= Counted.scores, (by_groups, Counted.scores)


def _openmp_threads() -> int:
    """The OpenMP threads a parallel region started from this thread would use now."""
    from threadpoolctl import threadpool_info

    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "openmp"), default=1)


def test_the_holdout_and_the_importances_are_predicted_on_one_thread_with_the_same_predictions(
    deliveries: pd.DataFrame, spec_factory: SpecFactory
) -> None:
    """A tree ensemble's prediction is one OpenMP region per tree, each ending at a barrier; on a busy machine
    every barrier waits for a descheduled thread. Scoring and the permutation importances predict on one thread
    (the predictions are the same) and the thread count is the fit's again after them."""
    spec = spec_factory(estimator="sklearn.ensemble.HistGradientBoostingRegressor", params={"max_iter": 30})
    train, holdout = time_holdout(deliveries, "event_time", 0.25)
    fitted = fit(spec, train)
    threads = _openmp_threads()
    if threads < 2:
        pytest.skip("OpenMP runs one thread here: there is nothing to limit")

    class Watched(Pipeline):
        seen: list[int] = []

        def predict(self, X, **kwargs):  # type: ignore[no-untyped-def, override]
            Watched.seen.append(_openmp_threads())
            return super().predict(X, **kwargs)

        def score(self, X, y=None, **kwargs):  # type: ignore[no-untyped-def, override]
            Watched.seen.append(_openmp_threads())  # permutation importance scores through the pipeline
            return super().score(X, y, **kwargs)

    model = Watched(fitted.steps)
    scored = score(spec, model, holdout)
    leaned_on(spec, model, holdout)
    assert len(Watched.seen) > 1 and set(Watched.seen) == {1}
    assert _openmp_threads() == threads
    assert np.array_equal(scored.said.predicted, fitted.predict(holdout[spec.features]))  # on `threads` threads


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_a_large_holdout_is_predicted_in_parts_one_per_core_with_the_same_predictions(
    deliveries: pd.DataFrame, spec_factory: SpecFactory, task: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past PART_ROWS rows a part, the holdout is cut into one part per core, each predicted in a pool thread on
    one OpenMP thread; the predictions are the whole holdout's, in its order."""
    import threading

    import training._threads as threads

    spec = spec_factory(task)
    train, holdout = time_holdout(deliveries, "event_time", 0.25)
    fitted = fit(spec, train)
    seen: list[tuple[str, int, int]] = []  # (thread, OpenMP threads, rows) of each call

    class Watched(Pipeline):
        def predict(self, X, **kwargs):  # type: ignore[no-untyped-def, override]
            seen.append((threading.current_thread().name, _openmp_threads(), len(X)))
            return super().predict(X, **kwargs)

    monkeypatch.setattr(threads, "PART_ROWS", len(holdout) // 8)
    scored = score(spec, Watched(fitted.steps), holdout)
    features = holdout[spec.features]
    assert np.array_equal(scored.said.predicted, fitted.predict(features))
    if task == "classification":
        assert scored.said.proba is not None and np.array_equal(scored.said.proba, fitted.predict_proba(features))
    assert {openmp for _, openmp, _ in seen} == {1}
    parts = min(threads.cores(), 8)
    assert len(seen) == parts and sum(rows for _, _, rows in seen) == len(holdout)  # a call a part, every row once
    if parts > 1:  # in the pool's threads (which of them takes a part is the scheduler's), not the caller's
        assert all(name.startswith("predict") for name, _, _ in seen), seen


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_the_gains_error_on_evenly_spaced_rows_is_scaled_to_the_whole_holdout(
    deliveries: pd.DataFrame, spec_factory: SpecFactory, task: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import training.model as model

    spec = spec_factory(task)
    train, holdout = time_holdout(deliveries, "event_time", 0.5)
    candidate, champion = fit(spec, train), fit(spec_factory(task, seed=spec.seed + 1), train.iloc[::2])
    said = [score(spec, m, holdout).said for m in (candidate, champion)]
    whole = gain_error_of(spec, holdout, *said)
    monkeypatch.setattr(model, "GAIN_ROWS", 30)  # every n-th row, its spread scaled by sqrt(30 / rows)
    spaced = gain_error_of(spec, holdout, *said)
    assert 0 < spaced and abs(spaced - whole) < whole  # the same order: an estimate of the same error
    with pytest.raises(TrainingError, match="predictions cover"):
        gain_error_of(spec, holdout.iloc[:-1], *said)
