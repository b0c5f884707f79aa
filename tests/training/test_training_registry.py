"""ModelStore against a real MLflow sqlite store in a temporary workspace.

The module shares one store. While it runs, the working directory is an empty folder and
MLflow's *global* tracking and registry URIs point at a dead server, so any code path that
relies on global MLflow state instead of the store's own client fails loudly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import cloudpickle
import mlflow
import mlflow.tracking._model_registry.utils as registry_utils
import mlflow.tracking._tracking_service.utils as tracking_utils
import numpy as np
import pandas as pd
import pytest
import sklearn
from mlflow import MlflowClient
from mlflow.entities import Experiment

from training.errors import RegistryError, TrainingError
from training.model import evaluate, fit, time_holdout
from training.registry import ModelStore
from training.spec import TrainingSpec

DEAD_URI = "http://127.0.0.1:9"
MODEL = "eta-regressor"
EXPERIMENT = "deliveries-eta"
URN = "urn:li:dataset:(urn:li:dataPlatform:file,deliveries.clean,PROD)"


@dataclass(frozen=True)
class Workspace:
    store: ModelStore
    uri: str
    artifact_root: Path
    cwd: Path
    spec: TrainingSpec
    model: object
    holdout: pd.DataFrame
    metrics: dict[str, float]
    runs: tuple[str, str]
    versions: tuple[int, int]


def _offline_mlflow(mp: pytest.MonkeyPatch) -> None:
    """Point MLflow's global URIs at a dead server and make HTTP calls fail at once."""
    mp.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    mp.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    mp.setenv("MLFLOW_TRACKING_URI", DEAD_URI)
    mp.setenv("MLFLOW_REGISTRY_URI", DEAD_URI)
    mp.setattr(tracking_utils, "_tracking_uri", None)
    mp.setattr(registry_utils, "_registry_uri", None)


def _log(
    store: ModelStore,
    spec: TrainingSpec,
    model: object,
    train: pd.DataFrame,
    metrics: dict[str, float],
    name: str,
) -> str:
    return store.log_training(
        experiment=EXPERIMENT,
        spec=spec,
        model=model,
        train_df=train,
        metrics=metrics,
        dataset_source={"urn": URN, "content_hash": f"sha256:{name}", "path": "/data/d.parquet"},
        tags={"kintsugi.run": name},
        run_name=name,
    )


def _experiment(client: MlflowClient) -> Experiment:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment is not None
    return experiment


@pytest.fixture(scope="module")
def ws(
    tmp_path_factory: pytest.TempPathFactory,
    regression_spec: TrainingSpec,
    deliveries: pd.DataFrame,
) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("mlflow-workspace")
    cwd = tmp_path_factory.mktemp("empty-cwd")
    with pytest.MonkeyPatch.context() as mp:
        _offline_mlflow(mp)
        mp.chdir(cwd)
        uri = f"sqlite:///{root / 'mlflow.db'}"
        store = ModelStore(uri, artifact_root=root / "artifacts")
        train, holdout = time_holdout(deliveries, "event_time", regression_spec.holdout_fraction)
        model = fit(regression_spec, train)
        metrics = evaluate(regression_spec, model, holdout)
        runs = (
            _log(store, regression_spec, model, train, metrics, "first"),
            _log(store, regression_spec, model, train, metrics, "second"),
        )
        versions = (store.register(MODEL, runs[0]), store.register(MODEL, runs[1]))
        store.promote(MODEL, versions[0])
        store.promote(MODEL, versions[1])
        yield Workspace(
            store,
            uri,
            root / "artifacts",
            cwd,
            regression_spec,
            model,
            holdout,
            metrics,
            runs,
            versions,
        )


def test_promote_moves_champion_and_keeps_previous(ws: Workspace) -> None:
    fresh = MlflowClient(tracking_uri=ws.uri, registry_uri=ws.uri)
    assert ws.versions == (1, 2)
    assert int(fresh.get_model_version_by_alias(MODEL, "champion").version) == 2
    assert int(fresh.get_model_version_by_alias(MODEL, "previous").version) == 1
    assert ws.store.aliases(MODEL) == {"champion": 2, "previous": 1}
    assert ws.store.champion_version(MODEL) == 2


def test_promote_again_changes_nothing(ws: Workspace) -> None:
    ws.store.promote(MODEL, ws.versions[1])
    fresh = MlflowClient(tracking_uri=ws.uri, registry_uri=ws.uri)
    aliases = fresh.get_registered_model(MODEL).aliases
    assert {alias: int(version) for alias, version in aliases.items()} == {
        "champion": 2,
        "previous": 1,
    }
    assert len(fresh.search_model_versions(f"name = '{MODEL}'")) == 2


def test_promote_of_a_missing_version_is_refused(ws: Workspace) -> None:
    with pytest.raises(RegistryError) as info:
        ws.store.promote(MODEL, 99)
    assert info.value.message.startswith(f"MLflow could not promote version 99 of '{MODEL}'")
    assert ws.store.aliases(MODEL) == {"champion": 2, "previous": 1}


