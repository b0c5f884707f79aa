"""Every URN the loop writes is derived from its key, so reruns and retries reuse instead of duplicating."""
from __future__ import annotations

from datahub.emitter.mce_builder import datahub_guid, make_ml_model_group_urn, make_ml_model_urn

__all__ = ["assertion_urn", "contract_urn", "incident_urn", "model_group_urn", "model_urn", "run_urn"]


def assertion_urn(dataset: str, check: str, column: str | None) -> str:
    return "urn:li:assertion:" + datahub_guid({"dataset": dataset, "check": check, "column": column or ""})


def contract_urn(dataset: str) -> str:
    return "urn:li:dataContract:" + datahub_guid({"dataset": dataset})


def incident_urn(dataset: str, kind: str, column: str | None, generation: int) -> str:
    """The n-th incident for one failure (dataset, kind, column); a recurrence after resolution is n+1."""
    key = {"dataset": dataset, "kind": kind, "column": column or "", "generation": str(generation)}
    return "urn:li:incident:" + datahub_guid(key)


def model_group_urn(pipeline: str) -> str:
    return make_ml_model_group_urn("mlflow", pipeline, "PROD")


def model_urn(pipeline: str, version: int) -> str:
    return make_ml_model_urn("mlflow", f"{pipeline}.v{version}", "PROD")


def run_urn(run_id: str) -> str:
    return "urn:li:dataProcessInstance:" + datahub_guid({"kintsugi_run": run_id})
