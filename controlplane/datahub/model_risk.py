"""Models at risk in DataHub: an incident on an mlModel version for each upstream failure its training data was
later found to be covered by, linked to that failure; and the `unsafe-champion` tag on a champion kept unsafe.

One incident per (model version, cause), its URN derived from both, so every pass reuses it. It is ACTIVE while
the version is the champion (the risk is serving) and RESOLVED, with what happened, when it is not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from datahub.emitter.mce_builder import datahub_guid
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s
from datahub.metadata.urns import IncidentUrn

from controlplane.datahub.incidents import ACTOR, EVIDENCE_MARKER
from controlplane.datahub.models import read_model_tags, tag_mcps
from controlplane.datahub.port import AspectWrite, MetadataPort
from controlplane.datahub.urns import model_urn, tag_urn

__all__ = [
    "Cause",
    "RiskMark",
    "at_risk_urn",
    "at_risk_info",
    "read_risk",
    "risks_of",
    "set_state",
    "UNSAFE_TAG",
    "AT_RISK_TYPE",
    "flag_mcps",
    "RiskWrite",
    "risk_write",
]

UNSAFE_TAG = tag_urn("unsafe-champion")
AT_RISK_TYPE = "MODEL_AT_RISK"
_DEFAULT_PRIORITY = 2


@dataclass(frozen=True)
class Cause:
    """Why a version is at risk: an upstream incident, a failing assertion, a schema change or a deprecation."""

    urn: str  # the incident or assertion; for a schema change or deprecation, a key naming the dataset
    kind: str  # incident | assertion | schema | deprecation
    dataset: str
    title: str
    priority: int = _DEFAULT_PRIORITY
    source: str | None = None  # the assertion the upstream incident was raised from, if any


@dataclass(frozen=True)
class RiskMark:
    """An at-risk incident as DataHub holds it."""

    urn: str
    model: str
    pipeline: str
    version: int
    caused_by: str
    state: str
    message: str
    priority: int | None


def at_risk_urn(pipeline: str, version: int, cause: str) -> str:
    return str(IncidentUrn(datahub_guid({"at_risk": model_urn(pipeline, version), "cause": cause})))


def at_risk_info(
    pipeline: str, version: int, cause: Cause, trained_at_ms: int, state: str, message: str, now_ms: int
) -> s.IncidentInfoClass:
    model = model_urn(pipeline, version)
    evidence = {
        "at_risk": {
            "model": model,
            "pipeline": pipeline,
            "version": version,
            "caused_by": cause.urn,
            "cause_kind": cause.kind,
            "dataset": cause.dataset,
            "trained_at_ms": trained_at_ms,
        }
    }
    lines = [
        f"{pipeline} v{version} was trained at {trained_at_ms} on data that {_what(cause)}.",
        f"Caused by {cause.urn} on {cause.dataset}.",
        EVIDENCE_MARKER + json.dumps(evidence, sort_keys=True),
    ]
    source = (
        s.IncidentSourceClass(type=s.IncidentSourceTypeClass.ASSERTION_FAILURE, sourceUrn=cause.source)
        if cause.source
        else None
    )
    return s.IncidentInfoClass(
        type=s.IncidentTypeClass.CUSTOM,
        customType=AT_RISK_TYPE,
        entities=[model],
        title=f"{pipeline} v{version} at risk: {cause.title}"[:200],
        description="\n".join(lines),
        priority=cause.priority,
        status=_status(state, message, now_ms),
        source=source,
        created=s.AuditStampClass(time=now_ms, actor=ACTOR),
        startedAt=trained_at_ms,
    )


def _what(cause: Cause) -> str:
    return {
        "incident": f"an incident covered ({cause.title})",
        "assertion": f"a failing assertion covered ({cause.title})",
        "schema": f"has changed shape since ({cause.title})",
        "deprecation": f"is deprecated since ({cause.title})",
    }.get(cause.kind, cause.title)


def _status(state: str, message: str, now_ms: int) -> s.IncidentStatusClass:
    stage = s.IncidentStageClass.FIXED if state == s.IncidentStateClass.RESOLVED else s.IncidentStageClass.TRIAGE
    return s.IncidentStatusClass(
        state=state, stage=stage, message=message, lastUpdated=s.AuditStampClass(time=now_ms, actor=ACTOR)
    )


def set_state(info: s.IncidentInfoClass, state: str, message: str, now_ms: int) -> s.IncidentInfoClass:
    info.status = _status(state, message, now_ms)
    return info


@dataclass(frozen=True)
class RiskWrite:
    """One at-risk incident to write: its URN, the model it is on, the state it is brought to, and the write."""

    urn: str
    model: str
    state: str
    write: AspectWrite


def risk_write(
    port: MetadataPort,
    pipeline: str,
    version: int,
    cause: Cause,
    trained_at_ms: int,
    state: str,
    message: str,
    now_ms: int,
) -> RiskWrite | None:
    """The at-risk incident of (version, cause) brought to `state`: raised when DataHub holds none, its status
    set when it is in another state; None when it is in `state` already."""
    urn = at_risk_urn(pipeline, version, cause.urn)
    current = port.aspect(urn, s.IncidentInfoClass)
    if current is None:
        info = at_risk_info(pipeline, version, cause, trained_at_ms, state, message, now_ms)
    elif current.status.state != state:
        info = set_state(current, state, message, now_ms)
    else:
        return None
    return RiskWrite(urn, info.entities[0], str(info.status.state), MCP(entityUrn=urn, aspect=info))


def _evidence(info: s.IncidentInfoClass) -> dict[str, Any] | None:
    for line in reversed((info.description or "").splitlines()):
        if line.startswith(EVIDENCE_MARKER):
            try:
                found = json.loads(line[len(EVIDENCE_MARKER) :]).get("at_risk")
            except ValueError:
                return None
            return found if isinstance(found, dict) else None
    return None


def read_risk(port: MetadataPort, urn: str) -> RiskMark | None:
    info = port.aspect(urn, s.IncidentInfoClass)
    found = _evidence(info) if info is not None and info.customType == AT_RISK_TYPE else None
    if info is None or found is None:
        return None
    return RiskMark(
        urn,
        found["model"],
        found["pipeline"],
        int(found["version"]),
        found["caused_by"],
        str(info.status.state),
        info.status.message or "",
        info.priority,
    )


def risks_of(port: MetadataPort, caused_by: str | None = None) -> list[RiskMark]:
    """Every at-risk incident DataHub holds (caused by one failure), by model and version."""
    found = [mark for urn in port.urns("incident") if (mark := read_risk(port, urn)) is not None]
    return sorted(
        (m for m in found if caused_by is None or m.caused_by == caused_by),
        key=lambda m: (m.pipeline, m.version, m.caused_by),
    )


def flag_mcps(port: MetadataPort, pipeline: str, flagged: dict[int, bool]) -> list[MCP]:
    """Put the `unsafe-champion` tag on (True) or off (False) the given versions; only what changes."""
    mcps: list[MCP] = []
    for version, wanted in sorted(flagged.items()):
        urn = model_urn(pipeline, version)
        tags = read_model_tags(port, urn)
        if (UNSAFE_TAG in tags) != wanted:
            mcps.extend(tag_mcps(urn, [t for t in tags if t != UNSAFE_TAG] + ([UNSAFE_TAG] if wanted else [])))
    return mcps
