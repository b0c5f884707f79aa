"""Trained versions in DataHub: mlModelGroup, mlModel with its passport, training lineage, the run as a process,
and tags: the verdict on every version, `champion` on exactly one version per model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import CHAMPION_TAG, model_group_urn, model_urn, parse_model_urn, run_urn, tag_urn
from controlplane.vocab import Verdict

__all__ = [
    "TrainedVersion",
    "model_mcps",
    "read_passport",
    "PASSPORT_PROPERTY",
    "models_trained_on",
    "model_versions",
    "champion_tag_mcps",
    "tag_mcps",
    "context_tag_mcps",
    "read_verdict",
    "training_datasets",
    "datahub_champion",
    "read_model_tags",
    "VERDICT_PROPERTY",
    "UNDONE_TAG",
    "KEY_ID_PROPERTY",
    "PUBLIC_KEY_PROPERTY",
]

PASSPORT_PROPERTY = "kintsugi.passport"
KEY_ID_PROPERTY = "kintsugi.signingKeyId"  # on the model group: the key its passports are signed with
PUBLIC_KEY_PROPERTY = "kintsugi.signingPublicKey"
VERDICT_PROPERTY = "kintsugi.verdict"
TABLE_VERSION_PROPERTY = "kintsugi.tableVersion"  # on the run's dataProcessInstance: the version of its input
UNDONE_TAG = tag_urn("undone")


@dataclass(frozen=True)
class TrainedVersion:
    pipeline: str
    version: int
    run_id: str
    mlflow_run_id: str
    feature_table: str
    trained_at_ms: int
    metrics: dict[str, float]
    params: dict[str, Any]
    verdict: Verdict
    summary: str
    passport: dict[str, Any]
    signing_key: tuple[str, str] | None = None  # (key id, public key PEM) the passport is signed with
    table_version: str = ""  # a table format's version trained on ("delta version 3"), on the run's lineage


def model_mcps(trained: TrainedVersion, current_tags: list[str]) -> list[MCP]:
    """Everything DataHub learns about a concluded version; its verdict tag replaces any earlier verdict tag."""
    group, model = model_group_urn(trained.pipeline), model_urn(trained.pipeline, trained.version)
    process = run_urn(trained.run_id)
    properties = s.MLModelPropertiesClass(
        name=f"{trained.pipeline} v{trained.version}",
        description=trained.summary,
        version=s.VersionTagClass(versionTag=str(trained.version)),
        date=trained.trained_at_ms,
        trainingMetrics=[s.MLMetricClass(name=k, value=repr(v)) for k, v in sorted(trained.metrics.items())],
        hyperParams=[s.MLHyperParamClass(name=k, value=str(v)) for k, v in sorted(trained.params.items())],
        groups=[group],
        trainingJobs=[process],
        customProperties={
            PASSPORT_PROPERTY: json.dumps(trained.passport, sort_keys=True),
            VERDICT_PROPERTY: trained.verdict.value,
            "mlflow.run_id": trained.mlflow_run_id,
            "kintsugi.run_id": trained.run_id,
        },
    )
    verdict_tags = {v.tag for v in Verdict}
    tags = [t for t in current_tags if t not in verdict_tags] + [trained.verdict.tag]
    created = s.AuditStampClass(time=trained.trained_at_ms, actor="urn:li:corpuser:kintsugi")
    version_read = {TABLE_VERSION_PROPERTY: trained.table_version} if trained.table_version else {}
    run_properties = {"pipeline": trained.pipeline, **version_read}
    key = (
        {KEY_ID_PROPERTY: trained.signing_key[0], PUBLIC_KEY_PROPERTY: trained.signing_key[1]}
        if trained.signing_key
        else {}
    )
    return [
        MCP(
            entityUrn=group,
            aspect=s.MLModelGroupPropertiesClass(
                name=trained.pipeline, description=f"Models of the {trained.pipeline} pipeline", customProperties=key
            ),
        ),
        MCP(entityUrn=model, aspect=properties),
        MCP(entityUrn=model, aspect=s.TrainingDataClass(trainingData=[s.BaseDataClass(dataset=trained.feature_table)])),
        *tag_mcps(model, tags),
        MCP(
            entityUrn=process,
            aspect=s.DataProcessInstancePropertiesClass(
                name=f"kintsugi run {trained.run_id}",
                created=created,
                type=s.DataProcessTypeClass.BATCH_AD_HOC,
                customProperties=run_properties,
            ),
        ),
        MCP(entityUrn=process, aspect=s.DataProcessInstanceInputClass(inputs=[trained.feature_table])),
        MCP(entityUrn=process, aspect=s.DataProcessInstanceOutputClass(outputs=[model])),
    ]


def tag_mcps(urn: str, tags: list[str]) -> list[MCP]:
    unique = list(dict.fromkeys(tags))
    return [MCP(entityUrn=urn, aspect=s.GlobalTagsClass(tags=[s.TagAssociationClass(t) for t in unique]))]


def context_tag_mcps(port: MetadataPort, urn: str, tag: str, context: str | None) -> list[MCP]:
    """`tag` on the entity with `context` (None: taken off it), every other tag kept as it is."""
    tags = port.aspect(urn, s.GlobalTagsClass) or s.GlobalTagsClass(tags=[])
    kept = [t for t in tags.tags if t.tag != tag]
    if context is not None:
        kept.append(s.TagAssociationClass(tag, context=context))
    return [MCP(entityUrn=urn, aspect=s.GlobalTagsClass(tags=kept))]


def read_model_tags(port: MetadataPort, urn: str) -> list[str]:
    tags = port.aspect(urn, s.GlobalTagsClass)
    return [t.tag for t in tags.tags] if tags else []


def model_versions(port: MetadataPort, pipeline: str | None = None) -> list[tuple[str, int]]:
    """(pipeline, version) of every mlModel Kintsugi wrote (of one pipeline), sorted."""
    found = [parsed for urn in port.urns("mlModel") if (parsed := parse_model_urn(urn)) is not None]
    return sorted(p for p in found if pipeline is None or p[0] == pipeline)


def datahub_champion(port: MetadataPort, pipeline: str) -> list[int]:
    """The versions DataHub tags `champion` (exactly one, or none, when DataHub and MLflow agree)."""
    return [
        v for _, v in model_versions(port, pipeline) if CHAMPION_TAG in read_model_tags(port, model_urn(pipeline, v))
    ]


def champion_tag_mcps(port: MetadataPort, pipeline: str, champion: int | None) -> list[MCP]:
    """Move the `champion` tag: off every other version of the pipeline, onto `champion` (None: onto none)."""
    mcps: list[MCP] = []
    for _, version in model_versions(port, pipeline):
        urn = model_urn(pipeline, version)
        tags = read_model_tags(port, urn)
        wanted = [t for t in tags if t != CHAMPION_TAG] + ([CHAMPION_TAG] if version == champion else [])
        if wanted != tags:
            mcps.extend(tag_mcps(urn, wanted))
    return mcps


def read_passport(port: MetadataPort, pipeline: str, version: int) -> dict[str, Any] | None:
    properties = port.aspect(model_urn(pipeline, version), s.MLModelPropertiesClass)
    raw = (properties.customProperties or {}).get(PASSPORT_PROPERTY) if properties else None
    return json.loads(raw) if raw else None


def read_verdict(port: MetadataPort, urn: str) -> str | None:
    """The verdict a model version's properties record, or None."""
    properties = port.aspect(urn, s.MLModelPropertiesClass)
    return (properties.customProperties or {}).get(VERDICT_PROPERTY) if properties else None


def training_datasets(port: MetadataPort, urn: str) -> tuple[str, ...]:
    """The datasets a model version was trained on (its trainingData), sorted."""
    training = port.aspect(urn, s.TrainingDataClass)
    return tuple(sorted(d.dataset for d in (training.trainingData if training else [])))


def models_trained_on(port: MetadataPort, datasets: set[str]) -> list[str]:
    """mlModel URNs whose training data is one of `datasets`."""
    found = []
    for urn in port.urns("mlModel"):
        training = port.aspect(urn, s.TrainingDataClass)
        if training and any(d.dataset in datasets for d in training.trainingData):
            found.append(urn)
    return found
