"""One emit to DataHub Lite is one sqlite transaction: every aspect of it is written, or none is."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from datahub.emitter.mce_builder import make_dataset_urn
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.metadata.schema_classes import DatasetPropertiesClass, StatusClass

from controlplane.datahub.lite import LiteMetadata
from controlplane.errors import MetadataError

URNS = [make_dataset_urn("file", f"warehouse.table_{i}") for i in range(4)]


def _writes(*, broken_at: int | None = None) -> list[MetadataChangeProposalWrapper]:
    mcps = [MetadataChangeProposalWrapper(entityUrn=u, aspect=DatasetPropertiesClass(name=u[-7:])) for u in URNS]
    if broken_at is not None:
        mcps[broken_at].aspect = "not an aspect"  # type: ignore[assignment]  # Lite fails on it, mid-emit
    return mcps


def _names(path: Path) -> dict[str, str | None]:
    store = LiteMetadata(path, read_only=True)
    try:
        found = {u: store.aspect(u, DatasetPropertiesClass) for u in URNS}
    finally:
        store.close()
    return {u: a.name if a else None for u, a in found.items()}


def test_an_emit_that_fails_midway_leaves_none_of_its_aspects(tmp_path: Path) -> None:
    path = tmp_path / "datahub.db"
    store = LiteMetadata(path)
    store.emit([MetadataChangeProposalWrapper(entityUrn=URNS[0], aspect=StatusClass(removed=False))])
    with pytest.raises(MetadataError, match="DataHub Lite write failed"):
        store.emit(_writes(broken_at=2))
    store.close()
    assert _names(path) == dict.fromkeys(URNS)  # not the two before the broken one


def test_a_whole_emit_is_committed_and_read_back_by_another_handle(tmp_path: Path) -> None:
    path = tmp_path / "datahub.db"
    store = LiteMetadata(path)
    store.emit(_writes())
    assert _names(path) == {u: u[-7:] for u in URNS}  # committed before the writer closes
    store.emit([MetadataChangeProposalWrapper(entityUrn=URNS[0], aspect=DatasetPropertiesClass(name="again"))])
    store.close()
    assert _names(path)[URNS[0]] == "again"


def _commits_so_far(path: Path) -> int:
    """SQLite's file change counter (header bytes 24-27): one more for every transaction committed to the file."""
    with path.open("rb") as db:
        db.seek(24)
        return int.from_bytes(db.read(4), "big")


def test_closing_a_writer_adds_the_browse_edges_of_every_entity_it_wrote_in_one_commit(tmp_path: Path) -> None:
    path = tmp_path / "datahub.db"
    urns = [make_dataset_urn("file", f"warehouse.schema_{i % 3}.table_{i}") for i in range(30)]
    store = LiteMetadata(path)
    store.emit([MetadataChangeProposalWrapper(entityUrn=u, aspect=DatasetPropertiesClass(name=u[-9:])) for u in urns])
    before = _commits_so_far(path)
    store.close()
    assert _commits_so_far(path) - before == 1  # Lite's own hook commits once per edge: dozens here
    with closing(sqlite3.connect(path)) as db:
        indexed = {row[0] for row in db.execute("SELECT src_id FROM metadata_edge_v2")}
    assert indexed >= set(urns)
