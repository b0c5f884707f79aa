"""The training dataset as MLflow records it, read back from a real MLflow sqlite store.

The digest is derived from the caller's content hash, never computed from the rows: the same frame
logged under two hashes gets two digests (``mlflow.data.from_pandas`` would give it one, its own).
The schema is the one ``from_pandas`` infers, built from the Arrow schema instead of every cell.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import warnings
from collections.abc import Iterator

import mlflow.data
import numpy as np
import pandas as pd
import pytest
from mlflow import MlflowClient
from mlflow.data.pandas_dataset import from_pandas
from mlflow.entities import DatasetInput

from training._mlflow_dataset import DataHubSource, dataset_schema
from training.model import fit, time_holdout
from training.registry import ModelStore
from training.spec import TrainingSpec

URN = "urn:li:dataset:(urn:li:dataPlatform:file,deliveries.clean,PROD)"
HASH_A = "sha256:" + "a1" * 32
HASH_B = "sha256:" + "b2" * 32


def expected_digest(content_hash: str, frame: pd.DataFrame) -> str:
    """The documented derivation, written out independently of the code under test."""
    key = json.dumps([content_hash, len(frame), [str(c) for c in frame.columns]])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:8]


class Logged:
    def __init__(self, store: ModelStore, uri: str, spec: TrainingSpec, model: object) -> None:
        self.store, self.uri, self.spec, self.model = store, uri, spec, model

    def log(self, frame: pd.DataFrame, content_hash: str, run: str, **source: str) -> DatasetInput:
        run_id = self.store.log_training(
            experiment="deliveries-eta",
            spec=self.spec,
            model=self.model,
            train_df=frame,
            metrics={"mae": 1.0},
            dataset_source={"urn": URN, "content_hash": content_hash, **source},
            tags={},
            run_name=run,
        )
        run = MlflowClient(tracking_uri=self.uri).get_run(run_id)  # a fresh client: what's stored
        assert run.inputs is not None
        (dataset_input,) = run.inputs.dataset_inputs
        return dataset_input


@pytest.fixture(scope="module")
def logged(
    tmp_path_factory: pytest.TempPathFactory,
    regression_spec: TrainingSpec,
    deliveries: pd.DataFrame,
) -> Iterator[Logged]:
    root = tmp_path_factory.mktemp("mlflow-dataset")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    train, _ = time_holdout(deliveries, "event_time", regression_spec.holdout_fraction)
    yield Logged(ModelStore(uri, artifact_root=root / "artifacts"), uri, regression_spec, fit(regression_spec, train))


@pytest.fixture(scope="module")
def train(deliveries: pd.DataFrame, regression_spec: TrainingSpec) -> pd.DataFrame:
    return time_holdout(deliveries, "event_time", regression_spec.holdout_fraction)[0]


def test_the_stored_dataset_has_its_name_digest_source_schema_and_profile(logged: Logged, train: pd.DataFrame) -> None:
    dataset = logged.log(train, HASH_A, "named", name="deliveries.clean").dataset
    assert dataset.name == "deliveries.clean"
    assert dataset.digest == expected_digest(HASH_A, train)
    assert dataset.source_type == "datahub"
    assert json.loads(dataset.source) == {"urn": URN, "content_hash": HASH_A}
    columns = json.loads(str(dataset.schema))["mlflow_colspec"]
    assert [c["name"] for c in columns] == list(train.columns)
    assert json.loads(str(dataset.profile)) == {
        "num_rows": len(train),
        "num_elements": len(train) * len(train.columns),
        "num_columns": len(train.columns),
    }


def test_the_digest_follows_the_content_hash_not_the_rows(logged: Logged, train: pd.DataFrame) -> None:
    first = logged.log(train, HASH_A, "a").dataset.digest
    again = logged.log(train, HASH_A, "a-again").dataset.digest
    other_hash = logged.log(train, HASH_B, "b").dataset.digest
    fewer_rows = logged.log(train.iloc[:-10], HASH_A, "a-fewer").dataset.digest
    assert first == again == expected_digest(HASH_A, train)
    assert other_hash == expected_digest(HASH_B, train) != first  # same rows, another hash
    assert fewer_rows == expected_digest(HASH_A, train.iloc[:-10]) != first  # another cut
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert from_pandas(train, source="x.parquet").digest not in {first, other_hash}


def test_the_schema_reads_back_as_from_pandas_infers_it(logged: Logged, train: pd.DataFrame) -> None:
    dataset = logged.log(train, HASH_A, "schema").dataset
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inferred = from_pandas(train, source="x.parquet", targets="delivery_minutes").to_dict()
    assert json.loads(str(dataset.schema)) == json.loads(inferred["schema"])
    columns = {c["name"]: c for c in json.loads(str(dataset.schema))["mlflow_colspec"]}
    assert columns["distance_km"] == {"type": "double", "name": "distance_km", "required": False}
    assert columns["region"]["required"] is False and columns["courier"]["required"] is True


def test_get_source_resolves_the_datahub_source(logged: Logged, train: pd.DataFrame) -> None:
    source = mlflow.data.get_source(logged.log(train, HASH_A, "source"))
    assert isinstance(source, DataHubSource)
    assert (source.urn, source.content_hash) == (URN, HASH_A)


def _mixed_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "when": pd.date_range("2024-01-01", periods=4, freq="D", tz="UTC"),
            "day": pd.to_datetime(["2024-01-01", None, "2024-01-03", "2024-01-04"]),
            "date": [dt.date(2024, 1, d) for d in range(1, 5)],
            "small": np.array([1, 2, 3, 4], dtype="int8"),
            "int32": np.array([1, 2, 3, 4], dtype="int32"),
            "uint32": np.array([1, 2, 3, 4], dtype="uint32"),
            "nullable_int": pd.array([1, None, 3, 4], dtype="Int64"),
            "single": np.array([1.0, 2.0, np.nan, 4.0], dtype="float32"),
            "flag": [True, False, True, False],
            "maybe": pd.array([True, None, False, True], dtype="boolean"),
            "text": np.array(["a", None, "c", "d"], dtype=object),
            "label": pd.array(["x", "y", "x", "y"], dtype="string"),
            "kind": pd.Categorical(["p", "q", "p", "q"]),
            "blob": [b"a", b"b", b"c", b"d"],
            "tags": [[1, 2], [3], None, [4]],
            "empty": [None, None, None, None],
        }
    )


def test_every_column_kind_is_typed_as_from_pandas_types_it() -> None:
    frame = _mixed_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inferred = from_pandas(frame, source="x.parquet").schema
    assert inferred is not None
    ours = dataset_schema(frame)
    assert ours is not None
    assert ours.to_dict() == inferred.to_dict()


@pytest.mark.parametrize(
    "column",
    [
        np.array([1, 2], dtype="uint64"),
        pd.to_timedelta([1, 2], unit="s"),
        np.array([1, "two"], dtype=object),
        [dt.time(1), dt.time(2)],
    ],
    ids=["uint64", "duration", "mixed-objects", "time-of-day"],
)
def test_a_column_mlflow_cannot_type_means_no_schema_as_from_pandas(column: object) -> None:
    frame = pd.DataFrame({"ok": [1.0, 2.0], "odd": column})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert from_pandas(frame, source="x.parquet").schema is None
    assert dataset_schema(frame) is None


def test_a_run_with_an_untypeable_column_is_still_logged(logged: Logged, train: pd.DataFrame) -> None:
    odd = train.assign(waited=pd.to_timedelta(np.arange(len(train)), unit="s"))
    dataset = logged.log(odd, HASH_A, "odd").dataset
    assert dataset.schema in (None, "")
    assert json.loads(str(dataset.profile))["num_rows"] == len(odd)
