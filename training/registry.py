"""MLflow runs, registered versions and aliases, through one client bound to one store."""

from __future__ import annotations

import json
import pickle
import re
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from tempfile import TemporaryDirectory
from typing import Any
from urllib.parse import unquote

import mlflow.artifacts
import mlflow.sklearn
import pandas as pd
from mlflow import MlflowClient
from mlflow.entities import DatasetInput, LoggedModel, LoggedModelOutput, Metric, Param
from mlflow.exceptions import MlflowException

from training._mlflow_dataset import dataset_tags, training_dataset_input
from training._mlflow_errors import is_not_found, mlflow_errors
from training._mlflow_io import MODEL_NAME, save_sklearn_model, signature_sample, training_params
from training.errors import RegistryError, TrainingError
from training.spec import TrainingSpec

__all__ = ["CHAMPION", "PREVIOUS", "ModelStore"]

CHAMPION = "champion"
PREVIOUS = "previous"
_SQLITE_PREFIX = "sqlite:///"
_RUN_ID = re.compile(r"[A-Za-z0-9_-]+")
_MARKER_EXPERIMENT = "kintsugi-workspace"
_MARKER_TAG = "kintsugi.workspace_id"
_LOAD_ERRORS: tuple[type[BaseException], ...] = (
    ImportError,
    AttributeError,
    ValueError,
    TypeError,
    EOFError,
    pickle.UnpicklingError,
)


