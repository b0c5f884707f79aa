"""Shared synthetic data and specs for the training tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from training.spec import TrainingSpec


def make_deliveries(n: int = 400, seed: int = 7) -> pd.DataFrame:
    """Hourly deliveries with missing values, shuffled so that splitting has to sort by time."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["north", "south", "east", "west"], n)
    courier = rng.choice(["bike", "van", "car"], n)
    distance = rng.gamma(2.0, 3.0, n)
    weight = rng.uniform(0.1, 20.0, n)
    region_effect = pd.Series(region).map({"north": 0, "south": 5, "east": 2, "west": 8}).to_numpy()
    courier_effect = pd.Series(courier).map({"bike": 6, "van": 0, "car": 2}).to_numpy()
    minutes = 12 + 4 * distance + 0.3 * weight + region_effect + courier_effect
    minutes = minutes + rng.normal(0, 3, n)
    df = pd.DataFrame(
        {
            "event_time": pd.date_range("2024-01-01", periods=n, freq="h", tz="UTC"),
            "distance_km": distance,
            "weight_kg": weight,
            "region": region,
            "courier": courier,
            "delivery_minutes": minutes,
            "late": (minutes > np.quantile(minutes, 0.6)).astype(int),
        }
    )
    df.loc[rng.choice(n, 20, replace=False), "distance_km"] = np.nan
    df.loc[rng.choice(n, 20, replace=False), "region"] = None
    return df.sample(frac=1.0, random_state=seed)


def make_spec(task: str = "regression", **overrides: object) -> TrainingSpec:
    regression = task == "regression"
    fields: dict[str, object] = {
        "task": task,
        "target": "delivery_minutes" if regression else "late",
        "numeric_features": ["distance_km", "weight_kg"],
        "categorical_features": ["region", "courier"],
        "time_column": "event_time",
        "estimator": "sklearn.ensemble.RandomForestRegressor"
        if regression
        else "sklearn.ensemble.RandomForestClassifier",
        "params": {"n_estimators": 15, "max_depth": 6},
        "metric": "mae" if regression else "roc_auc",
        "seed": 3,
    }
    fields.update(overrides)
    return TrainingSpec(**fields)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def deliveries() -> pd.DataFrame:
    return make_deliveries()


@pytest.fixture(scope="session")
def regression_spec() -> TrainingSpec:
    return make_spec("regression")


@pytest.fixture(scope="session")
def classification_spec() -> TrainingSpec:
    return make_spec("classification")


@pytest.fixture(scope="session")
def spec_factory() -> Callable[..., TrainingSpec]:
    """``spec_factory(task, **overrides)`` builds a TrainingSpec for the deliveries frame."""
    return make_spec