def test_run_records_spec_metrics_dataset_and_model(ws: Workspace) -> None:
    fresh = MlflowClient(tracking_uri=ws.uri, registry_uri=ws.uri)
    run = fresh.get_run(ws.runs[0])
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "first"
    assert run.data.metrics == pytest.approx(ws.metrics)
    params = run.data.params
    assert params["estimator"] == "sklearn.ensemble.RandomForestRegressor"
    assert json.loads(params["params"]) == {"max_depth": 6, "n_estimators": 15}
    assert (params["seed"], params["holdout_fraction"]) == ("3", "0.2")
    assert json.loads(params["categorical_features"]) == ["region", "courier"]
    assert run.data.tags["kintsugi.dataset.urn"] == URN
    assert run.data.tags["kintsugi.dataset.content_hash"] == "sha256:first"
    assert run.data.tags["kintsugi.dataset.path"] == "/data/d.parquet"
    assert run.data.tags["kintsugi.run"] == "first"
    assert run.inputs is not None
    (dataset_input,) = run.inputs.dataset_inputs
    assert dataset_input.dataset.source_type == "datahub"
    assert json.loads(dataset_input.dataset.source) == {
        "urn": URN,
        "content_hash": "sha256:first",
    }
    assert {t.key: t.value for t in dataset_input.tags} == {"mlflow.data.context": "training"}
    assert json.loads(str(dataset_input.dataset.profile))["num_rows"] == 320


def test_model_is_saved_with_pinned_requirements_and_a_signature(ws: Workspace) -> None:
    fresh = MlflowClient(tracking_uri=ws.uri, registry_uri=ws.uri)
    source = Path(str(fresh.get_model_version(MODEL, "1").source).removeprefix("file://"))
    requirements = (source / "requirements.txt").read_text().split()
    assert sorted(requirements) == sorted(
        f"{name}=={version}"
        for name, version in [
            ("mlflow", mlflow.__version__),
            ("scikit-learn", sklearn.__version__),
            ("pandas", pd.__version__),
            ("numpy", np.__version__),
            ("cloudpickle", cloudpickle.__version__),
        ]
    )  # exactly what we pinned: MLflow did not infer (slowly) a list of its own
    mlmodel = (source / "MLmodel").read_text()
    assert "signature:" in mlmodel and "distance_km" in mlmodel


