"""Choose the metadata adapter — the one place that decides: a DataHub GMS when one is configured
(DATAHUB_GMS_URL, or [datahub] server in the workspace's kintsugi.toml), DataHub Lite in the workspace otherwise."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from controlplane.datahub.config import load_gms_config
from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.port import MetadataPort
from controlplane.workspace import Workspace

__all__ = ["open_metadata", "metadata_session"]


def open_metadata(ws: Workspace, *, read_only: bool = False) -> MetadataPort:
    config = load_gms_config(ws)
    if config is not None:
        from controlplane.datahub.gms import GmsMetadata  # the HTTP client stack loads only when used

        return GmsMetadata(config, read_only=read_only)
    return LiteMetadata(ws.datahub_db, read_only=read_only)


@contextmanager
def metadata_session(ws: Workspace, *, read_only: bool = False) -> Iterator[MetadataPort]:
    metadata = open_metadata(ws, read_only=read_only)
    try:
        yield metadata
    finally:
        metadata.close()
