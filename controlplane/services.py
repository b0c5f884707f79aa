"""The service layer the front doors (CLI, API, MCP) share: open the stores, call the loop or the guard."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from datahub.metadata.schema_classes import IncidentInfoClass, IncidentStateClass

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.estate import contract_mcps, downstream_of, profile_mcps
from controlplane.datahub.models import models_trained_on
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import contract_urn
from controlplane.detect import guard_snapshot
from controlplane.errors import ContractError, DataError
from controlplane.infer import propose_contract
from controlplane.odcs import parse_odcs
from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from guard.findings import GuardReport
from guard.snapshot import SnapshotError, read_snapshot
from guard.units import UNITS

__all__ = ["guard_pipeline", "apply_contract", "show_contract", "infer_contract", "list_incidents", "at_risk_models"]


def guard_pipeline(ws: Workspace, pipeline: str, data: Path | None = None, now_ms: int | None = None) -> GuardReport:
    """The guard alone, read-only: nothing is written anywhere."""
    spec = load_spec(ws, pipeline)
    with metadata_session(ws, read_only=True) as metadata:
        _, report = guard_snapshot(metadata, spec.feature_table, data or spec.data, now_ms or int(time.time() * 1000))
    return report


def apply_contract(ws: Workspace, file: Path, reference: Path | None = None) -> str:
    if not file.is_file():
        raise ContractError(f"contract file {file} does not exist", "pass the path of an ODCS v3 YAML file")
    text = file.read_text()
    contract = parse_odcs(text, str(file))
    mcps = contract_mcps(contract, text)
    now_ms = int(time.time() * 1000)
    if reference is not None:
        try:
            mcps += profile_mcps(contract.dataset_urn, read_snapshot(reference).profile, now_ms)
        except SnapshotError as exc:
            raise DataError(str(exc), "pass a readable parquet file as --reference") from exc
    with metadata_session(ws) as metadata:
        metadata.emit(mcps, now_ms)
    return contract.dataset_urn


def show_contract(ws: Workspace, dataset: str) -> str:
    from datahub.metadata.schema_classes import DataContractPropertiesClass

    with metadata_session(ws, read_only=True) as metadata:
        properties = metadata.aspect(contract_urn(dataset), DataContractPropertiesClass)
    if properties is None or not properties.rawContract:
        raise ContractError(f"DataHub holds no contract for {dataset}", "apply one with `kintsugi contract apply FILE`")
    return properties.rawContract


def infer_contract(data: Path, dataset: str, unit_options: list[str]) -> tuple[str, list[str]]:
    units = {}
    for option in unit_options:
        column, sep, unit = option.partition("=")
        if not sep or unit not in UNITS:
            raise ContractError(f"--unit {option!r} is not COLUMN=UNIT with a known unit",
                                f"use one of: {', '.join(sorted(UNITS))}")
        units[column] = unit
    try:
        profile = read_snapshot(data).profile
    except SnapshotError as exc:
        raise DataError(str(exc), "pass a readable parquet file") from exc
    unknown = sorted(set(units) - set(profile.columns))
    if unknown:
        raise ContractError(f"--unit names columns not in {data}: {', '.join(unknown)}", "check the column names")
    return propose_contract(profile, dataset=dataset, name=data.stem, units=units)


def at_risk_models(metadata: MetadataPort, datasets: list[str]) -> list[str]:
    """mlModels trained on these datasets or on anything downstream of them."""
    return models_trained_on(metadata, downstream_of(metadata, set(datasets)))


def list_incidents(ws: Workspace, *, active_only: bool = False) -> list[dict[str, Any]]:
    with metadata_session(ws, read_only=True) as metadata:
        rows = []
        for urn in metadata.urns("incident"):
            info = metadata.aspect(urn, IncidentInfoClass)
            if info is None or (active_only and info.status.state != IncidentStateClass.ACTIVE):
                continue
            rows.append({"urn": urn, "title": info.title, "state": info.status.state, "datasets": list(info.entities),
                         "message": info.status.message, "created_ms": info.created.time,
                         "at_risk_models": at_risk_models(metadata, list(info.entities))})
    return sorted(rows, key=lambda r: r["created_ms"])
