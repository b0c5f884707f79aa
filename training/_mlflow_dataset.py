"""The training table as an MLflow dataset input, built from its Arrow schema and the caller's content hash.

``mlflow.data.from_pandas`` types and null-checks every cell in Python and hashes a sample of its own;
at 1M rows that took about three times as long as fitting the model. Here the column types come from
the frame's Arrow schema (read from the dtypes; only object columns are inspected, by Arrow in C++), the
"required" flags from a vectorised null check, the digest from the content hash the caller computed,
and the profile from the frame's shape. The record reads the same as a pandas dataset's in MLflow: a
``{"mlflow_colspec": [...]}`` schema with MLflow's types, and ``num_rows``/``num_elements`` (plus
``num_columns``) in the profile. MLflow's pandas dataset does not mark the target in either, so neither
does this one; the target is the run's ``target`` param. A frame sampled from a larger table carries the
sample's ``sample_*`` keys (size, seed, the full table's content hash) as dataset input tags.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd
import pyarrow as pa
from mlflow.data.dataset_source import DatasetSource
from mlflow.data.dataset_source_registry import get_registered_sources, register_dataset_source
from mlflow.entities import Dataset, DatasetInput, InputTag
from mlflow.types import ColSpec, DataType, Schema
from mlflow.types.schema import AnyType, Array

from training.errors import TrainingError

__all__ = [
    "DATASET_TAG_PREFIX",
    "DataHubSource",
    "dataset_digest",
    "dataset_keys",
    "dataset_schema",
    "dataset_tags",
    "training_dataset_input",
]

DATASET_TAG_PREFIX = "kintsugi.dataset."
_DIGEST_CHARS = 8  # what MLflow's own pandas digests use


class DataHubSource(DatasetSource):
    """An MLflow dataset source naming a DataHub dataset URN and the content hash trained on, and where the table's
    format names one, its version ("delta version 3", "iceberg snapshot 81...")."""

    def __init__(self, urn: str, content_hash: str, version: str | None = None) -> None:
        self.urn = urn
        self.content_hash = content_hash
        self.version = version

    @staticmethod
    def _get_source_type() -> str:
        return "datahub"

    def load(self) -> Any:
        raise NotImplementedError("a DataHub source is a reference; read the table it names")

    @staticmethod
    def _can_resolve(raw_source: Any) -> bool:
        return False

    @classmethod
    def _resolve(cls, raw_source: Any) -> DataHubSource:
        raise NotImplementedError("DataHub sources are built explicitly, never resolved")

    def to_dict(self) -> dict[str, Any]:
        named = {"urn": self.urn, "content_hash": self.content_hash}
        return {**named, "version": self.version} if self.version else named

    @classmethod
    def from_dict(cls, source_dict: dict[Any, Any]) -> DataHubSource:
        return cls(source_dict["urn"], source_dict["content_hash"], source_dict.get("version"))


if DataHubSource not in get_registered_sources():  # so mlflow.data.get_source reads "datahub" back
    # mlflow annotates the parameter as an instance, but its registry holds (and expects) source classes
    register_dataset_source(DataHubSource)  # type: ignore[arg-type]


def dataset_keys(dataset_source: dict[str, Any]) -> tuple[str, str]:
    """The (urn, content_hash) of ``dataset_source``; both must be non-empty strings."""
    missing = [
        key for key in ("urn", "content_hash") if not (isinstance(dataset_source.get(key), str) and dataset_source[key])
    ]
    if missing:
        raise TrainingError(
            f"dataset_source lacks {', '.join(missing)}",
            "pass the training table's DataHub URN as 'urn' and its hash as 'content_hash'",
        )
    return dataset_source["urn"], dataset_source["content_hash"]


def dataset_tags(dataset_source: dict[str, Any]) -> dict[str, str]:
    """Every key of ``dataset_source`` as a ``kintsugi.dataset.<key>`` run tag (urn, hash, ...)."""
    dataset_keys(dataset_source)
    return {
        f"{DATASET_TAG_PREFIX}{key}": str(value) for key, value in sorted(dataset_source.items()) if value is not None
    }


def training_dataset_input(frame: pd.DataFrame, dataset_source: dict[str, Any]) -> DatasetInput:
    """``frame`` as the run's training dataset input, its source the DataHub dataset it came from."""
    urn, content_hash = dataset_keys(dataset_source)
    schema = dataset_schema(frame)
    profile = {
        "num_rows": len(frame),
        "num_elements": int(frame.size),
        "num_columns": len(frame.columns),
    }
    entity = Dataset(
        name=str(dataset_source.get("name") or urn),
        digest=dataset_digest(content_hash, len(frame), list(frame.columns)),
        source_type=DataHubSource._get_source_type(),
        source=DataHubSource(urn, content_hash, dataset_source.get("version")).to_json(),
        schema=json.dumps({"mlflow_colspec": schema.to_dict()}) if schema else None,
        profile=json.dumps(profile),
    )
    tags = [InputTag("mlflow.data.context", "training"), *_sample_tags(dataset_source)]
    return DatasetInput(dataset=entity, tags=tags)


