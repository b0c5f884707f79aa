"""Choose the metadata adapter: DataHub Lite in the workspace (the default) — the one place that decides."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.port import MetadataPort
from controlplane.workspace import Workspace

__all__ = ["open_metadata", "metadata_session"]


def open_metadata(ws: Workspace, *, read_only: bool = False) -> MetadataPort:
    return LiteMetadata(ws.datahub_db, read_only=read_only)


@contextmanager
def metadata_session(ws: Workspace, *, read_only: bool = False) -> Iterator[MetadataPort]:
    metadata = open_metadata(ws, read_only=read_only)
    try:
        yield metadata
    finally:
        metadata.close()
