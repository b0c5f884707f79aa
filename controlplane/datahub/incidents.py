"""DataHub incidents, one per failure (dataset, kind, column), reused while ACTIVE, never duplicated."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import incident_urn
from guard.findings import Finding
from guard.kinds import FindingKind, Severity
from profiles.records import Record

__all__ = [
    "IncidentRef",
    "IncidentRow",
    "Recurrence",
    "open_incident",
    "incident_evidence",
    "evidence_line",
    "resolve_incident",
    "reopen_incident",
    "incident_key",
    "active_incidents",
    "read_incidents",
    "note_incident",
    "EVIDENCE_MARKER",
    "ACTOR",
]

ACTOR = "urn:li:corpuser:kintsugi"
EVIDENCE_MARKER = "evidence: "
_ACTIVE, _RESOLVED = s.IncidentStateClass.ACTIVE, s.IncidentStateClass.RESOLVED
_TYPE_BY_KIND = {
    FindingKind.UNIT_MISMATCH: s.IncidentTypeClass.FIELD,
    FindingKind.SCALE_SHIFT: s.IncidentTypeClass.FIELD,
    FindingKind.NULL_LIMIT: s.IncidentTypeClass.FIELD,
    FindingKind.NULL_SPIKE: s.IncidentTypeClass.FIELD,
    FindingKind.OUT_OF_RANGE: s.IncidentTypeClass.FIELD,
    FindingKind.COLUMN_MISSING: s.IncidentTypeClass.DATA_SCHEMA,
    FindingKind.COLUMN_RENAMED: s.IncidentTypeClass.DATA_SCHEMA,
    FindingKind.TYPE_CHANGED: s.IncidentTypeClass.DATA_SCHEMA,
    FindingKind.COLUMN_UNEXPECTED: s.IncidentTypeClass.DATA_SCHEMA,
    FindingKind.LABEL_STALE: s.IncidentTypeClass.FRESHNESS,
    FindingKind.LABEL_IMMATURE: s.IncidentTypeClass.FRESHNESS,
    FindingKind.VOLUME_DROP: s.IncidentTypeClass.VOLUME,
}


@dataclass(frozen=True)
class IncidentRef(Record):
    urn: str
    key: tuple[str, str, str]
    created: bool
    previous: str | None = None


@dataclass(frozen=True)
class Recurrence:
    """What the memory of failure modes adds to a new incident (`controlplane.stages.memory`): its fingerprint and
    links in the evidence, lines in the description, a raised priority and the upstream owner as assignee."""

    evidence: dict[str, Any]
    lines: tuple[str, ...] = ()
    priority: int | None = None
    assignees: tuple[str, ...] = ()


@dataclass(frozen=True)
class IncidentRow:
    """An incident as the front doors list it."""

    urn: str
    title: str
    state: str
    datasets: tuple[str, ...]
    message: str
    created_ms: int
    key: tuple[str, str, str] | None


def read_incidents(port: MetadataPort) -> list[IncidentRow]:
    """Every incident DataHub holds, oldest first: the one query every "which incidents" question starts from."""
    rows = []
    for urn in port.urns("incident"):
        info = port.aspect(urn, s.IncidentInfoClass)
        if info is not None:
            rows.append(
                IncidentRow(
                    urn,
                    info.title or "",
                    str(info.status.state),
                    tuple(info.entities),
                    info.status.message or "",
                    info.created.time,
                    incident_key(info),
                )
            )
    return sorted(rows, key=lambda r: (r.created_ms, r.urn))


def active_incidents(port: MetadataPort) -> dict[str, list[str]]:
    """dataset URN -> its ACTIVE incidents' URNs."""
    by_dataset: dict[str, list[str]] = {}
    for row in read_incidents(port):
        if row.state == s.IncidentStateClass.ACTIVE:
            for dataset in row.datasets:
                by_dataset.setdefault(dataset, []).append(row.urn)
    return by_dataset


def incident_key(info: s.IncidentInfoClass) -> tuple[str, str, str] | None:
    """The failure an incident stands for, read back from its evidence line."""
    key = incident_evidence(info).get("key")
    return tuple(key) if key else None  # type: ignore[return-value]


def incident_evidence(info: s.IncidentInfoClass) -> dict[str, Any]:
    """The evidence line of an incident Kintsugi raised ({} for any other)."""
    return evidence_line(info.description)


def evidence_line(description: str | None) -> dict[str, Any]:
    """The evidence line at the end of an incident's description ({} when there is none)."""
    for line in reversed((description or "").splitlines()):
        if line.startswith(EVIDENCE_MARKER):
            try:
                found = json.loads(line[len(EVIDENCE_MARKER) :])
            except ValueError:
                return {}
            return found if isinstance(found, dict) else {}
    return {}


