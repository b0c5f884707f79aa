"""Metadata-side injectors: an upstream's health in DataHub goes bad while its data looks fine.

Each writes DataHub aspects through the control plane's port (`open_metadata`) and returns the aspects
that undo it, so `chaos revert` can put the upstream's metadata back.
"""

from __future__ import annotations

from datahub.emitter.mce_builder import datahub_guid
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from chaos.errors import InjectionError
from chaos.registry import UpstreamInjected, UpstreamTarget
from controlplane.datahub.port import MetadataPort

__all__ = ["upstream_incident", "upstream_stale", "upstream_deprecated", "CHAOS_ACTOR", "chaos_incident_urn"]

CHAOS_ACTOR = "urn:li:corpuser:kintsugi-chaos"
_HOUR_MS = 3_600_000


def chaos_incident_urn(upstream: str) -> str:
    return "urn:li:incident:" + datahub_guid({"chaos": "upstream_incident", "dataset": upstream})


def upstream_incident(port: MetadataPort, t: UpstreamTarget) -> UpstreamInjected:
    """An ACTIVE operational incident is raised on the upstream (its owners know it is broken)."""
    _known(port, t.upstream)
    urn = chaos_incident_urn(t.upstream)
    info = _incident(t, s.IncidentStateClass.ACTIVE, s.IncidentStageClass.TRIAGE, "raised by a chaos drill")
    resolved = _incident(t, s.IncidentStateClass.RESOLVED, s.IncidentStageClass.FIXED, "resolved by `chaos revert`")
    written = [MCP(entityUrn=urn, aspect=info)]
    port.emit(written, t.at_ms)
    return UpstreamInjected(
        written, [MCP(entityUrn=urn, aspect=resolved)], f"ACTIVE incident {urn} raised on {t.upstream}"
    )


def upstream_stale(port: MetadataPort, t: UpstreamTarget) -> UpstreamInjected:
    """The upstream's last load is `magnitude` hours older than DataHub said (a load that silently stopped)."""
    properties = _known(port, t.upstream)
    before = MCP(entityUrn=t.upstream, aspect=s.DatasetPropertiesClass.from_obj(properties.to_obj()))
    last = properties.lastModified.time if properties.lastModified and properties.lastModified.time else t.at_ms
    properties.lastModified = s.TimeStampClass(int(last - t.magnitude * _HOUR_MS))
    written = [MCP(entityUrn=t.upstream, aspect=properties)]
    port.emit(written, t.at_ms)
    return UpstreamInjected(written, [before], f"{t.upstream} last updated {t.magnitude:g} h earlier")


def upstream_deprecated(port: MetadataPort, t: UpstreamTarget) -> UpstreamInjected:
    """The upstream is marked deprecated by its owners."""
    _known(port, t.upstream)
    previous = port.aspect(t.upstream, s.DeprecationClass)
    undo = previous if previous is not None else s.DeprecationClass(deprecated=False, note="", actor=CHAOS_ACTOR)
    written = [
        MCP(
            entityUrn=t.upstream,
            aspect=s.DeprecationClass(deprecated=True, note="deprecated by a chaos drill", actor=CHAOS_ACTOR),
        )
    ]
    port.emit(written, t.at_ms)
    return UpstreamInjected(written, [MCP(entityUrn=t.upstream, aspect=undo)], f"{t.upstream} marked deprecated")


def _known(port: MetadataPort, urn: str) -> s.DatasetPropertiesClass:
    properties = port.aspect(urn, s.DatasetPropertiesClass)
    if properties is None:
        raise InjectionError(
            f"upstream {urn} is not registered in DataHub",
            "seed the estate first (`kintsugi demo`) or pick a registered upstream",
        )
    return properties


def _incident(t: UpstreamTarget, state: str, stage: str, message: str) -> s.IncidentInfoClass:
    stamp = s.AuditStampClass(time=t.at_ms, actor=CHAOS_ACTOR)
    return s.IncidentInfoClass(
        type=s.IncidentTypeClass.OPERATIONAL,
        entities=[t.upstream],
        title="chaos drill: upstream broken",
        description="An injected upstream incident: the data looks fine, its owners say it is not.",
        status=s.IncidentStatusClass(state=state, stage=stage, message=message, lastUpdated=stamp),
        source=s.IncidentSourceClass(type=s.IncidentSourceTypeClass.MANUAL),
        created=stamp,
        startedAt=t.at_ms,
    )
