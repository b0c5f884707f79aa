"""Passports from before signing by default: `{"body": ..., "signature": {"alg": "HMAC-SHA256" | "none", ...}}`."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["LEGACY_ALG", "is_legacy", "legacy_hmac_matches", "legacy_is_unsigned"]

LEGACY_ALG = "HMAC-SHA256"


def is_legacy(passport: Mapping[str, Any]) -> bool:
    return "envelope" not in passport and isinstance(passport.get("signature"), Mapping)


def legacy_is_unsigned(passport: Mapping[str, Any]) -> bool:
    signature = passport.get("signature")
    return not isinstance(signature, Mapping) or signature.get("alg") in (None, "none") or not signature.get("value")


def legacy_hmac_matches(passport: Mapping[str, Any], key: str) -> bool:
    """Whether the HMAC-SHA256 of the body (as the old `controlplane.models.passport_signing` made it) matches."""
    canonical = json.dumps(passport.get("body", {}), sort_keys=True, separators=(",", ":"), default=str)
    expected = hmac.new(key.encode(), canonical.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, str(passport["signature"].get("value")))
