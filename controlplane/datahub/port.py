"""The metadata port: the few operations the loop needs, in DataHub's own aspect model."""

from __future__ import annotations

from typing import Protocol, Sequence, TypeVar

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import _Aspect

__all__ = ["MetadataPort", "AspectT", "AspectWrite"]

AspectT = TypeVar("AspectT", bound=_Aspect)
AspectWrite = MetadataChangeProposalWrapper  # one aspect write: built by the record modules, passed on, emitted


class MetadataPort(Protocol):
    """Implemented by the DataHub Lite adapter (lite.py, the embedded default) and the GMS adapter (gms.py)."""

    location: str

    def emit(self, mcps: Sequence[AspectWrite], at_ms: int | None = None) -> None:
        """Write aspects; `at_ms` stamps them (the instant history reads see them from)."""

    def aspect(self, urn: str, aspect_class: type[AspectT], as_of_ms: int | None = None) -> AspectT | None:
        """The aspect's latest value, or its value as it was at `as_of_ms`."""

    def history(self, urn: str, aspect_class: type[AspectT]) -> list[AspectT]:
        """Every recorded version of the aspect, oldest first."""

    def urns(self, entity_type: str) -> list[str]:
        """Every URN of an entity type (dataset, incident, assertion, mlModel...), sorted."""

    def close(self) -> None: ...
