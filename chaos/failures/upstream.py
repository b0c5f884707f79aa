"""Metadata-side injectors: an upstream's health in DataHub goes bad while its data looks fine.

Each writes DataHub aspects through the control plane's port (`open_metadata`) and returns the aspects
that undo it, so `chaos revert` can put the upstream's metadata back.
"""

from __future__ import annotations

from chaos.errors import InjectionError
from chaos.failures.registry import UpstreamInjected, UpstreamTarget
from controlplane.datahub.datasets import is_known
from controlplane.datahub.deprecations import Deprecation, current_deprecation_mcp, deprecation_mcp
from controlplane.datahub.incident_records import IncidentState, operational_incident
from controlplane.datahub.loads import current_properties_mcps, last_modified, last_modified_mcps
from controlplane.datahub.port import AspectWrite, MetadataPort
from controlplane.datahub.urns import keyed_incident_urn

__all__ = ["upstream_incident", "upstream_stale", "upstream_deprecated", "CHAOS_ACTOR", "chaos_incident_urn"]

CHAOS_ACTOR = "urn:li:corpuser:kintsugi-chaos"
_HOUR_MS = 3_600_000


def chaos_incident_urn(upstream: str) -> str:
    return keyed_incident_urn({"chaos": "upstream_incident", "dataset": upstream})


def upstream_incident(port: MetadataPort, t: UpstreamTarget) -> UpstreamInjected:
    """An ACTIVE operational incident is raised on the upstream (its owners know it is broken)."""
    _known(port, t.upstream)
    urn = chaos_incident_urn(t.upstream)
    info = _incident(urn, t, IncidentState.ACTIVE, "raised by a chaos drill")
    resolved = _incident(urn, t, IncidentState.RESOLVED, "resolved by `chaos revert`")
    written = [info]
    port.emit(written, t.at_ms)
    return UpstreamInjected(written, [resolved], f"ACTIVE incident {urn} raised on {t.upstream}")


def upstream_stale(port: MetadataPort, t: UpstreamTarget) -> UpstreamInjected:
    """The upstream's last load is `magnitude` hours older than DataHub said (a load that silently stopped)."""
    _known(port, t.upstream)
    before = current_properties_mcps(port, t.upstream)
    last = last_modified(port, t.upstream) or t.at_ms
    written = last_modified_mcps(port, t.upstream, int(last - t.magnitude * _HOUR_MS))
    port.emit(written, t.at_ms)
    return UpstreamInjected(written, before, f"{t.upstream} last updated {t.magnitude:g} h earlier")


def upstream_deprecated(port: MetadataPort, t: UpstreamTarget) -> UpstreamInjected:
    """The upstream is marked deprecated by its owners."""
    _known(port, t.upstream)
    undo = current_deprecation_mcp(port, t.upstream, CHAOS_ACTOR)
    written = [deprecation_mcp(t.upstream, Deprecation(True, "deprecated by a chaos drill", CHAOS_ACTOR))]
    port.emit(written, t.at_ms)
    return UpstreamInjected(written, [undo], f"{t.upstream} marked deprecated")


def _known(port: MetadataPort, urn: str) -> None:
    if not is_known(port, urn):
        raise InjectionError(
            f"upstream {urn} is not registered in DataHub",
            "seed the estate first (`kintsugi demo`) or pick a registered upstream",
        )


def _incident(urn: str, t: UpstreamTarget, state: IncidentState, message: str) -> AspectWrite:
    return operational_incident(
        urn,
        t.upstream,
        title="chaos drill: upstream broken",
        description="An injected upstream incident: the data looks fine, its owners say it is not.",
        state=state,
        message=message,
        by=CHAOS_ACTOR,
        at_ms=t.at_ms,
    )
