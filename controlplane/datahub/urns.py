"""Every URN the loop writes is derived from its key, so reruns and retries reuse instead of duplicating.

Built and parsed with the SDK's typed URN classes, never by splitting strings.
"""

from __future__ import annotations

from typing import Callable

from datahub.emitter.mce_builder import datahub_guid
from datahub.metadata.urns import (
    AssertionUrn,
    DataContractUrn,
    DataPlatformUrn,
    DataProcessInstanceUrn,
    DatasetUrn,
    DomainUrn,
    IncidentUrn,
    MlModelGroupUrn,
    MlModelUrn,
    SchemaFieldUrn,
    StructuredPropertyUrn,
    TagUrn,
)

from controlplane.errors import InputError

__all__ = [
    "assertion_urn",
    "contract_urn",
    "incident_urn",
    "model_group_urn",
    "model_urn",
    "run_urn",
    "parse_model_urn",
    "parse_model_group_urn",
    "dataset_platform",
    "check_dataset_urn",
    "check_domain_urn",
    "schema_field_urn",
    "parse_schema_field_urn",
    "structured_property_urn",
    "tag_urn",
    "dataset_urn",
    "guid",
    "keyed_incident_urn",
    "CHAMPION_TAG",
    "MODEL_PLATFORM",
]

MODEL_PLATFORM = "mlflow"
CHAMPION_TAG = str(TagUrn("champion"))


def guid(key: dict[str, str]) -> str:
    """A stable id of a key (DataHub's own guid: the same key gives the same id in any process)."""
    return datahub_guid(key)


def keyed_incident_urn(key: dict[str, str]) -> str:
    """An incident URN derived from any key of the writer's own."""
    return str(IncidentUrn(datahub_guid(key)))


def dataset_urn(platform: str, name: str) -> str:
    return str(DatasetUrn(platform, name, "PROD"))


def assertion_urn(dataset: str, check: str, column: str | None) -> str:
    return str(AssertionUrn(datahub_guid({"dataset": dataset, "check": check, "column": column or ""})))


def contract_urn(dataset: str) -> str:
    return str(DataContractUrn(datahub_guid({"dataset": dataset})))


def incident_urn(dataset: str, kind: str, column: str | None, generation: int) -> str:
    """The n-th incident for one failure (dataset, kind, column); a recurrence after resolution is n+1."""
    key = {"dataset": dataset, "kind": kind, "column": column or "", "generation": str(generation)}
    return str(IncidentUrn(datahub_guid(key)))


def model_group_urn(pipeline: str) -> str:
    return str(MlModelGroupUrn(MODEL_PLATFORM, pipeline, "PROD"))


def model_urn(pipeline: str, version: int) -> str:
    return str(MlModelUrn(MODEL_PLATFORM, f"{pipeline}.v{version}", "PROD"))


def parse_model_urn(urn: str) -> tuple[str, int] | None:
    """(pipeline, version) of a model URN this package wrote, or None for any other mlModel."""
    try:
        name = MlModelUrn.from_string(urn).name
    except Exception:
        return None
    pipeline, dot, version = name.rpartition(".v")
    return (pipeline, int(version)) if dot and version.isdigit() else None


def parse_model_group_urn(urn: str) -> str:
    """The pipeline name of a model group URN."""
    return MlModelGroupUrn.from_string(urn).name


def run_urn(run_id: str) -> str:
    return str(DataProcessInstanceUrn(datahub_guid({"kintsugi_run": run_id})))


def tag_urn(name: str) -> str:
    return str(TagUrn(name))


def dataset_platform(urn: str) -> str:
    """The platform name of a dataset URN (`file`, `postgres`, `s3`...)."""
    return DataPlatformUrn.from_string(DatasetUrn.from_string(urn).platform).platform_name


def check_dataset_urn(urn: str, where: str) -> str:
    """The URN if it is a well-formed dataset URN; one clear error otherwise."""
    return _checked(
        urn, where, DatasetUrn.from_string, "dataset", "urn:li:dataset:(urn:li:dataPlatform:PLATFORM,NAME,PROD)"
    )


def check_domain_urn(urn: str, where: str) -> str:
    """The URN if it is a well-formed DataHub domain URN; one clear error otherwise."""
    return _checked(
        urn, where, DomainUrn.from_string, "domain", "urn:li:domain:ID (the domain's URN as DataHub shows it)"
    )


def _checked(urn: str, where: str, parse: Callable[[str], object], name: str, form: str) -> str:
    try:
        parse(urn)
    except Exception as exc:
        raise InputError(
            f"{where}: {urn[:200]!r} is not a DataHub {name} URN ({type(exc).__name__})", f"write it as {form}"
        ) from exc
    return urn


def schema_field_urn(dataset: str, column: str) -> str:
    return str(SchemaFieldUrn(dataset, column))


def parse_schema_field_urn(urn: str) -> tuple[str, str] | None:
    """(dataset URN, field path) of a schemaField URN, or None when it is not one."""
    try:
        parsed = SchemaFieldUrn.from_string(urn)
    except Exception:
        return None
    return parsed.parent, parsed.field_path


def structured_property_urn(qualified_name: str) -> str:
    return str(StructuredPropertyUrn(qualified_name))
