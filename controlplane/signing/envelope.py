"""Sign a passport into a DSSE envelope, and verify one, naming what was altered.

A stored passport is `{"body": BODY, "envelope": DSSE, "public_key": PEM}`: the envelope signs
an in-toto Statement whose predicate is BODY; `body` is a plain copy for readers, and the
difference between it and the signed predicate names the altered fields; `public_key` is the
signer's key, never trusted, only used to tell "signed by another key" from "tampered with".
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import FormatError, UnverifiedSignatureError
from securesystemslib.signer import ECDSA_SHA2_NISTP256, Key, SecretsHandler, Signature, Signer, SSlibKey

from controlplane.signing.errors import SigningError
from controlplane.signing.jsonpaths import changed_paths
from controlplane.signing.keys import PublicKey, SigningKey, load_public_key
from controlplane.signing.legacy import LEGACY_ALG, is_legacy, legacy_hmac_matches, legacy_is_unsigned
from controlplane.signing.model_files import compare_files, file_digests
from controlplane.signing.statement import (
    PAYLOAD_TYPE,
    build_statement,
    parse_statement,
    statement_bytes,
    subject_digests,
)

__all__ = [
    "ALTERED",
    "LEGACY_HMAC",
    "STATUSES",
    "UNSIGNED",
    "UNTRUSTED_KEY",
    "VALID",
    "PassportVerification",
    "sign_passport",
    "verify_passport",
]

VALID, ALTERED, UNTRUSTED_KEY, UNSIGNED, LEGACY_HMAC = "valid", "altered", "untrusted_key", "unsigned", "legacy_hmac"
STATUSES = (VALID, ALTERED, UNTRUSTED_KEY, UNSIGNED, LEGACY_HMAC)
_UNREADABLE = (KeyError, ValueError, TypeError, AttributeError, FormatError)


@dataclass(frozen=True)
class PassportVerification:
    """What a passport check found. `verified` is True only for `valid`, or `legacy_hmac` with its right key."""

    status: str
    reasons: tuple[str, ...]
    altered_fields: tuple[str, ...] = ()
    altered_files: tuple[str, ...] = ()
    keyid: str | None = None
    verified: bool = False


class _DeterministicEcdsaSigner(Signer):
    """A securesystemslib Signer with RFC 6979 ECDSA: the same passport always gets the same signature."""

    def __init__(self, key: SigningKey) -> None:
        self._private_key = key.private_key
        self._public_key = _sslib_key(key.public)

    @property
    def public_key(self) -> Key:
        return self._public_key

    @classmethod
    def from_priv_key_uri(
        cls, priv_key_uri: str, public_key: Key, secrets_handler: SecretsHandler | None = None
    ) -> Signer:
        raise ValueError("load Kintsugi signing keys with controlplane.signing.load_or_create_key")

    def sign(self, payload: bytes) -> Signature:
        der = self._private_key.sign(payload, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        return Signature(self._public_key.keyid, der.hex())


def _sslib_key(public: PublicKey) -> SSlibKey:
    return SSlibKey.from_crypto(public.key, keyid=public.keyid, scheme=ECDSA_SHA2_NISTP256)


def sign_passport(body: Mapping[str, Any], model_dir: Path, key: SigningKey) -> dict[str, Any]:
    """The stored passport: `body` signed as an in-toto Statement over the files of `model_dir`, in DSSE."""
    statement = build_statement(body, model_dir)
    envelope = Envelope(statement_bytes(statement), PAYLOAD_TYPE, {})
    envelope.sign(_DeterministicEcdsaSigner(key))
    return {"body": statement["predicate"], "envelope": envelope.to_dict(), "public_key": key.public.pem.decode()}


def verify_passport(
    passport: Mapping[str, Any],
    *,
    trusted_public_keys: Iterable[PublicKey | Path | str | bytes],
    model_dir: Path | None = None,
    claimed_body: Mapping[str, Any] | None = None,
    hmac_key: str | None = None,
) -> PassportVerification:
    """Check a stored passport (or a bare DSSE envelope) with public keys only.

    `claimed_body` is the plain copy to compare with the signed one (default: the passport's
    `body`); `model_dir`, when given, is checked file by file against the signed subjects;
    `hmac_key` checks a legacy HMAC passport.
    """
    if not isinstance(passport, Mapping):
        raise SigningError(f"a passport is a JSON object, not {type(passport).__name__}", "pass the stored passport")
    doc: Mapping[str, Any] = {"envelope": passport} if "payloadType" in passport else passport
    if is_legacy(doc):
        return _verify_legacy(doc, hmac_key)
    if "envelope" not in doc:
        return PassportVerification(UNSIGNED, ("unsigned: the passport carries no signature",))
    trusted = {k.keyid: k for k in map(load_public_key, trusted_public_keys)}
    claimed = claimed_body if claimed_body is not None else doc.get("body")
    return _verify_dsse(doc, trusted, model_dir, claimed)


def _verify_legacy(doc: Mapping[str, Any], hmac_key: str | None) -> PassportVerification:
    alg = doc["signature"].get("alg")
    if legacy_is_unsigned(doc):
        return PassportVerification(UNSIGNED, ("unsigned: legacy passport written without a key",))
    if alg != LEGACY_ALG:
        return PassportVerification(ALTERED, (f"altered: signature algorithm {alg!r} is not one Kintsugi writes",))
    if not hmac_key:
        why = "legacy HMAC-SHA256 passport: only its secret can check it; pass the HMAC key, or re-sign the version"
        return PassportVerification(LEGACY_HMAC, (why,))
    if legacy_hmac_matches(doc, hmac_key):
        why = "legacy HMAC-SHA256 passport: valid with the given key"
        return PassportVerification(LEGACY_HMAC, (why,), verified=True)
    why = "altered: the legacy HMAC does not match (changed, or made with another key: an HMAC cannot tell which)"
    return PassportVerification(ALTERED, (why,))


def _verify_dsse(
    doc: Mapping[str, Any], trusted: dict[str, PublicKey], model_dir: Path | None, claimed: Any
) -> PassportVerification:
    try:
        envelope = Envelope.from_dict(copy.deepcopy(dict(doc["envelope"])))  # from_dict edits what it reads
    except _UNREADABLE as exc:
        return PassportVerification(ALTERED, (f"altered: the signed envelope is unreadable ({exc!r})",))
    if not envelope.signatures:
        return PassportVerification(UNSIGNED, ("unsigned: the envelope holds no signature",))
    verdict, keyid = _judge(envelope, trusted, _embedded_key(doc))
    if verdict == "trusted":
        return _check_content(envelope, keyid, model_dir, claimed)
    if verdict == "forged":
        return _forged(envelope, keyid, claimed)
    checked = "its signature is genuine" if verdict == "untrusted" else "the passport carries no key to check it with"
    why = f"untrusted key: signed by key {keyid}, which is not a trusted key ({checked})"
    return PassportVerification(UNTRUSTED_KEY, (why,), keyid=keyid)


def _judge(envelope: Envelope, trusted: dict[str, PublicKey], embedded: PublicKey | None) -> tuple[str, str]:
    """trusted (a trusted key verifies a signature), forged (no key verifies the signature it names),
    untrusted (the signer's own key verifies it, but it is not trusted), or unknown (nothing to check with)."""
    pae, forged = envelope.pae(), None
    for signature in envelope.signatures.values():
        key = trusted.get(signature.keyid)
        if key is not None and _verifies(key, signature, pae):
            return "trusted", signature.keyid
        forged = forged or (signature.keyid if key is not None else None)
    if forged:
        return "forged", forged
    for signature in envelope.signatures.values():
        if embedded is not None and embedded.keyid == signature.keyid:
            return ("untrusted" if _verifies(embedded, signature, pae) else "forged"), signature.keyid
    return "unknown", next(iter(envelope.signatures))


def _verifies(key: PublicKey, signature: Signature, pae: bytes) -> bool:
    try:
        _sslib_key(key).verify_signature(signature, pae)
    except UnverifiedSignatureError:  # also VerificationError, its subclass
        return False
    return True


def _embedded_key(doc: Mapping[str, Any]) -> PublicKey | None:
    try:
        return load_public_key(str(doc["public_key"]))
    except (KeyError, SigningError):
        return None


def _forged(envelope: Envelope, keyid: str, claimed: Any) -> PassportVerification:
    """The signature does not cover this payload: name the fields where it differs from the plain copy."""
    try:
        fields = changed_paths(claimed, parse_statement(envelope.payload)["predicate"]) if claimed is not None else []
    except ValueError:
        fields = []
    lines = [f"altered: {f} (the signed payload was changed after signing)" for f in fields]
    lines.append(f"altered: the signature by key {keyid} does not match the signed content")
    return PassportVerification(ALTERED, tuple(lines), tuple(fields), keyid=keyid)


def _check_content(envelope: Envelope, keyid: str, model_dir: Path | None, claimed: Any) -> PassportVerification:
    """Genuine signature by a trusted key: now the plain copy and the model files must match what it signs."""
    try:
        if envelope.payload_type != PAYLOAD_TYPE:
            raise ValueError(f"payloadType is {envelope.payload_type!r}, not {PAYLOAD_TYPE!r}")
        statement = parse_statement(envelope.payload)
    except ValueError as exc:
        why = f"altered: the signed content is not a Kintsugi passport ({exc})"
        return PassportVerification(ALTERED, (why,), keyid=keyid)
    fields = changed_paths(claimed, statement["predicate"]) if claimed is not None else []
    lines = [f"altered: {f} (the stored copy differs from the signed passport)" for f in fields]
    files: tuple[str, ...] = ()
    if model_dir is not None:
        files, file_lines = compare_files(subject_digests(statement), file_digests(model_dir))
        lines += file_lines
    if lines:
        return PassportVerification(ALTERED, tuple(lines), tuple(fields), files, keyid)
    return PassportVerification(VALID, _valid_reasons(keyid, model_dir, claimed, statement), keyid=keyid, verified=True)


def _valid_reasons(keyid: str, model_dir: Path | None, claimed: Any, statement: dict[str, Any]) -> tuple[str, ...]:
    n = len(statement["subject"])
    return (
        f"signature valid: signed by trusted key {keyid}",
        "the stored copy matches the signed passport" if claimed is not None else "no stored copy to compare",
        f"the {n} model files match their signed digests" if model_dir is not None else "model files not checked",
    )