def _sample_tags(dataset_source: dict[str, Any]) -> list[InputTag]:
    """A frame sampled from a larger table: the source's ``sample_*`` keys (size, seed, the full table's content
    hash...) as ``kintsugi.<key>`` tags of the dataset input."""
    return [
        InputTag(f"kintsugi.{key}", str(value))
        for key, value in sorted(dataset_source.items())
        if key.startswith("sample_") and value is not None
    ]


def dataset_digest(content_hash: str, rows: int, columns: list[str]) -> str:
    """Eight hex characters of sha256 over the content hash, the row count and the column names.

    The content hash names the file; rows and columns tell apart the frames cut from it (labelled
    rows, the training side of a split). MLflow keeps one dataset per (name, digest) in an
    experiment, so two different frames must not share a digest.
    """
    key = json.dumps([content_hash, rows, [str(c) for c in columns]])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:_DIGEST_CHARS]


def dataset_schema(frame: pd.DataFrame) -> Schema | None:
    """The MLflow column schema ``from_pandas`` would infer, without visiting cells in Python.

    None when a column has no MLflow type (e.g. unsigned 64-bit ints, durations, structs) or
    Arrow cannot type a column (mixed objects): ``from_pandas`` logs no schema then either.
    """
    try:
        arrow = pa.Schema.from_pandas(frame, preserve_index=False)  # fields in column order
        has_nulls = frame.isna().any().to_numpy()
        return Schema(
            [
                ColSpec(_mlflow_type(field.type), name=field.name, required=not bool(nulls))
                for field, nulls in zip(arrow, has_nulls, strict=True)
            ]
        )
    except (pa.ArrowException, _Untyped):
        return None


class _Untyped(Exception):
    """An Arrow type with no MLflow column type."""


_PLAIN_TYPES = (
    ((pa.types.is_boolean,), DataType.boolean),
    ((pa.types.is_string, pa.types.is_large_string), DataType.string),
    ((pa.types.is_binary, pa.types.is_large_binary, pa.types.is_fixed_size_binary), DataType.binary),
    ((pa.types.is_timestamp, pa.types.is_date), DataType.datetime),
)


def _mlflow_type(arrow: pa.DataType) -> DataType | Array | AnyType:
    """MLflow's type for an Arrow type, by the rules MLflow applies to the matching numpy dtype."""
    if pa.types.is_dictionary(arrow):
        return _mlflow_type(arrow.value_type)
    if pa.types.is_null(arrow):
        return AnyType()
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        return Array(_mlflow_type(arrow.value_type))
    if pa.types.is_integer(arrow):
        return _integer_type(arrow)
    if pa.types.is_floating(arrow):
        return DataType.float if arrow.bit_width <= 32 else DataType.double
    for tests, mlflow_type in _PLAIN_TYPES:
        if any(test(arrow) for test in tests):
            return mlflow_type
    raise _Untyped(str(arrow))


def _integer_type(arrow: pa.DataType) -> DataType:
    """int8/16/32 and uint8/16 are ``integer``, int64 and uint32 ``long``; uint64 has no type."""
    signed, width = pa.types.is_signed_integer(arrow), arrow.bit_width
    if width < 32 or (signed and width == 32):
        return DataType.integer
    if width < 64 or signed:
        return DataType.long
    raise _Untyped(str(arrow))
