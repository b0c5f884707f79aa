"""A saved model directory, a passport body and signing keys: real files, real keys, no network."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest

from controlplane.signing import SigningKey, load_or_create_key


def _save_model(model_dir: Path) -> Path:
    """The shape of an MLflow sklearn model directory (what training/_mlflow_io.py saves)."""
    (model_dir / "metadata").mkdir(parents=True)
    (model_dir / "MLmodel").write_text("flavors:\n  sklearn:\n    pickled_model: model.pkl\n", encoding="utf-8")
    (model_dir / "model.pkl").write_bytes(pickle.dumps({"coef": [0.25, 1.5], "intercept": 12.0}))
    (model_dir / "requirements.txt").write_text("scikit-learn==1.5.0\n", encoding="utf-8")
    (model_dir / "metadata" / "conda.yaml").write_text("name: mlflow-env\n", encoding="utf-8")
    return model_dir


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    return _save_model(tmp_path / "model")


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    return load_or_create_key(tmp_path / "keys", env={})


@pytest.fixture
def other_key(tmp_path: Path) -> SigningKey:
    return load_or_create_key(tmp_path / "other-keys", env={})


@pytest.fixture
def body() -> dict[str, Any]:
    return {
        "model": "delivery-eta",
        "trained_at_ms": 1793534400000,
        "snapshot": {"dataset": "urn:li:dataset:(urn:li:dataPlatform:parquet,deliveries,PROD)", "rows": 4000},
        "lineage": ["urn:li:dataset:(urn:li:dataPlatform:parquet,orders,PROD)"],
        "metrics": {"candidate": {"mae": 3.2071}, "champion": {"mae": 3.5}},
        "incidents": [{"urn": "urn:li:incident:1", "healed_by": "rescale_units"}],
        "verdict": "promote",
        "exact_int": 2**60 + 1,
    }
