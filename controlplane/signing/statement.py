"""The passport as an in-toto Statement v1: the model's files are the subjects, the passport body the predicate.

The statement's frame (type, subjects, predicateType) is built and checked with the
`in-toto-attestation` library. The predicate is the caller's JSON body kept exactly: the
library stores a predicate as a protobuf Struct, where every number is a double (rows 5
would be signed as 5.0, integers past 2**53 rounded), so the signed body would not be the
body the caller gave.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement

from controlplane.signing.errors import SigningError
from controlplane.signing.model_files import file_digests

__all__ = [
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "build_statement",
    "normalized_body",
    "parse_statement",
    "statement_bytes",
    "subject_digests",
]

PREDICATE_TYPE = "https://kintsugi.dev/model-passport/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"


def normalized_body(body: Mapping[str, Any]) -> dict[str, Any]:
    """`body` as plain JSON (what is signed is what is stored); SigningError if it is not JSON."""
    if not isinstance(body, Mapping) or not body:
        raise SigningError("the passport body is empty or not a JSON object", "pass the passport body as a dict")
    try:
        return json.loads(json.dumps(body, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise SigningError(
            f"the passport body is not plain JSON: {exc}",
            "convert dates, paths and numpy values to strings or numbers, and NaN to null, before signing",
        ) from exc


def build_statement(body: Mapping[str, Any], model_dir: Path) -> dict[str, Any]:
    """The Statement as a JSON dict: every model file (sha256) as a subject, `body` as the predicate."""
    predicate = normalized_body(body)
    subjects = [ResourceDescriptor(name=n, digest={"sha256": d}).pb for n, d in sorted(file_digests(model_dir).items())]
    statement = Statement(subjects, PREDICATE_TYPE, predicate)
    try:
        statement.validate()
    except ValueError as exc:
        raise SigningError(f"cannot make a passport statement for {model_dir}: {exc}", "save the model first") from exc
    frame = json_format.MessageToDict(statement.pb)
    frame["predicate"] = predicate
    return frame


def statement_bytes(statement: Mapping[str, Any]) -> bytes:
    """The DSSE payload: key-sorted, compact UTF-8 JSON, so equal statements sign to equal bytes."""
    return json.dumps(statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def parse_statement(payload: bytes) -> dict[str, Any]:
    """A signed payload back as a Statement dict; ValueError unless it is a Kintsugi passport statement."""
    statement = json.loads(payload)
    if not isinstance(statement, dict):
        raise ValueError("the payload is not a JSON object")
    try:
        message = json_format.ParseDict(statement, statement_pb2.Statement())
    except json_format.ParseError as exc:
        raise ValueError(f"not an in-toto Statement: {exc}") from exc
    Statement.copy_from_pb(message).validate()
    if statement.get("predicateType") != PREDICATE_TYPE:
        raise ValueError(f"predicateType is {statement.get('predicateType')!r}, not {PREDICATE_TYPE!r}")
    if not isinstance(statement.get("predicate"), dict):
        raise ValueError("the predicate is not a JSON object")
    return statement


def subject_digests(statement: Mapping[str, Any]) -> dict[str, str]:
    """Subject name -> sha256 hex, from a parsed Statement."""
    return {str(s["name"]): str(s["digest"]["sha256"]) for s in statement["subject"] if "sha256" in s["digest"]}
