"""DataHub Lite's browse index, kept by the adapter without Lite's whole-store rebuild on every close."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from datahub.emitter.mce_builder import make_dataset_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.lite.lite_util import get_datahub_lite
from datahub.metadata.schema_classes import DatasetPropertiesClass, StatusClass

from controlplane.datahub.lite import LiteMetadata


def _edges(path: Path) -> list[tuple]:
    with closing(sqlite3.connect(path)) as db:
        return sorted(db.execute("SELECT * FROM metadata_edge_v2").fetchall())


def _rebuilt(path: Path) -> list[tuple]:
    """The edges after Lite's own rebuild of the whole index (what its close() does)."""
    lite = get_datahub_lite({"type": "sqlite", "config": {"file": str(path)}}, read_only=False)
    lite.close()
    return _edges(path)


def test_the_demo_stores_browse_index_is_what_lites_own_rebuild_makes(demo_copy) -> None:
    ws, _ = demo_copy
    kept = _edges(ws.datahub_db)
    assert kept  # the demo's entities are browsable
    assert _rebuilt(ws.datahub_db) == kept


def test_a_new_entity_written_in_a_later_session_is_indexed_as_a_rebuild_would(tmp_path: Path) -> None:
    path = tmp_path / "datahub.db"
    first, second = make_dataset_urn("file", "warehouse.orders"), make_dataset_urn("s3", "lake/returns")
    for urn in (first, second):
        store = LiteMetadata(path)
        store.emit([MetadataChangeProposalWrapper(entityUrn=urn, aspect=DatasetPropertiesClass(name=urn[-12:]))])
        store.emit([MetadataChangeProposalWrapper(entityUrn=urn, aspect=StatusClass(removed=False))])
        store.close()
    kept = _edges(path)
    assert {row[0] for row in kept} | {row[2] for row in kept} >= {first, second}
    assert _rebuilt(path) == kept
