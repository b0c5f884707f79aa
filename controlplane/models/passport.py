"""A version's passport: shown, verified against both stores and the model's files with public keys only,
used as the evidence a promotion rests on, and audited against DataHub history."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controlplane.datahub.connect import metadata_session
from controlplane.datahub.history import health_at, unhealed_at
from controlplane.datahub.models import context_tag_mcps, datahub_champion, model_versions, read_passport
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import model_urn
from controlplane.errors import NotFound, RegistryError, VersionNotFound
from controlplane.models import passport_signing as passport
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.signing import PublicKey
from controlplane.vocab import Verdict
from controlplane.workspace import Workspace

if TYPE_CHECKING:
    from training.registry import ModelStore

__all__ = [
    "PassportCheck",
    "AuditRow",
    "show_passport",
    "verify_passport",
    "audit_versions",
    "evidence_refusal",
    "champions_agree",
    "AUDIT_TAG",
    "DRAFT",
]

AUDIT_TAG = "urn:li:tag:audit-unsafe"
DRAFT = "draft"  # the status of a paused candidate's passport: what approving would sign, not signed yet


@dataclass(frozen=True)
class PassportCheck:
    ok: bool
    status: str  # valid | altered | untrusted_key | unsigned | legacy_hmac | copies_differ | missing | draft
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class AuditRow:
    model: str
    version: int
    champion: bool
    trained_at_ms: int
    recorded: tuple[str, ...]
    recomputed: tuple[str, ...]
    signature: str = "valid"  # the passport's check over the model's files as they are now (as `passport verify`)

    @property
    def disagrees(self) -> bool:
        return set(self.recomputed) != set(self.recorded)

    @property
    def unsafe(self) -> bool:
        return bool(self.recomputed) or self.signature != "valid"


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
        found = read_passport(metadata, model, version)
    if found is None:
        raise VersionNotFound(f"DataHub holds no passport for {model} v{version}", "check the model name and version")
    return found


def _mlflow_copy(store: ModelStore, model: str, version: int, scratch: Path) -> tuple[dict[str, Any], Path]:
    """The passport MLflow holds for a version, and the version's model files (downloaded into `scratch`)."""
    with training_errors_mapped():
        document = store.read_json_artifact(store.run_for_version(model, version), "passport.json")
        return document, store.download_model(model, version, scratch)


def _checked(
    where: str, document: dict[str, Any], keys: list[PublicKey], model_dir: Path | None
) -> tuple[str, list[str]]:
    result = passport.check(document, keys, model_dir)
    status = "valid" if result.status == "legacy_hmac" and result.verified else result.status
    return status, [f"{where} copy: {reason}" for reason in result.reasons]


def verify_passport(
    ws: Workspace, model: str, version: int | None = None, *, public_key: Path | None = None
) -> PassportCheck:
    """Valid only when both copies (DataHub's, MLflow's) are signed by a trusted key, name the model files as
    they are now, and are the same document. Needs only the public key."""
    version = _version(ws, model, version)
    keys = passport.trusted_keys(ws, public_key)
    with metadata_session(ws, read_only=True) as metadata:
        in_datahub = read_passport(metadata, model, version)
    with tempfile.TemporaryDirectory() as scratch, training_errors_mapped():
        in_mlflow: dict[str, Any] | None = None
        model_dir: Path | None = None
        try:
            document, files = _mlflow_copy(open_store(ws), model, version, Path(scratch))
        except RegistryError as exc:
            mlflow_reasons = [f"MLflow copy unreadable: {exc.message}"]
        else:
            in_mlflow, model_dir = document, files
            mlflow_status, mlflow_reasons = _checked("MLflow", document, keys, files)
        statuses, reasons = [], list(mlflow_reasons)
        if in_mlflow is not None:
            statuses.append(mlflow_status)
        if in_datahub is None:
            reasons.append("DataHub copy missing")
            statuses.append("missing")
        else:
            datahub_status, more = _checked("DataHub", in_datahub, keys, model_dir)
            statuses.append(datahub_status)
            reasons += more
    if in_datahub is not None and in_mlflow is not None and _canonical(in_datahub) != _canonical(in_mlflow):
        reasons.append("DataHub and MLflow copies differ")
        statuses.append("copies_differ")
    bad = [status for status in statuses if status != "valid"]
    ok = in_mlflow is not None and not bad
    return PassportCheck(ok, bad[0] if bad else ("valid" if ok else "missing"), tuple(dict.fromkeys(reasons)))


