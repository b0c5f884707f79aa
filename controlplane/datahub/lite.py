"""DataHub Lite adapter (acryl-datahub's embedded store, sqlite engine): the embedded default."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.serialization_helper import post_json_transform
from datahub.lite.lite_util import get_datahub_lite
from datahub.metadata.schema_classes import SystemMetadataClass

from controlplane.datahub.port import AspectT
from controlplane.errors import MetadataError

__all__ = ["LiteMetadata"]

_FIX = "check that the workspace's datahub.db is a DataHub Lite file and not in use, or start from a new workspace"


class LiteMetadata:
    """Reads through a read-only handle; the writable one opens on the first write.

    So a run that writes nothing leaves the store's bytes exactly as they were (Lite rewrites its
    browse index when a writable handle closes).
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.location = str(path)
        self.read_only = read_only
        self._reader: Any = None
        self._writer: Any = None
        if read_only and not path.exists():
            raise MetadataError(f"no DataHub Lite store at {path}", "seed the estate first with `kintsugi demo`")

    def _open(self, read_only: bool) -> Any:
        try:
            config = {"file": self.location, "read_only": read_only, "options": {"busy_timeout": 30000}}
            return get_datahub_lite({"type": "sqlite", "config": config}, read_only=read_only)
        except Exception as exc:
            raise MetadataError(f"cannot open DataHub Lite at {self.location}: {exc}", _FIX) from exc

    @property
    def _lite(self) -> Any:
        """The handle to read through, or None while the store does not exist yet."""
        if self._writer is not None:
            return self._writer
        if self._reader is None and Path(self.location).exists():
            self._reader = self._open(read_only=True)
        return self._reader

    def emit(self, mcps: Sequence[MetadataChangeProposalWrapper], at_ms: int | None = None) -> None:
        if self.read_only:
            raise MetadataError("DataHub Lite was opened read-only (dry-run)", "run with a policy that may write")
        if self._writer is None:
            if self._reader is not None:
                self._reader.close()
                self._reader = None
            self._writer = self._open(read_only=False)
        try:
            for mcp in mcps:
                if at_ms is not None:
                    mcp.systemMetadata = SystemMetadataClass(lastObserved=at_ms)
                self._writer.write(mcp)
        except Exception as exc:
            raise MetadataError(f"DataHub Lite write failed at {self.location}: {exc}", _FIX) from exc

    def aspect(self, urn: str, aspect_class: type[AspectT], as_of_ms: int | None = None) -> AspectT | None:
        name = aspect_class.ASPECT_NAME
        if self._lite is None:
            return None
        try:
            found = self._lite.get(urn, [name], typed=True, as_of=as_of_ms)
        except Exception as exc:
            raise MetadataError(f"DataHub Lite read of {name} for {urn} failed: {exc}", _FIX) from exc
        value = (found or {}).get(name)
        return value if isinstance(value, aspect_class) else None

    def history(self, urn: str, aspect_class: type[AspectT]) -> list[AspectT]:
        """Every recorded version of an aspect, oldest first (Lite keeps them as versions >= 1)."""
        name = aspect_class.ASPECT_NAME
        if self._lite is None:
            return []
        try:
            with closing(sqlite3.connect(f"{Path(self.location).resolve().as_uri()}?mode=ro", uri=True)) as db:
                rows = db.execute(
                    "SELECT metadata FROM metadata_aspect_v2 WHERE urn = ? AND aspect_name = ? "
                    "AND version > 0 ORDER BY version",
                    (urn, name),
                ).fetchall()
            return [aspect_class.from_obj(post_json_transform(json.loads(row[0]))) for row in rows]
        except Exception as exc:
            raise MetadataError(f"DataHub Lite history read of {name} for {urn} failed: {exc}", _FIX) from exc

    def urns(self, entity_type: str) -> list[str]:
        prefix = f"urn:li:{entity_type}:"
        if self._lite is None:
            return []
        try:
            return sorted(urn for urn in self._lite.list_ids() if urn.startswith(prefix))
        except Exception as exc:
            raise MetadataError(f"DataHub Lite listing failed: {exc}", _FIX) from exc

    def close(self) -> None:
        for handle in (self._reader, self._writer):
            if handle is not None:
                handle.close()
        self._reader = self._writer = None