def test_saving_a_model_does_not_map_every_installed_distribution(
    ws: Workspace, deliveries: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow checks a saved model's requirements against the environment, building a map of every installed
    distribution's modules first (once a process: every `kintsugi run`); ours are pinned from this environment,
    so the save skips the check, the map is never built, and MLflow's check is its own again afterwards."""
    import mlflow.utils.environment as environment
    import mlflow.utils.requirements_utils as requirements_utils

    mapped: list[int] = []
    everything = requirements_utils.importlib_metadata.packages_distributions

    def counted() -> object:
        mapped.append(1)
        return everything()

    monkeypatch.setattr(requirements_utils, "_MODULES_TO_PACKAGES", None)  # as in a new process
    monkeypatch.setattr(requirements_utils.importlib_metadata, "packages_distributions", counted)
    _offline_mlflow(monkeypatch)
    monkeypatch.chdir(ws.cwd)
    store = ModelStore(f"sqlite:///{tmp_path / 'mlflow.db'}", artifact_root=tmp_path / "artifacts")
    train, _ = time_holdout(deliveries, "event_time", ws.spec.holdout_fraction)
    run = _log(store, ws.spec, ws.model, train, ws.metrics, "fresh-process")
    assert mapped == []
    assert store.register(MODEL, run) == 1  # a model like any other
    assert (
        environment.warn_dependency_requirement_mismatches is requirements_utils.warn_dependency_requirement_mismatches
    )


def test_loaded_model_predicts_like_the_trained_one(ws: Workspace) -> None:
    loaded = ws.store.load_model(MODEL, ws.versions[1])
    features = ws.holdout[ws.spec.features]
    assert list(loaded.predict(features)) == list(ws.model.predict(features))  # type: ignore[attr-defined]


def test_find_version_by_run_reuses_instead_of_duplicating(ws: Workspace) -> None:
    assert ws.store.find_version_by_run(MODEL, ws.runs[0]) == 1
    assert ws.store.find_version_by_run(MODEL, ws.runs[1]) == 2
    assert ws.store.find_version_by_run("other-model", ws.runs[0]) is None
    assert ws.store.find_version_by_run(MODEL, "0" * 32) is None
    assert ws.store.run_for_version(MODEL, 2) == ws.runs[1]


def test_version_tags_round_trip(ws: Workspace) -> None:
    ws.store.set_version_tags(MODEL, 1, {"kintsugi.passport": "urn:li:mlModel:x", "verdict": "OK"})
    assert ws.store.get_version_tags(MODEL, 1) == {
        "kintsugi.passport": "urn:li:mlModel:x",
        "verdict": "OK",
    }


def test_json_artifacts_round_trip(ws: Workspace) -> None:
    doc = {"verdict": "APPROVED", "checks": [1, 2], "nested": {"b": None}}
    ws.store.log_json_artifact(ws.runs[1], "passport/passport.json", doc)
    ws.store.log_json_artifact(ws.runs[1], "top.json", {"a": 1})
    assert ws.store.read_json_artifact(ws.runs[1], "passport/passport.json") == doc
    assert ws.store.read_json_artifact(ws.runs[1], "top.json") == {"a": 1}


def test_reading_a_missing_artifact_is_a_registry_error(ws: Workspace) -> None:
    with pytest.raises(RegistryError) as info:
        ws.store.read_json_artifact(ws.runs[0], "passport/passport.json")
    assert info.value.message.startswith(f"run {ws.runs[0]} has no artifact 'passport/passport.json'")
    assert "log_json_artifact" in info.value.fix


def test_unreadable_artifact_is_a_registry_error(ws: Workspace) -> None:
    MlflowClient(tracking_uri=ws.uri).log_text(ws.runs[0], "{not json", "broken.json")
    with pytest.raises(RegistryError, match=r"could not read artifact 'broken\.json'"):
        ws.store.read_json_artifact(ws.runs[0], "broken.json")


def test_only_json_objects_inside_the_run_are_written(ws: Workspace) -> None:
    with pytest.raises(TrainingError, match="not a relative path inside the run"):
        ws.store.log_json_artifact(ws.runs[0], "../escape.json", {})
    with pytest.raises(TrainingError, match=r"document for 'x\.json' is not JSON"):
        ws.store.log_json_artifact(ws.runs[0], "x.json", {"score": float("nan")})


def test_delete_alias_is_idempotent(ws: Workspace) -> None:
    version = ws.store.register("scratch-model", ws.runs[0])
    ws.store.promote("scratch-model", version)
    assert ws.store.aliases("scratch-model") == {"champion": version}
    ws.store.delete_alias("scratch-model", "champion")
    ws.store.delete_alias("scratch-model", "champion")
    assert ws.store.champion_version("scratch-model") is None


def test_unknown_model_has_no_champion(ws: Workspace) -> None:
    assert ws.store.champion_version("never-registered") is None
    assert ws.store.aliases("never-registered") == {}


def test_registering_a_run_without_a_model_is_refused(ws: Workspace) -> None:
    fresh = MlflowClient(tracking_uri=ws.uri)
    bare = fresh.create_run(_experiment(fresh).experiment_id)
    with pytest.raises(RegistryError, match="has no logged model named 'model'"):
        ws.store.register(MODEL, bare.info.run_id)


def test_incomplete_dataset_source_writes_nothing(ws: Workspace) -> None:
    fresh = MlflowClient(tracking_uri=ws.uri)
    experiment_id = _experiment(fresh).experiment_id
    before = len(fresh.search_runs([experiment_id]))
    with pytest.raises(TrainingError, match="dataset_source lacks content_hash"):
        ws.store.log_training(
            experiment=EXPERIMENT,
            spec=ws.spec,
            model=ws.model,
            train_df=ws.holdout,
            metrics={},
            dataset_source={"urn": URN},
            tags={},
            run_name="incomplete",
        )
    assert len(fresh.search_runs([experiment_id])) == before


def test_store_uses_no_global_mlflow_state(ws: Workspace) -> None:
    assert mlflow.get_tracking_uri() == DEAD_URI
    assert mlflow.active_run() is None


def test_artifacts_land_under_the_artifact_root_never_the_cwd(ws: Workspace) -> None:
    fresh = MlflowClient(tracking_uri=ws.uri, registry_uri=ws.uri)
    experiment = _experiment(fresh)
    assert experiment.artifact_location == (ws.artifact_root / EXPERIMENT).as_uri()
    assert str(fresh.get_model_version(MODEL, "2").source).startswith(ws.artifact_root.as_uri())
    assert sorted(p.name for p in ws.cwd.iterdir()) == []
    assert not Path("mlruns").exists()


def test_artifact_root_applies_to_sqlite_stores_only(tmp_path: Path) -> None:
    assert ModelStore(DEAD_URI, artifact_root=tmp_path).artifact_root is None
    default = ModelStore(f"sqlite:///{tmp_path / 'db' / 'mlflow.db'}").artifact_root
    assert default == tmp_path / "db" / "mlartifacts"


def test_unreachable_tracking_server_is_a_registry_error(
    monkeypatch: pytest.MonkeyPatch, regression_spec: TrainingSpec, deliveries: pd.DataFrame
) -> None:
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    store = ModelStore(DEAD_URI)
    started = time.monotonic()
    with pytest.raises(RegistryError) as info:
        store.champion_version(MODEL)
    assert info.value.message.startswith(f"MLflow could not read aliases of '{MODEL}' at {DEAD_URI}")
    assert info.value.fix == (
        f"check that the MLflow tracking server at {DEAD_URI} is running and reachable, then retry"
    )
    with pytest.raises(RegistryError, match="could not log training run 'r'"):
        store.log_training(
            experiment="e",
            spec=regression_spec,
            model=None,
            train_df=deliveries,
            metrics={},
            dataset_source={"urn": URN, "content_hash": "h"},
            tags={},
            run_name="r",
        )
    assert time.monotonic() - started < 10