def open_incident(
    port: MetadataPort, finding: Finding, assertion: str, run_id: str, now_ms: int, recurrence: Recurrence | None = None
) -> IncidentRef:
    """Reuse the ACTIVE incident for this failure, or raise the next one (referring to the last resolved)."""
    generation, previous = 0, None
    while True:
        urn = incident_urn(finding.dataset, finding.kind.value, finding.column, generation)
        info = port.aspect(urn, s.IncidentInfoClass)
        if info is None:
            new = _new_info(finding, assertion, run_id, now_ms, previous, recurrence)
            port.emit([MCP(entityUrn=urn, aspect=new)], now_ms)
            return IncidentRef(urn, finding.key, created=True, previous=previous)
        if info.status.state == s.IncidentStateClass.ACTIVE:
            info.status = _status(
                s.IncidentStateClass.ACTIVE,
                s.IncidentStageClass.TRIAGE,
                f"seen again by run {run_id}: {finding.message}",
                now_ms,
            )
            port.emit([MCP(entityUrn=urn, aspect=info)], now_ms)
            return IncidentRef(urn, finding.key, created=False, previous=previous)
        previous, generation = urn, generation + 1


def resolve_incident(port: MetadataPort, urn: str, note: str, now_ms: int) -> None:
    _move(port, urn, note, now_ms, was=_ACTIVE, to=_RESOLVED, stage=s.IncidentStageClass.FIXED)


def note_incident(port: MetadataPort, urn: str, note: str, now_ms: int) -> None:
    """Add a note to an ACTIVE incident (its status message), leaving it ACTIVE."""
    _move(port, urn, note, now_ms, was=_ACTIVE, to=_ACTIVE, stage=s.IncidentStageClass.INVESTIGATION)


def reopen_incident(port: MetadataPort, urn: str, note: str, now_ms: int) -> bool:
    """Make a RESOLVED incident ACTIVE again (an undone heal); False when it was not resolved."""
    return _move(port, urn, note, now_ms, was=_RESOLVED, to=_ACTIVE, stage=s.IncidentStageClass.TRIAGE)


def _move(port: MetadataPort, urn: str, note: str, now_ms: int, *, was: str, to: str, stage: str) -> bool:
    """An incident that `was` in a state moved `to` another at a `stage`, with `note`; False, and nothing written,
    for an incident in another state, or none."""
    info = port.aspect(urn, s.IncidentInfoClass)
    if info is None or info.status.state != was:
        return False
    info.status = _status(to, stage, note, now_ms)
    port.emit([MCP(entityUrn=urn, aspect=info)], now_ms)
    return True


def _new_info(
    finding: Finding,
    assertion: str,
    run_id: str,
    now_ms: int,
    previous: str | None,
    recurrence: Recurrence | None = None,
) -> s.IncidentInfoClass:
    evidence = {
        "key": list(finding.key),
        "observed": finding.observed,
        "expected": finding.expected,
        "playbook": finding.playbook,
        "run": run_id,
        "recurrence_of": previous,
        **(recurrence.evidence if recurrence else {}),
    }
    lines = [finding.message]
    if previous:
        lines.append(f"Recurrence of {previous}, which was resolved earlier.")
    lines.extend(recurrence.lines if recurrence else ())
    lines.append(EVIDENCE_MARKER + json.dumps(evidence, sort_keys=True, default=str))
    priority = 1 if finding.severity is Severity.BLOCK else 2
    if recurrence is not None and recurrence.priority is not None:
        priority = min(priority, recurrence.priority)
    assignees = [
        s.IncidentAssigneeClass(actor=a, assignedAt=s.AuditStampClass(time=now_ms, actor=ACTOR))
        for a in (recurrence.assignees if recurrence else ())
    ]
    incident_type = _TYPE_BY_KIND.get(finding.kind, s.IncidentTypeClass.CUSTOM)
    return s.IncidentInfoClass(
        type=incident_type,
        customType=finding.kind.value if incident_type == s.IncidentTypeClass.CUSTOM else None,
        entities=[finding.dataset],
        title=f"{finding.kind.value} on {finding.column or 'the dataset'}",
        description="\n".join(lines),
        priority=priority,
        assignees=assignees or None,
        status=_status(s.IncidentStateClass.ACTIVE, s.IncidentStageClass.TRIAGE, f"raised by run {run_id}", now_ms),
        source=s.IncidentSourceClass(type=s.IncidentSourceTypeClass.ASSERTION_FAILURE, sourceUrn=assertion),
        created=s.AuditStampClass(time=now_ms, actor=ACTOR),
        startedAt=now_ms,
    )


def _status(state: str, stage: str, message: str, now_ms: int) -> s.IncidentStatusClass:
    return s.IncidentStatusClass(
        state=state, stage=stage, message=message, lastUpdated=s.AuditStampClass(time=now_ms, actor=ACTOR)
    )
