"""DataHub Lite adapter (acryl-datahub's embedded store, sqlite engine): the embedded default."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

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

    So a run that writes nothing leaves the store's bytes exactly as they were. Lite's own `close()`
    rebuilds its whole browse index (every entity in the store, every time a writable handle closes:
    seconds per run once the store holds a few hundred runs); this adapter adds the browse edges of the
    entities it wrote, which is what that rebuild adds for them, and closes the connection. An edge an
    entity no longer has (a container it left) stays until `datahub lite reindex`; nothing here reads them.
    """

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.location = str(path)
        self.read_only = read_only
        self._reader: Any = None
        self._writer: Any = None
        self._written: set[str] = set()  # urns written through this handle: their browse edges are added on close
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
            with _one_transaction(self._writer):
                for mcp in mcps:
                    if at_ms is not None:
                        mcp.systemMetadata = SystemMetadataClass(lastObserved=at_ms)
                    self._writer.write(mcp)
            self._written.update(str(mcp.entityUrn) for mcp in mcps)
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
        writer, reader = self._writer, self._reader
        self._reader = self._writer = None
        try:
            if writer is not None:
                self._index_written(writer)
        finally:
            for handle in (writer, reader):
                if handle is not None:
                    handle._close_connection()  # not close(): that rebuilds the whole browse index

    def _index_written(self, writer: Any) -> None:
        """The browse edges Lite's index rebuild would add for the entities written here (the per-aspect ones
        are added by each write already), in one transaction: Lite commits after each edge, and a run's first
        close adds a few hundred (~5 ms each on a busy disk)."""
        try:
            with _one_transaction(writer):
                for urn in sorted(self._written):
                    aspects = writer.get(urn, None, typed=True) or {}
                    aspects.pop("urn", None)
                    writer.global_post_update_hook(urn, aspects)
        except Exception as exc:
            raise MetadataError(f"DataHub Lite browse index update failed at {self.location}: {exc}", _FIX) from exc
        finally:
            self._written.clear()


@contextmanager
def _one_transaction(writer: Any) -> Iterator[None]:
    """One emit's aspects (and their browse edges), or a close's index pass, in one sqlite transaction: one commit.

    Lite commits after every aspect and every edge (`_commit`, ~600 commits a run). Its sqlite connection opens a
    transaction on the first write by itself, so holding `_commit` back for the emit and committing once at its end
    makes the emit one transaction; a failed write rolls it back whole (Lite's own `_rollback`). Should a Lite
    release commit some other way, the emit only commits more often: each write is still Lite's own.
    """
    commit = writer._commit
    writer._commit = lambda: None
    try:
        yield
    except BaseException:
        writer._rollback()
        raise
    finally:
        del writer._commit  # the class's own again
    commit()
