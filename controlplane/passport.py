"""The Model Passport: one canonical JSON document per version, HMAC-SHA256-signed when a key is configured."""
from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any

__all__ = ["canonical", "sign", "verify_signature", "KEY_ENV"]

KEY_ENV = "KINTSUGI_PASSPORT_KEY"


def canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)


def sign(body: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    """The passport: the body plus its signature (or an explicit `unsigned` marker)."""
    key = key if key is not None else os.environ.get(KEY_ENV)
    if not key:
        return {"body": body, "signature": {"alg": "none", "value": None, "note": f"unsigned: {KEY_ENV} not set"}}
    digest = hmac.new(key.encode(), canonical(body).encode(), hashlib.sha256).hexdigest()
    return {"body": body, "signature": {"alg": "HMAC-SHA256", "value": digest}}


def verify_signature(passport: dict[str, Any], key: str | None = None) -> tuple[bool, str]:
    key = key if key is not None else os.environ.get(KEY_ENV)
    signature = passport.get("signature") or {}
    if signature.get("alg") != "HMAC-SHA256":
        return False, "passport is unsigned"
    if not key:
        return False, f"passport is signed but {KEY_ENV} is not set to check it"
    expected = hmac.new(key.encode(), canonical(passport.get("body", {})).encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, str(signature.get("value"))):
        return False, "signature does not match the content: the passport was altered"
    return True, "signature valid"
