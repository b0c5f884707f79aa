"""Show and verify a version's passport against both stores, and audit versions against DataHub history."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.history import health_at, unhealed_at
from controlplane.datahub.models import model_versions, read_passport
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import model_urn
from controlplane.errors import NotFound, RegistryError, VersionNotFound
from controlplane.modelstore import open_store, training_errors_mapped
from controlplane.passport import canonical, verify_signature
from controlplane.workspace import Workspace

__all__ = ["PassportCheck", "AuditRow", "show_passport", "verify_passport", "audit_versions", "AUDIT_TAG"]

AUDIT_TAG = "urn:li:tag:audit-unsafe"


@dataclass(frozen=True)
class PassportCheck:
    ok: bool
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class AuditRow:
    model: str
    version: int
    champion: bool
    trained_at_ms: int
    recorded: tuple[str, ...]
    recomputed: tuple[str, ...]

    @property
    def disagrees(self) -> bool:
        return set(self.recomputed) != set(self.recorded)

    @property
    def unsafe(self) -> bool:
        return bool(self.recomputed)


def _version(ws: Workspace, model: str, version: int | None) -> int:
    if version is not None:
        return version
    with training_errors_mapped():
        champion = open_store(ws).champion_version(model)
    if champion is None:
        raise NotFound(f"model {model!r} has no champion", "name a version: `kintsugi passport show MODEL VERSION`")
    return champion


def show_passport(ws: Workspace, model: str, version: int | None = None) -> dict[str, Any]:
    version = _version(ws, model, version)
    with metadata_session(ws, read_only=True) as metadata:
        passport = read_passport(metadata, model, version)
    if passport is None:
        raise VersionNotFound(f"DataHub holds no passport for {model} v{version}", "check the model name and version")
    return passport


def verify_passport(ws: Workspace, model: str, version: int | None = None) -> PassportCheck:
    """Signature valid, and the same document in DataHub and in the MLflow artifact."""
    version = _version(ws, model, version)
    reasons: list[str] = []
    with metadata_session(ws, read_only=True) as metadata:
        in_datahub = read_passport(metadata, model, version)
    try:
        with training_errors_mapped():
            store = open_store(ws)
            in_mlflow = store.read_json_artifact(store.run_for_version(model, version), "passport.json")
    except RegistryError as exc:
        in_mlflow, reasons = None, [f"MLflow copy unreadable: {exc.message}"]
    if in_datahub is None:
        reasons.append("DataHub copy missing")
    if in_datahub is not None and in_mlflow is not None and canonical(in_datahub) != canonical(in_mlflow):
        reasons.append("DataHub and MLflow copies differ")
    for where, copy in (("DataHub", in_datahub), ("MLflow", in_mlflow)):
        if copy is not None:
            valid, why = verify_signature(copy)
            if not valid:
                reasons.append(f"{where} copy: {why}")
    return PassportCheck(not reasons, tuple(reasons) or ("signature valid; DataHub and MLflow copies agree",))


def audit_versions(ws: Workspace, model: str | None, *, write: bool = False) -> list[AuditRow]:
    """Recompute each version's health at its training instant from DataHub history."""
    with metadata_session(ws, read_only=not write) as metadata:
        rows = [_audit_one(ws, metadata, name, version) for name, version in model_versions(metadata, model)]
        if write:
            for row in rows:
                _write_audit(metadata, row)
    return sorted(rows, key=lambda r: (r.model, r.version))


def _audit_one(ws: Workspace, metadata: MetadataPort, model: str, version: int) -> AuditRow:
    passport = read_passport(metadata, model, version)
    if passport is None:
        raise VersionNotFound(f"{model} v{version} has no readable passport", "every trained version should carry one")
    body = passport["body"]
    at_ms, table = int(body["trained_at_ms"]), body["snapshot"]["dataset"]
    healed = [i["urn"] for i in body.get("incidents", [])]
    recomputed = unhealed_at(health_at(metadata, {table, *body.get("lineage", [])}, at_ms), table, healed)
    with training_errors_mapped():
        champion = open_store(ws).champion_version(model) == version
    return AuditRow(model, version, champion, at_ms, tuple(body.get("unhealed_at_training", [])), tuple(recomputed))


def _write_audit(metadata: MetadataPort, row: AuditRow) -> None:
    urn = model_urn(row.model, row.version)
    tags = metadata.aspect(urn, s.GlobalTagsClass) or s.GlobalTagsClass(tags=[])
    kept = [t for t in tags.tags if t.tag != AUDIT_TAG]
    if row.unsafe:
        kept.append(s.TagAssociationClass(AUDIT_TAG, context=json.dumps(list(row.recomputed))))
    metadata.emit([MCP(entityUrn=urn, aspect=s.GlobalTagsClass(tags=kept))])
