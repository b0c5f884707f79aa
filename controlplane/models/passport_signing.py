"""The Model Passport, signed by default with the workspace's key (see `controlplane.signing` for the format).

The first signing in a workspace creates its ECDSA P-256 key pair under `<workspace>/keys/`
(`KINTSUGI_SIGNING_KEY` names a team's own PEM instead). A version's model files are sealed with the OpenSSF
model-signing format before they are logged (`seal`); its passport — an in-toto Statement over those files'
digests whose predicate is the passport body — is signed at the conclusion of its run (`sign`). Anyone with
the public key checks both (`check`); old HMAC passports still verify when `KINTSUGI_PASSPORT_KEY` holds their
secret, and are reported as the legacy format.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

from controlplane.signing import (
    PUBLIC_KEY_FILE,
    PassportVerification,
    PublicKey,
    SigningError,
    SigningKey,
    load_or_create_key,
    load_public_key,
    sign_model_dir,
    sign_passport,
    verify_passport,
)
from controlplane.workspace import Workspace

__all__ = [
    "workspace_key",
    "seal",
    "sign",
    "unsigned",
    "trusted_keys",
    "check",
    "public_key",
    "LEGACY_KEY_ENV",
    "SigningError",
    "PassportVerification",
]

LEGACY_KEY_ENV = "KINTSUGI_PASSPORT_KEY"  # the HMAC secret of passports written before signatures were public


def workspace_key(ws: Workspace) -> SigningKey:
    return load_or_create_key(ws.keys)


def public_key(ws: Workspace) -> PublicKey:
    """The workspace's public key (created with the key pair on first use)."""
    return workspace_key(ws).public


def seal(ws: Workspace) -> Callable[[Path], None]:
    """A function that signs a saved model directory's files (model-signing format, `model.sig` inside it)."""
    key = workspace_key(ws)

    def sealed(model_dir: Path) -> None:
        sign_model_dir(model_dir, key)

    return sealed


def _plain(body: dict[str, Any]) -> dict[str, Any]:
    """The body as plain JSON (numbers from numpy, dates, paths as text): what is signed is what is read back."""
    return json.loads(json.dumps(body, default=str, allow_nan=False, sort_keys=True))


def sign(ws: Workspace, body: dict[str, Any], model_dir: Path) -> dict[str, Any]:
    """The stored passport: the body, its DSSE envelope over the model files' digests, the signer's public key."""
    return sign_passport(_plain(body), model_dir, workspace_key(ws))


def unsigned(body: dict[str, Any], why: str) -> dict[str, Any]:
    return {"body": _plain(body), "unsigned": why}


def trusted_keys(ws: Workspace, public_key_pem: Path | None = None) -> list[PublicKey]:
    """The keys a passport may be signed by: the one given, else the workspace's public key file."""
    if public_key_pem is not None:
        return [load_public_key(public_key_pem)]
    path = ws.keys / PUBLIC_KEY_FILE
    if os.environ.get("KINTSUGI_SIGNING_KEY"):
        return [load_or_create_key(ws.keys).public]
    if not path.is_file():
        raise SigningError(
            f"this workspace has no public key at {ws.rel(path)}", "pass the signer's public key with --public-key PEM"
        )
    return [load_public_key(path)]


def check(passport: dict[str, Any], keys: list[PublicKey], model_dir: Path | None = None) -> PassportVerification:
    return verify_passport(
        passport, trusted_public_keys=keys, model_dir=model_dir, hmac_key=os.environ.get(LEGACY_KEY_ENV) or None
    )
