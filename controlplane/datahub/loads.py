"""A dataset's last load as DataHub's standard aspects say it: `datasetProperties.lastModified`, moved when a
load lands (or put back as it was)."""

from __future__ import annotations

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import AspectWrite, MetadataPort

__all__ = ["last_modified", "last_modified_mcps", "current_properties_mcps"]


def last_modified(port: MetadataPort, dataset: str) -> int | None:
    """The dataset's `lastModified` instant (None when unknown, unset or zero)."""
    properties = port.aspect(dataset, s.DatasetPropertiesClass)
    stamp = properties.lastModified if properties is not None else None
    return stamp.time if stamp and stamp.time else None


def last_modified_mcps(port: MetadataPort, dataset: str, at_ms: int) -> list[AspectWrite]:
    """The dataset's properties with `lastModified` at `at_ms` ([] for a dataset DataHub does not know)."""
    properties = port.aspect(dataset, s.DatasetPropertiesClass)
    if properties is None:
        return []
    properties.lastModified = s.TimeStampClass(at_ms)
    return [MCP(entityUrn=dataset, aspect=properties)]


def current_properties_mcps(port: MetadataPort, dataset: str) -> list[AspectWrite]:
    """The write that puts the dataset's properties back as they are now ([] when there are none)."""
    properties = port.aspect(dataset, s.DatasetPropertiesClass)
    if properties is None:
        return []
    return [MCP(entityUrn=dataset, aspect=s.DatasetPropertiesClass.from_obj(properties.to_obj()))]
