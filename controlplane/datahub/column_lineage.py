"""Column lineage: DataHub's fine-grained lineage (`fineGrainedLineages` on a dataset's upstreamLineage aspect), read
as typed edges and written as a person declares it (`kintsugi init | land --column-lineage COLUMN=URN:COLUMN`).

An edge says a column of the dataset is made from a column of an upstream. A write replaces the edges of the columns
it declares and keeps every other edge, and every dataset-level upstream (an edge's upstream is added as one)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import AspectWrite, MetadataPort
from controlplane.datahub.urns import check_dataset_urn, parse_schema_field_urn, schema_field_urn
from controlplane.errors import InputError

__all__ = [
    "ColumnRef",
    "ColumnEdge",
    "read_column_lineage",
    "column_lineage_mcps",
    "fine_grained",
    "parse_column_edge",
    "OPTION",
]

OPTION = "--column-lineage"

_UPSTREAM_FIELDS = (s.FineGrainedLineageUpstreamTypeClass.FIELD_SET,)
_DOWNSTREAM_FIELDS = (s.FineGrainedLineageDownstreamTypeClass.FIELD, s.FineGrainedLineageDownstreamTypeClass.FIELD_SET)


@dataclass(frozen=True, order=True)
class ColumnRef:
    """A column of a dataset."""

    dataset: str
    column: str

    def __str__(self) -> str:
        return f"{self.column} of {self.dataset}"


@dataclass(frozen=True, order=True)
class ColumnEdge:
    """`column` of the dataset the edge is read from is made from `source`."""

    column: str
    source: ColumnRef


def parse_column_edge(text: str) -> ColumnEdge:
    """`COLUMN=UPSTREAM_URN:UPSTREAM_COLUMN` (as `--column-lineage` takes it) as an edge."""
    column, sep, source = text.partition("=")
    urn, colon, upstream_column = source.rpartition(":")
    if not (sep and column.strip() and colon and upstream_column.strip() and urn.endswith(")")):
        raise InputError(
            f"{OPTION} {text[:160]!r} is not COLUMN=UPSTREAM_URN:COLUMN",
            f"write it as {OPTION} 'FEATURE=urn:li:dataset:(urn:li:dataPlatform:PLATFORM,NAME,PROD):COLUMN'",
        )
    return ColumnEdge(column.strip(), ColumnRef(check_dataset_urn(urn, OPTION), upstream_column.strip()))


def read_column_lineage(port: MetadataPort, dataset: str) -> tuple[ColumnEdge, ...]:
    """The dataset's column edges (fine-grained lineages of field types whose URNs parse), sorted."""
    lineage = port.aspect(dataset, s.UpstreamLineageClass)
    return tuple(sorted(set(_edges(dataset, (lineage.fineGrainedLineages or []) if lineage else []))))


def _edges(dataset: str, lineages: Sequence[s.FineGrainedLineageClass]) -> list[ColumnEdge]:
    edges = []
    for lineage in lineages:
        if lineage.upstreamType not in _UPSTREAM_FIELDS or lineage.downstreamType not in _DOWNSTREAM_FIELDS:
            continue  # a whole dataset as the upstream, or no field downstream: no column to trace
        downstreams = [parse_schema_field_urn(u) for u in lineage.downstreams or []]
        upstreams = [parse_schema_field_urn(u) for u in lineage.upstreams or []]
        for down in downstreams:
            if down is None or down[0] != dataset:
                continue
            edges += [ColumnEdge(down[1], ColumnRef(*up)) for up in upstreams if up is not None]
    return edges


def fine_grained(dataset: str, edges: Sequence[ColumnEdge]) -> list[s.FineGrainedLineageClass]:
    """One fine-grained lineage per column of `dataset`, its sources in one field set."""
    columns = sorted({e.column for e in edges})
    return [
        s.FineGrainedLineageClass(
            upstreamType=s.FineGrainedLineageUpstreamTypeClass.FIELD_SET,
            downstreamType=s.FineGrainedLineageDownstreamTypeClass.FIELD,
            upstreams=[
                schema_field_urn(e.source.dataset, e.source.column) for e in sorted(edges) if e.column == column
            ],
            downstreams=[schema_field_urn(dataset, column)],
        )
        for column in columns
    ]


def column_lineage_mcps(port: MetadataPort, dataset: str, edges: Sequence[ColumnEdge]) -> list[AspectWrite]:
    """The dataset's upstreamLineage with `edges` for the columns they name (their earlier edges replaced), every
    other edge and upstream kept; [] when that is what DataHub holds already."""
    current = port.aspect(dataset, s.UpstreamLineageClass) or s.UpstreamLineageClass(upstreams=[])
    declared = {e.column for e in edges}
    kept = [e for e in _edges(dataset, current.fineGrainedLineages or []) if e.column not in declared]
    upstreams = list(current.upstreams)
    for source in sorted({e.source.dataset for e in edges} - {u.dataset for u in upstreams}):
        upstreams.append(s.UpstreamClass(dataset=source, type=s.DatasetLineageTypeClass.TRANSFORMED))
    wanted = fine_grained(dataset, [*kept, *edges])
    if upstreams == current.upstreams and wanted == (current.fineGrainedLineages or []):
        return []
    return [MCP(entityUrn=dataset, aspect=s.UpstreamLineageClass(upstreams=upstreams, fineGrainedLineages=wanted))]
