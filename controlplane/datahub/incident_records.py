"""An incident as DataHub holds it, read into plain values: its info now, at an instant, or every recorded status;
and the one incident written by hand rather than by the guard (an operational incident an owner raises).

`incidents.py` raises, reuses and resolves the guard's own incidents; this module is how every other room reads
any incident, whoever raised it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.incidents import evidence_line
from controlplane.datahub.port import AspectWrite, MetadataPort

__all__ = [
    "IncidentState",
    "IncidentStatus",
    "Incident",
    "read_incident",
    "all_incidents",
    "incident_statuses",
    "operational_incident",
]


class IncidentState(StrEnum):
    ACTIVE = s.IncidentStateClass.ACTIVE
    RESOLVED = s.IncidentStateClass.RESOLVED


@dataclass(frozen=True)
class IncidentStatus:
    state: str
    stage: str | None
    message: str  # "" when there is none
    at_ms: int
    by: str


@dataclass(frozen=True)
class Incident:
    urn: str
    type: str
    custom_type: str | None
    title: str  # "" when there is none
    description: str  # "" when there is none
    datasets: tuple[str, ...]  # the entities it is raised on
    priority: int | None
    status: IncidentStatus
    created_ms: int
    created_by: str
    started_ms: int | None
    source_type: str | None
    source_urn: str | None

    @property
    def state(self) -> str:
        return self.status.state

    @property
    def evidence(self) -> dict[str, Any]:
        """The evidence line of an incident Kintsugi raised ({} for any other)."""
        return evidence_line(self.description)

    @property
    def key(self) -> tuple[str, ...] | None:
        """The failure (dataset, kind, column) an incident the guard raised stands for."""
        key = self.evidence.get("key")
        return tuple(key) if key else None


def _status(status: s.IncidentStatusClass) -> IncidentStatus:
    return IncidentStatus(
        str(status.state),
        None if status.stage is None else str(status.stage),
        status.message or "",
        status.lastUpdated.time,
        status.lastUpdated.actor,
    )


def _incident(urn: str, info: s.IncidentInfoClass) -> Incident:
    return Incident(
        urn=urn,
        type=str(info.type),
        custom_type=info.customType,
        title=info.title or "",
        description=info.description or "",
        datasets=tuple(info.entities),
        priority=info.priority,
        status=_status(info.status),
        created_ms=info.created.time,
        created_by=info.created.actor,
        started_ms=info.startedAt,
        source_type=None if info.source is None else str(info.source.type),
        source_urn=None if info.source is None else info.source.sourceUrn,
    )


def read_incident(port: MetadataPort, urn: str, as_of_ms: int | None = None) -> Incident | None:
    info = port.aspect(urn, s.IncidentInfoClass, as_of_ms)
    return None if info is None else _incident(urn, info)


def all_incidents(port: MetadataPort) -> list[Incident]:
    """Every incident DataHub holds, by URN."""
    return [incident for urn in port.urns("incident") if (incident := read_incident(port, urn)) is not None]


def incident_statuses(port: MetadataPort, urn: str) -> list[IncidentStatus]:
    """Every recorded status of an incident, oldest first."""
    return [_status(info.status) for info in port.history(urn, s.IncidentInfoClass)]


def operational_incident(
    urn: str, dataset: str, *, title: str, description: str, state: IncidentState, message: str, by: str, at_ms: int
) -> AspectWrite:
    """An operational incident raised by hand on a dataset (source MANUAL): TRIAGE while ACTIVE, FIXED once
    RESOLVED."""
    stamp = s.AuditStampClass(time=at_ms, actor=by)
    stage = s.IncidentStageClass.TRIAGE if state is IncidentState.ACTIVE else s.IncidentStageClass.FIXED
    info = s.IncidentInfoClass(
        type=s.IncidentTypeClass.OPERATIONAL,
        entities=[dataset],
        title=title,
        description=description,
        status=s.IncidentStatusClass(state=state.value, stage=stage, message=message, lastUpdated=stamp),
        source=s.IncidentSourceClass(type=s.IncidentSourceTypeClass.MANUAL),
        created=stamp,
        startedAt=at_ms,
    )
    return MCP(entityUrn=urn, aspect=info)
