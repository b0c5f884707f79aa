"""A dataset's deprecation (DataHub's `deprecation` aspect): read now or at an instant, written, put back."""

from __future__ import annotations

from dataclasses import dataclass

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import AspectWrite, MetadataPort

__all__ = ["Deprecation", "read_deprecation", "is_deprecated", "deprecation_mcp", "current_deprecation_mcp"]


@dataclass(frozen=True)
class Deprecation:
    deprecated: bool
    note: str
    by: str


def read_deprecation(port: MetadataPort, dataset: str, as_of_ms: int | None = None) -> Deprecation | None:
    found = port.aspect(dataset, s.DeprecationClass, as_of_ms)
    return None if found is None else Deprecation(bool(found.deprecated), found.note, found.actor)


def is_deprecated(port: MetadataPort, dataset: str, as_of_ms: int | None = None) -> bool:
    found = read_deprecation(port, dataset, as_of_ms)
    return found is not None and found.deprecated


def deprecation_mcp(dataset: str, deprecation: Deprecation) -> AspectWrite:
    aspect = s.DeprecationClass(deprecated=deprecation.deprecated, note=deprecation.note, actor=deprecation.by)
    return MCP(entityUrn=dataset, aspect=aspect)


def current_deprecation_mcp(port: MetadataPort, dataset: str, by: str) -> AspectWrite:
    """The write that puts the dataset's deprecation back as it is now (not deprecated, by `by`, when unset)."""
    found = port.aspect(dataset, s.DeprecationClass)
    aspect = found if found is not None else s.DeprecationClass(deprecated=False, note="", actor=by)
    return MCP(entityUrn=dataset, aspect=aspect)
