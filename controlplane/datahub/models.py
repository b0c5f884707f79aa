"""Trained versions in DataHub: mlModelGroup, mlModel with its passport, training lineage, the run as a process."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import model_group_urn, model_urn, run_urn

__all__ = ["TrainedVersion", "model_mcps", "read_passport", "PASSPORT_PROPERTY", "VERDICT_TAGS", "models_trained_on"]

PASSPORT_PROPERTY = "kintsugi.passport"
VERDICT_TAGS = {"APPROVED": "urn:li:tag:champion", "BLOCKED": "urn:li:tag:blocked",
                "NEEDS_REVIEW": "urn:li:tag:needs-review", "REJECTED": "urn:li:tag:rejected"}


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
    verdict: str
    summary: str
    passport: dict[str, Any]


def model_mcps(trained: TrainedVersion) -> list[MCP]:
    group, model, process = model_group_urn(trained.pipeline), model_urn(trained.pipeline, trained.version), run_urn(trained.run_id)
    properties = s.MLModelPropertiesClass(
        name=f"{trained.pipeline} v{trained.version}", description=trained.summary,
        version=s.VersionTagClass(versionTag=str(trained.version)), date=trained.trained_at_ms,
        trainingMetrics=[s.MLMetricClass(name=k, value=repr(v)) for k, v in sorted(trained.metrics.items())],
        hyperParams=[s.MLHyperParamClass(name=k, value=str(v)) for k, v in sorted(trained.params.items())],
        groups=[group], trainingJobs=[process],
        customProperties={PASSPORT_PROPERTY: json.dumps(trained.passport, sort_keys=True), "kintsugi.verdict": trained.verdict,
                          "mlflow.run_id": trained.mlflow_run_id, "kintsugi.run_id": trained.run_id},
    )
    created = s.AuditStampClass(time=trained.trained_at_ms, actor="urn:li:corpuser:kintsugi")
    return [
        MCP(entityUrn=group, aspect=s.MLModelGroupPropertiesClass(name=trained.pipeline,
                                                                 description=f"Models of the {trained.pipeline} pipeline")),
        MCP(entityUrn=model, aspect=properties),
        MCP(entityUrn=model, aspect=s.TrainingDataClass(trainingData=[s.BaseDataClass(dataset=trained.feature_table)])),
        MCP(entityUrn=model, aspect=s.GlobalTagsClass(tags=[s.TagAssociationClass(VERDICT_TAGS[trained.verdict])])),
        MCP(entityUrn=process, aspect=s.DataProcessInstancePropertiesClass(
            name=f"kintsugi run {trained.run_id}", created=created, type=s.DataProcessTypeClass.BATCH_AD_HOC,
            customProperties={"pipeline": trained.pipeline})),
        MCP(entityUrn=process, aspect=s.DataProcessInstanceInputClass(inputs=[trained.feature_table])),
        MCP(entityUrn=process, aspect=s.DataProcessInstanceOutputClass(outputs=[model])),
    ]


def read_passport(port: MetadataPort, pipeline: str, version: int) -> dict[str, Any] | None:
    properties = port.aspect(model_urn(pipeline, version), s.MLModelPropertiesClass)
    raw = (properties.customProperties or {}).get(PASSPORT_PROPERTY) if properties else None
    return json.loads(raw) if raw else None


def models_trained_on(port: MetadataPort, datasets: set[str]) -> list[str]:
    """mlModel URNs whose training data is one of `datasets`."""
    found = []
    for urn in port.urns("mlModel"):
        training = port.aspect(urn, s.TrainingDataClass)
        if training and any(d.dataset in datasets for d in training.trainingData):
            found.append(urn)
    return found
