"""TrainingSpec validation, metric directions and the error tree."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest

from training.errors import RegistryError, SpecError, TrainingError
from training.spec import TrainingSpec, metric_direction

SpecFactory = Callable[..., TrainingSpec]


@pytest.mark.parametrize(
    ("metric", "direction"),
    [
        ("mae", "min"),
        ("rmse", "min"),
        ("log_loss", "min"),
        ("r2", "max"),
        ("accuracy", "max"),
        ("roc_auc", "max"),
        ("f1", "max"),
    ],
)
def test_metric_direction(metric: str, direction: str) -> None:
    assert metric_direction(metric) == direction


def test_unknown_metric_names_the_valid_ones() -> None:
    with pytest.raises(SpecError) as info:
        metric_direction("mape")
    assert info.value.message == "unknown metric 'mape'"
    assert info.value.fix == "use one of: accuracy, f1, log_loss, mae, r2, rmse, roc_auc"


def test_error_str_is_message_then_fix() -> None:
    err = RegistryError("store down", "start it")
    assert str(err) == "store down; start it"
    assert isinstance(err, TrainingError)
    assert (err.message, err.fix) == ("store down", "start it")


def test_errors_survive_pickling() -> None:
    err = pickle.loads(pickle.dumps(SpecError("bad path", "fix it")))
    assert type(err) is SpecError
    assert str(err) == "bad path; fix it"


def test_valid_spec_builds(spec_factory: SpecFactory) -> None:
    spec = spec_factory("classification")
    assert spec.features == ["distance_km", "weight_kg", "region", "courier"]
    assert spec.holdout_fraction == 0.2


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"task": "ranking"}, "unknown task 'ranking'"),
        ({"metric": "accuracy"}, "metric 'accuracy' does not apply to a regression task"),
        ({"metric": "nope"}, "unknown metric 'nope'"),
        ({"holdout_fraction": 0.0}, "holdout_fraction must be between 0 and 1, got 0.0"),
        ({"holdout_fraction": 1.0}, "holdout_fraction must be between 0 and 1, got 1.0"),
        ({"numeric_features": [], "categorical_features": []}, "the spec names no feature"),
        ({"numeric_features": ["delivery_minutes"]}, "columns used as features and as target"),
        (
            {"categorical_features": ["region", "region"]},
            "feature columns listed more than once: region",
        ),
        ({"estimator": " "}, "the spec names no estimator"),
        ({"seed": "3"}, "seed must be an integer"),
    ],
)
def test_invalid_spec_is_refused(spec_factory: SpecFactory, overrides: dict[str, object], expected: str) -> None:
    with pytest.raises(SpecError) as info:
        spec_factory(**{"task": "regression", **overrides})
    assert info.value.message.startswith(expected)
    assert info.value.fix
