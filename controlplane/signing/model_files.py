"""The model's files signed in the OpenSSF model-signing format (private-key mode, no network).

The signature is a Sigstore bundle written to `model.sig` INSIDE the model directory, so it
travels with the model when MLflow logs or serves the directory. It is left out of hashing,
exactly as the `model_signing` CLI leaves out its `--signature` file, so

    model_signing verify key MODEL_DIR --signature MODEL_DIR/model.sig --public_key PUBLIC.pem

accepts the directory, and rejects it as soon as a file changes, goes missing or appears.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePath

import model_signing.hashing
import model_signing.signing
import model_signing.verifying
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from securesystemslib.dsse import Envelope

from controlplane.signing.errors import SigningError
from controlplane.signing.keys import PublicKey, SigningKey, load_public_key

__all__ = [
    "SIGNATURE_FILE",
    "ModelFilesVerification",
    "compare_files",
    "file_digests",
    "sign_model_dir",
    "verify_model_dir",
]

SIGNATURE_FILE = "model.sig"
# What model_signing raises for a bad, foreign or mismatching signature (its own CLI catches all).
_REJECTED = (ValueError, KeyError, TypeError, IndexError, OSError, InvalidSignature)


@dataclass(frozen=True)
class ModelFilesVerification:
    """`ok` only if model_signing accepted the signature; `altered_files` names what changed."""

    ok: bool
    reasons: tuple[str, ...]
    altered_files: tuple[str, ...] = ()


def _hashing() -> model_signing.hashing.Config:
    """sha256 per file, git files and the signature itself left out: the CLI's defaults."""
    return model_signing.hashing.Config().set_ignored_paths(paths=[SIGNATURE_FILE], ignore_git_paths=True)


def _require_dir(model_dir: Path) -> Path:
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise SigningError(f"model directory {model_dir} does not exist", "pass the directory the model was saved to")
    return model_dir


def file_digests(model_dir: Path) -> dict[str, str]:
    """Relative POSIX path -> sha256 hex of every file model_signing signs in `model_dir`."""
    model_dir = _require_dir(model_dir)
    try:
        manifest = _hashing().hash(model_dir)
    except (OSError, ValueError) as exc:  # ValueError: a symlink, which model_signing refuses to follow
        raise SigningError(f"cannot hash the files of {model_dir}: {exc}", "save the model as plain files") from exc
    return {PurePath(rd.identifier).as_posix(): rd.digest.digest_hex for rd in manifest.resource_descriptors()}


def compare_files(expected: dict[str, str], actual: dict[str, str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(every path that changed, went missing or appeared; one reason line per path)."""
    lines = {}
    for path in sorted(expected.keys() | actual.keys()):
        if path not in actual:
            lines[path] = f"altered: {path} (missing)"
        elif path not in expected:
            lines[path] = f"altered: {path} (a file that was not signed)"
        elif expected[path] != actual[path]:
            lines[path] = f"altered: {path} (its sha256 differs from the signed one)"
    return tuple(lines), tuple(lines.values())


def sign_model_dir(model_dir: Path, key: SigningKey) -> Path:
    """Sign every file in `model_dir` with `key`; write and return `model_dir/model.sig`."""
    model_dir = _require_dir(model_dir)
    signature = model_dir / SIGNATURE_FILE
    try:
        config = model_signing.signing.Config().use_elliptic_key_signer(private_key=key.path)
        config.set_hashing_config(_hashing()).sign(model_dir, signature)
    except (OSError, ValueError) as exc:
        raise SigningError(
            f"model_signing could not sign {model_dir}: {exc}", "check the key file and that the model is plain files"
        ) from exc
    return signature


def verify_model_dir(
    model_dir: Path, public_key: PublicKey | Path | str | bytes, *, signature: Path | None = None
) -> ModelFilesVerification:
    """Check `model_dir` against its model_signing signature with `public_key` only."""
    model_dir = _require_dir(model_dir)
    signature = Path(signature) if signature is not None else model_dir / SIGNATURE_FILE
    public = load_public_key(public_key)
    if not signature.is_file():
        return ModelFilesVerification(False, (f"unsigned: no model_signing signature at {signature}",))
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()) as printed:
        pem_path = Path(tmp) / "public.pem"
        pem_path.write_bytes(public.pem)
        try:
            config = model_signing.verifying.Config().use_elliptic_key_verifier(public_key=pem_path)
            config.set_hashing_config(_hashing()).verify(model_dir, signature)
        except _REJECTED as exc:
            return _rejected(model_dir, signature, public, exc)
    said = [f"model_signing: {line}" for line in printed.getvalue().splitlines() if line.strip()]
    return ModelFilesVerification(True, (f"model_signing signature valid for every file of {model_dir}", *said))


def _rejected(model_dir: Path, signature: Path, public: PublicKey, exc: BaseException) -> ModelFilesVerification:
    """model_signing said no; if the signature itself is genuine, name the files that differ from it."""
    signed = _signed_digests(signature, public)
    altered, lines = compare_files(signed, file_digests(model_dir)) if signed is not None else ((), ())
    if altered:
        detail = "the files differ from the signed ones"
    elif isinstance(exc, InvalidSignature):
        detail = "the signature does not match its content or this public key"
    else:
        detail = str(exc) or type(exc).__name__
    return ModelFilesVerification(False, (*lines, f"model_signing rejected {signature}: {detail}"), altered)


def _signed_digests(signature: Path, public: PublicKey) -> dict[str, str] | None:
    """The files a model_signing bundle lists, only if `public` verifies its DSSE signature (else names would lie)."""
    try:
        dsse = json.loads(signature.read_text(encoding="utf-8"))["dsseEnvelope"]
        payload = base64.b64decode(dsse["payload"], validate=True)
        pae = Envelope(payload, dsse["payloadType"], {}).pae()
        public.key.verify(base64.b64decode(dsse["signatures"][0]["sig"], validate=True), pae, ec.ECDSA(hashes.SHA256()))
        resources = json.loads(payload)["predicate"]["resources"]
        return {str(r["name"]): str(r["digest"]) for r in resources if r.get("algorithm") == "sha256"}
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError, binascii.Error, InvalidSignature):
        return None