def _canonical(document: dict[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), default=str)


def evidence_refusal(ws: Workspace, store: ModelStore, model: str, version: int) -> str | None:
    """Why the version's own evidence does not allow it to be champion, or None: the passport MLflow holds must
    be signed by the workspace's key over the model files as they are, and its signed verdict APPROVED."""
    try:
        keys = passport.trusted_keys(ws)
        with tempfile.TemporaryDirectory() as scratch, training_errors_mapped():
            document, model_dir = _mlflow_copy(store, model, version, Path(scratch))
            result = passport.check(document, keys, model_dir)
    except (RegistryError, passport.SigningError) as exc:
        return f"its passport cannot be read or checked ({exc.message})"
    if not (result.status == "valid" or (result.status == "legacy_hmac" and result.verified)):
        return "its passport does not verify (" + "; ".join(result.reasons) + ")"
    verdict = (document.get("body", {}).get("verdict") or {}).get("verdict")
    if verdict != Verdict.APPROVED.value:
        return f"its signed verdict is {verdict or 'missing'}"
    return None


def audit_versions(ws: Workspace, model: str | None, *, write: bool = False) -> list[AuditRow]:
    """Recompute each version's health at its training instant from DataHub history, and check its signature."""
    keys = passport.trusted_keys(ws)
    with metadata_session(ws, read_only=not write) as metadata:
        rows = [_audit_one(ws, metadata, keys, name, version) for name, version in model_versions(metadata, model)]
        if write:
            for row in rows:
                _write_audit(metadata, row)
    return sorted(rows, key=lambda r: (r.model, r.version))


def _audit_one(ws: Workspace, metadata: MetadataPort, keys: list[PublicKey], model: str, version: int) -> AuditRow:
    found = read_passport(metadata, model, version)
    if found is None:
        raise VersionNotFound(f"{model} v{version} has no readable passport", "every trained version should carry one")
    body = found["body"]
    at_ms, table = int(body["trained_at_ms"]), body["snapshot"]["dataset"]
    healed = [i["urn"] for i in body.get("incidents", [])]
    recomputed = unhealed_at(health_at(metadata, {table, *body.get("lineage", [])}, at_ms), table, healed)
    with tempfile.TemporaryDirectory() as scratch, training_errors_mapped():
        store = open_store(ws)
        champion = store.champion_version(model) == version
        try:
            model_dir: Path | None = store.download_model(model, version, Path(scratch))
        except RegistryError:
            model_dir = None
        signature = "files_unreadable" if model_dir is None else _checked("DataHub", found, keys, model_dir)[0]
    return AuditRow(
        model, version, champion, at_ms, tuple(body.get("unhealed_at_training", [])), tuple(recomputed), signature
    )


def champions_agree(ws: Workspace, model: str) -> tuple[bool, str]:
    """DataHub tags exactly the version MLflow's `champion` alias points at (or none when there is none)."""
    with training_errors_mapped():
        in_mlflow = open_store(ws).champion_version(model)
    with metadata_session(ws, read_only=True) as metadata:
        in_datahub = datahub_champion(metadata, model)
    agree = in_datahub == ([in_mlflow] if in_mlflow is not None else [])
    return agree, f"MLflow champion {in_mlflow}, DataHub champion tag on {in_datahub or 'no version'}"


def _write_audit(metadata: MetadataPort, row: AuditRow) -> None:
    urn = model_urn(row.model, row.version)
    context = json.dumps(list(row.recomputed)) if row.unsafe else None
    metadata.emit(context_tag_mcps(metadata, urn, AUDIT_TAG, context))