class ModelStore:
    """Training runs, model versions and the ``champion``/``previous`` aliases in one MLflow store.

    Every call goes through an ``MlflowClient`` bound to ``tracking_uri`` (also the registry
    URI); the global MLflow tracking URI is neither read nor changed. With a sqlite store,
    experiments this store creates put their artifacts under ``artifact_root`` (default:
    ``mlartifacts`` next to the database), never under the working directory. With a tracking
    server, ``artifact_root`` is ignored and the server's artifact store is used.
    """

    def __init__(self, tracking_uri: str, artifact_root: Path | None = None) -> None:
        self.tracking_uri = tracking_uri
        self.artifact_root = _artifact_root(tracking_uri, artifact_root)
        with self._errors("open the tracking store"):
            self._client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)

    # -- runs ---------------------------------------------------------------------------

    def log_training(
        self,
        *,
        experiment: str,
        spec: TrainingSpec,
        model: Any,
        train_df: pd.DataFrame,
        metrics: dict[str, float],
        dataset_source: dict[str, Any],
        tags: dict[str, str],
        run_name: str,
        seal: Callable[[Path], None] | None = None,
    ) -> str:
        """Log one finished training run (params, metrics, dataset, model); return its id.

        Everything is prepared before the first write, so bad input leaves no half-made run. `seal`, when given,
        is called on the saved model directory before it is logged (to sign its files).
        """
        action = f"log training run {run_name!r} in experiment {experiment!r}"
        with self._errors(action, also=(ValueError, TypeError)):
            contents = _RunContents(
                params=training_params(spec),
                metrics={k: float(v) for k, v in metrics.items()},
                tags={**{k: str(v) for k, v in tags.items()}, **dataset_tags(dataset_source)},
                dataset=training_dataset_input(train_df, dataset_source),
                model=model,
                sample=signature_sample(spec, train_df),
                seal=seal,
            )
            experiment_id = self._experiment_id(experiment)
            run = self._client.create_run(experiment_id, run_name=run_name, tags=contents.tags)
            run_id: str = run.info.run_id
            try:
                self._log_run_contents(run_id, experiment_id, contents)
            except BaseException:
                self._quietly(lambda: self._client.set_terminated(run_id, "FAILED"))
                raise
            self._client.set_terminated(run_id, "FINISHED")
        return run_id

    def log_json_artifact(self, run_id: str, relpath: str, doc: dict[str, Any]) -> None:
        """Write ``doc`` as indented, key-sorted JSON to ``relpath`` in the run's artifacts."""
        path = _relpath(relpath)
        try:
            text = json.dumps(doc, indent=2, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TrainingError(
                f"document for {relpath!r} is not JSON: {exc}",
                "pass only strings, numbers, booleans, None, lists and dicts (no NaN)",
            ) from exc
        parent = None if str(path.parent) == "." else str(path.parent)
        with (
            self._errors(f"write artifact {relpath!r} of run {run_id}"),
            TemporaryDirectory() as tmp,
        ):
            local = Path(tmp) / path.name
            local.write_text(text + "\n", encoding="utf-8")
            self._client.log_artifact(run_id, str(local), parent)

    def read_json_artifact(self, run_id: str, relpath: str) -> dict[str, Any]:
        """The JSON object at ``relpath`` in the run's artifacts; RegistryError if absent."""
        path = _relpath(relpath)
        with self._errors(f"read artifact {relpath!r} of run {run_id}", also=(ValueError,)):
            self._require_artifact(run_id, path)
            with TemporaryDirectory() as tmp:
                local = self._client.download_artifacts(run_id, str(path), tmp)
                doc = json.loads(Path(local).read_text(encoding="utf-8"))
        if not isinstance(doc, dict):
            raise RegistryError(
                f"artifact {relpath!r} of run {run_id} is not a JSON object",
                "write it with log_json_artifact, which stores a JSON object",
            )
        return doc

    # -- versions -----------------------------------------------------------------------

    def register(self, model_name: str, run_id: str) -> int:
        """Register the run's model (``runs:/<run_id>/model``) as a new version; return it."""
        with self._errors(f"register run {run_id} as a version of {model_name!r}"):
            logged = self._run_model(run_id)
            self._ensure_registered_model(model_name)
            version = self._client.create_model_version(
                model_name,
                source=logged.artifact_location,
                run_id=run_id,
                model_id=logged.model_id,
            )
        return int(version.version)

    def find_version_by_run(self, model_name: str, run_id: str) -> int | None:
        """The lowest version of ``model_name`` registered from ``run_id``, if any."""
        if not _RUN_ID.fullmatch(run_id):
            raise RegistryError(f"{run_id!r} is not an MLflow run id", "pass the id of a run")
        with self._errors(f"search versions of {model_name!r} from run {run_id}"):
            found = self._client.search_model_versions(f"run_id = '{run_id}'")
        versions = sorted(int(v.version) for v in found if v.name == model_name)
        return versions[0] if versions else None

    def run_for_version(self, model_name: str, version: int) -> str:
        """The id of the run that produced ``version`` of ``model_name``."""
        with self._errors(f"read version {version} of {model_name!r}"):
            run_id = self._client.get_model_version(model_name, str(version)).run_id
        if not run_id:
            raise RegistryError(
                f"version {version} of {model_name!r} records no source run",
                "register versions through ModelStore.register so they keep their run",
            )
        return str(run_id)

    def run_tags(self, run_id: str) -> dict[str, str]:
        """The tags of run ``run_id``."""
        with self._errors(f"read the tags of run {run_id!r}"):
            return dict(self._client.get_run(run_id).data.tags)

    def load_model(self, model_name: str, version: int) -> Any:
        """The fitted scikit-learn pipeline stored as ``version`` of ``model_name``."""
        with self._errors(f"load version {version} of {model_name!r}", also=_LOAD_ERRORS):
            uri = self._client.get_model_version_download_uri(model_name, str(version))
            with TemporaryDirectory() as tmp:
                download, unpack = Path(tmp) / "download", Path(tmp) / "load"
                unpack.mkdir()
                local = mlflow.artifacts.download_artifacts(
                    artifact_uri=uri, dst_path=str(download), tracking_uri=self.tracking_uri
                )
                return mlflow.sklearn.load_model(local, dst_path=str(unpack))

    def download_model(self, model_name: str, version: int, dest: Path) -> Path:
        """The files of ``version`` of ``model_name`` (the saved model directory), downloaded under ``dest``."""
        with self._errors(f"download version {version} of {model_name!r}", also=(OSError,)):
            uri = self._client.get_model_version_download_uri(model_name, str(version))
            return Path(
                mlflow.artifacts.download_artifacts(
                    artifact_uri=uri, dst_path=str(dest), tracking_uri=self.tracking_uri
                )
            )

    def set_version_tags(self, model_name: str, version: int, tags: dict[str, str]) -> None:
        """Set (overwrite) tags on ``version`` of ``model_name``."""
        with self._errors(f"tag version {version} of {model_name!r}"):
            for key, value in tags.items():
                self._client.set_model_version_tag(model_name, str(version), key, str(value))

    def delete_version_tags(self, model_name: str, version: int, keys: list[str]) -> None:
        """Remove tags from ``version`` of ``model_name``; a tag already absent is no error."""
        with self._errors(f"untag version {version} of {model_name!r}"):
            current = self._client.get_model_version(model_name, str(version)).tags
            for key in keys:
                if key in current:
                    self._client.delete_model_version_tag(model_name, str(version), key)

    def get_version_tags(self, model_name: str, version: int) -> dict[str, str]:
        """All tags of ``version`` of ``model_name``."""
        with self._errors(f"read tags of version {version} of {model_name!r}"):
            return dict(self._client.get_model_version(model_name, str(version)).tags)

    # -- aliases ------------------------------------------------------------------------

    def aliases(self, model_name: str) -> dict[str, int]:
        """Alias -> version of ``model_name``; empty if the model is not registered."""
        with self._errors(f"read aliases of {model_name!r}"):
            try:
                registered = self._client.get_registered_model(model_name)
            except MlflowException as exc:
                if is_not_found(exc):
                    return {}
                raise
        return {alias: int(version) for alias, version in registered.aliases.items()}

    def champion_version(self, model_name: str) -> int | None:
        """The version holding the ``champion`` alias, or None."""
        return self.aliases(model_name).get(CHAMPION)

    def promote(self, model_name: str, version: int) -> None:
        """Make ``version`` the champion; the old champion becomes ``previous``. Idempotent."""
        with self._errors(f"promote version {version} of {model_name!r}"):
            self._client.get_model_version(model_name, str(version))
            current = self.champion_version(model_name)
            if current == version:
                return
            if current is not None:
                self._client.set_registered_model_alias(model_name, PREVIOUS, str(current))
            self._client.set_registered_model_alias(model_name, CHAMPION, str(version))

    def delete_alias(self, model_name: str, alias: str) -> None:
        """Remove ``alias`` from ``model_name``; nothing to do if it is already absent."""
        with self._errors(f"delete alias {alias!r} of {model_name!r}"):
            try:
                self._client.delete_registered_model_alias(model_name, alias)
            except MlflowException as exc:
                if not is_not_found(exc):
                    raise

    def set_champion(self, model_name: str, version: int | None) -> None:
        """Point ``champion`` at ``version`` exactly (None: no champion), leaving ``previous`` alone."""
        if version is None:
            self.delete_alias(model_name, CHAMPION)
            return
        with self._errors(f"set the champion of {model_name!r} to version {version}"):
            self._client.set_registered_model_alias(model_name, CHAMPION, str(version))

    def versions(self, model_name: str) -> dict[int, dict[str, str]]:
        """Every version of ``model_name`` with its tags; empty if the model is not registered."""
        with self._errors(f"list versions of {model_name!r}"):
            found = self._client.search_model_versions(f"name = '{_quoted(model_name)}'")
        return {int(v.version): dict(v.tags) for v in found if v.name == model_name}

    def find_runs(self, experiment: str, tag: str, value: str) -> list[str]:
        """Ids of the runs of ``experiment`` whose tag ``tag`` equals ``value`` (none if no such experiment)."""
        with self._errors(f"search runs of {experiment!r} tagged {tag}"):
            found = self._client.get_experiment_by_name(experiment)
            if found is None:
                return []
            runs = self._client.search_runs([found.experiment_id], f"tags.`{tag}` = '{_quoted(value)}'")
        return sorted(r.info.run_id for r in runs)

    def terminate_run(self, run_id: str, status: str = "FAILED") -> None:
        """Mark a run finished with ``status`` (FAILED for a run whose loop was interrupted)."""
        with self._errors(f"mark run {run_id} {status}"):
            self._client.set_terminated(run_id, status)

    # -- the workspace marker -------------------------------------------------------------

    def workspace_marker(self) -> str | None:
        """The Kintsugi workspace id this store was marked with, or None."""
        with self._errors("read the workspace marker"):
            found = self._client.get_experiment_by_name(_MARKER_EXPERIMENT)
        return None if found is None else found.tags.get(_MARKER_TAG)

    def set_workspace_marker(self, workspace_id: str) -> None:
        with self._errors("write the workspace marker"):
            found = self._client.get_experiment_by_name(_MARKER_EXPERIMENT)
            experiment_id = found.experiment_id if found is not None else self._create_experiment(_MARKER_EXPERIMENT)
            self._client.set_experiment_tag(experiment_id, _MARKER_TAG, workspace_id)

    # -- helpers ------------------------------------------------------------------------

    def _errors(self, action: str, also: tuple[type[BaseException], ...] = ()) -> AbstractContextManager[None]:
        return mlflow_errors(self.tracking_uri, action, also)

    def _experiment_id(self, name: str) -> str:
        found = self._client.get_experiment_by_name(name)
        if found is None:
            return self._create_experiment(name)
        if found.lifecycle_stage != "active":
            raise RegistryError(
                f"experiment {name!r} is deleted",
                f"restore it (mlflow experiments restore -x {found.experiment_id}) or log to another experiment",
            )
        return str(found.experiment_id)

    def _create_experiment(self, name: str) -> str:
        location = None
        if self.artifact_root is not None:
            location = (self.artifact_root / _slug(name)).as_uri()
        try:
            return str(self._client.create_experiment(name, artifact_location=location))
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise
        return self._experiment_id(name)  # created concurrently by someone else

    def _log_run_contents(self, run_id: str, experiment_id: str, contents: _RunContents) -> None:
        logged = self._client.create_logged_model(
            experiment_id, name=MODEL_NAME, source_run_id=run_id, params=contents.params
        )
        try:
            now = int(time.time() * 1000)
            self._client.log_batch(
                run_id,
                metrics=[Metric(k, v, now, 0, model_id=logged.model_id) for k, v in contents.metrics.items()],
                params=[Param(k, v) for k, v in contents.params.items()],
            )
            self._client.log_inputs(run_id, datasets=[contents.dataset])
            self._client.log_outputs(run_id, [LoggedModelOutput(logged.model_id, step=0)])
            with TemporaryDirectory() as tmp:
                local = Path(tmp) / MODEL_NAME
                save_sklearn_model(contents.model, contents.sample, local, logged, run_id)
                if contents.seal is not None:
                    contents.seal(local)
                self._client.log_model_artifacts(logged.model_id, str(local))
        except BaseException:
            self._quietly(lambda: self._client.finalize_logged_model(logged.model_id, "FAILED"))
            raise
        self._client.finalize_logged_model(logged.model_id, "READY")

    @staticmethod
    def _quietly(mark_failed: Callable[[], object]) -> None:
        """Mark a half-logged run or model FAILED; the error that led here is the one to raise."""
        with suppress(MlflowException, OSError):
            mark_failed()

    def _run_model(self, run_id: str) -> LoggedModel:
        run = self._client.get_run(run_id)
        outputs = run.outputs.model_outputs if run.outputs else []
        for output in outputs:
            logged = self._client.get_logged_model(output.model_id)
            if logged.name == MODEL_NAME:
                return logged
        raise RegistryError(
            f"run {run_id} has no logged model named {MODEL_NAME!r}",
            "log the model with ModelStore.log_training before registering the run",
        )

    def _ensure_registered_model(self, model_name: str) -> None:
        try:
            self._client.create_registered_model(model_name)
        except MlflowException as exc:
            if exc.error_code != "RESOURCE_ALREADY_EXISTS":
                raise

    def _require_artifact(self, run_id: str, path: PurePosixPath) -> None:
        parent = str(path.parent)
        listed = self._client.list_artifacts(run_id, None if parent == "." else parent)
        names = sorted(info.path for info in listed if not info.is_dir)
        if str(path) not in names:
            shown = ", ".join(names[:10]) or "nothing"
            raise RegistryError(
                f"run {run_id} has no artifact {str(path)!r} (found there: {shown})",
                "log it first with log_json_artifact, or check the run id and path",
            )


@dataclass(frozen=True)
class _RunContents:
    """What one training run writes, prepared before anything is written."""

    params: dict[str, str]
    metrics: dict[str, float]
    tags: dict[str, str]
    dataset: DatasetInput
    model: Any
    sample: pd.DataFrame
    seal: Callable[[Path], None] | None = None


def _artifact_root(tracking_uri: str, artifact_root: Path | None) -> Path | None:
    """Where new experiments keep artifacts: local stores only; a server picks its own."""
    if not tracking_uri.startswith(_SQLITE_PREFIX):
        return None
    if artifact_root is not None:
        return Path(artifact_root).expanduser().resolve()
    database = Path(unquote(tracking_uri[len(_SQLITE_PREFIX) :]))
    return database.expanduser().resolve().parent / "mlartifacts"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "experiment"


def _relpath(relpath: str) -> PurePosixPath:
    path = PurePosixPath(relpath)
    if not relpath or path.is_absolute() or ".." in path.parts or str(path) == ".":
        raise TrainingError(
            f"artifact path {relpath!r} is not a relative path inside the run",
            "use a relative path such as 'passport/passport.json'",
        )
    return path


def _quoted(text: str) -> str:
    """A value inside a single-quoted MLflow search filter."""
    return text.replace("\\", "\\\\").replace("'", "\\'")
