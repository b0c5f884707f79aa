"""The workspace marker: a tag entity whose properties say this DataHub is a Kintsugi workspace's store of record."""

from __future__ import annotations

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import tag_urn

__all__ = ["marker_urn", "is_marked", "mark_workspace"]


def _name(workspace_id: str) -> str:
    return f"kintsugi-workspace-{workspace_id}"


def marker_urn(workspace_id: str) -> str:
    return tag_urn(_name(workspace_id))


def is_marked(port: MetadataPort, workspace_id: str) -> bool:
    return port.aspect(marker_urn(workspace_id), s.TagPropertiesClass) is not None


def mark_workspace(port: MetadataPort, workspace_id: str) -> None:
    """Write the marker unless it is there already."""
    if is_marked(port, workspace_id):
        return
    aspect = s.TagPropertiesClass(
        name=_name(workspace_id), description="Marks this DataHub as the store of record of a Kintsugi workspace"
    )
    port.emit([MCP(entityUrn=marker_urn(workspace_id), aspect=aspect)])
