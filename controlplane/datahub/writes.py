"""Aspect writes kept for later: as JSON objects in a record (an undo to emit another day), and read back."""

from __future__ import annotations

from typing import Any, Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP

from controlplane.datahub.port import AspectWrite

__all__ = ["UnreadableWrite", "writes_to_json", "writes_from_json"]


class UnreadableWrite(ValueError):
    """A kept write this DataHub client cannot read back as an aspect."""

    def __init__(self, aspect: str | None) -> None:
        super().__init__(f"cannot read back a {aspect!r} write")
        self.aspect = aspect


def writes_to_json(writes: Sequence[AspectWrite]) -> list[dict[str, Any]]:
    return [write.to_obj() for write in writes]


def writes_from_json(objects: Sequence[dict[str, Any]]) -> list[AspectWrite]:
    """The kept writes, all of them or none (`UnreadableWrite` names the first that cannot be read)."""
    writes = []
    for obj in objects:
        write = MCP.from_obj(obj)
        if not isinstance(write, MCP):
            raise UnreadableWrite(obj.get("aspectName"))
        writes.append(write)
    return writes
