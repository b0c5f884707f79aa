"""Contracts: propose one from a table, apply one (validated, kept under contracts/, written to DataHub)."""

from __future__ import annotations

import shutil
from pathlib import Path

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.contracts import contract_mcps
from controlplane.datahub.datasets import profile_mcps
from controlplane.documents.odcs import parse_odcs
from controlplane.errors import ContractError, DataError
from controlplane.onboard.infer import Hints, propose
from controlplane.onboard.unitguess import given_unit
from controlplane.workspace import Workspace
from profiles.snapshot import SnapshotError, read_snapshot

__all__ = ["apply_contract_file", "infer_contract", "MAX_CONTRACT_BYTES"]

MAX_CONTRACT_BYTES = 1_000_000


def apply_contract_file(ws: Workspace, file: Path, reference: Path | None, now_ms: int) -> str:
    if not file.is_file():
        raise ContractError(f"contract file {file} does not exist", "pass the path of an ODCS v3 YAML file")
    if file.stat().st_size > MAX_CONTRACT_BYTES:
        raise ContractError(f"contract file {file} is over {MAX_CONTRACT_BYTES} bytes", "a contract is a page of YAML")
    text = file.read_text()
    contract = parse_odcs(text, str(file))
    mcps = contract_mcps(contract, text)
    if reference is not None:
        try:
            mcps += profile_mcps(contract.dataset_urn, read_snapshot(reference).profile, now_ms)
        except SnapshotError as exc:
            raise DataError(str(exc), "pass a readable parquet file as --reference") from exc
    kept = ws.contracts / file.name
    if kept.resolve() != file.resolve():
        ws.contracts.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(file, kept)
    with metadata_session(ws) as metadata:
        metadata.emit(mcps, now_ms)
    return contract.dataset_urn


def infer_contract(data: Path, dataset: str, unit_options: list[str]) -> tuple[str, list[str]]:
    """(ODCS YAML proposed from a parquet file, the columns whose unit is a guess to review)."""
    units = {}
    for option in unit_options:
        column, sep, unit = option.partition("=")
        if not sep:
            raise ContractError(f"--unit {option!r} is not COLUMN=UNIT", "write it as COLUMN=UNIT, or COLUMN=none")
        units[column] = given_unit(unit)
    try:
        profile = read_snapshot(data).profile
    except SnapshotError as exc:
        raise DataError(str(exc), "pass a readable parquet file") from exc
    unknown = sorted(set(units) - set(profile.columns))
    if unknown:
        raise ContractError(f"--unit names columns not in {data}: {', '.join(unknown)}", "check the column names")
    proposal = propose(profile, Hints(units=units), dataset=dataset, table=data.stem)
    text = proposal.to_odcs(
        contract_id=data.stem,
        version="0.1.0",
        purpose=f"Proposed by `kintsugi contract infer` from {profile.row_count} rows; review it.",
    )
    return text, [q.column for q in proposal.questions if q.kind == "unit"]
