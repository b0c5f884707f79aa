"""Signing the Model Passport and the model's files, verifiable by anyone with the public key.

**The key.** The first signing in a workspace creates an ECDSA P-256 key pair:
`<workspace>/keys/signing-key.pem` (private, mode 0600) and `<workspace>/keys/signing-key.pub.pem`
(public). `KINTSUGI_SIGNING_KEY=/path/to/key.pem` uses a team's own P-256 key instead (it too
must be owner-only). A key's id is the sha256 (hex) of its DER SubjectPublicKeyInfo.
P-256, not Ed25519, because model_signing's key mode only takes elliptic-curve keys and one key
signs both.

**The passport** is an in-toto Statement v1 in a DSSE envelope (payloadType
`application/vnd.in-toto+json`, ECDSA-SHA256 signature, deterministic per RFC 6979):

- `subject`: every file of the saved model directory, by path relative to it, with its sha256;
- `predicateType`: `https://kintsugi.dev/model-passport/v1`;
- `predicate`: the passport body (training instant, snapshot, lineage, guard reports,
  incidents and heals, metrics against the champion, verdict).

It is stored as `{"body": ..., "envelope": {...}, "public_key": "-----BEGIN PUBLIC KEY-----..."}`:
the envelope is what is verified; `body` is a plain copy for readers, and any difference between
it and the signed predicate is reported by field (`altered: metrics.candidate.mae`); `public_key`
is the signer's key, never trusted, only used to tell "signed by another key" from "tampered".

**The model's files** are also signed in the OpenSSF model-signing format (a Sigstore bundle
made with the `model-signing` package, private-key mode, no network) in `model.sig` inside the
model directory, left out of its own hashing. Anyone can check a Kintsugi model directory with
the public key and the model-signing CLI alone:

    model_signing verify key MODEL_DIR --signature MODEL_DIR/model.sig --public_key signing-key.pub.pem

It prints "Verification succeeded", or fails naming the file that changed, went missing or appeared.
"""

from __future__ import annotations

from controlplane.signing.envelope import (
    ALTERED,
    LEGACY_HMAC,
    STATUSES,
    UNSIGNED,
    UNTRUSTED_KEY,
    VALID,
    PassportVerification,
    sign_passport,
    verify_passport,
)
from controlplane.signing.errors import SigningError
from controlplane.signing.keys import (
    KEY_ENV,
    PRIVATE_KEY_FILE,
    PUBLIC_KEY_FILE,
    PublicKey,
    SigningKey,
    key_id,
    load_or_create_key,
    load_private_key,
    load_public_key,
)
from controlplane.signing.model_files import (
    SIGNATURE_FILE,
    ModelFilesVerification,
    sign_model_dir,
    verify_model_dir,
)
from controlplane.signing.statement import PAYLOAD_TYPE, PREDICATE_TYPE

__all__ = [
    "ALTERED",
    "KEY_ENV",
    "LEGACY_HMAC",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "PRIVATE_KEY_FILE",
    "PUBLIC_KEY_FILE",
    "SIGNATURE_FILE",
    "STATUSES",
    "UNSIGNED",
    "UNTRUSTED_KEY",
    "VALID",
    "ModelFilesVerification",
    "PassportVerification",
    "PublicKey",
    "SigningError",
    "SigningKey",
    "key_id",
    "load_or_create_key",
    "load_private_key",
    "load_public_key",
    "sign_model_dir",
    "sign_passport",
    "verify_model_dir",
    "verify_passport",
]
