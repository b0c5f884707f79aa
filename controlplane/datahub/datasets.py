"""Datasets in DataHub: properties, schema (in DataHub's own field types), lineage, owners, operations and the
reference profile — written and read back.

Upstream freshness is read from DataHub's standard aspects: the newest of `datasetProperties.lastModified` and
the latest `operation`'s `lastUpdatedTimestamp`. The freshness SLA of an upstream is the custom property
`kintsugi.freshnessSlaHours` on its datasetProperties (DataHub has no field for it; `kintsugi init --upstream
URN=HOURS` writes it).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s
from datahub.metadata.urns import DatasetUrn

from controlplane.datahub.incidents import active_incidents
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import dataset_platform
from guard.context import UpstreamNode
from profiles.profile import ColumnProfile, DatasetProfile

__all__ = [
    "SchemaColumn",
    "dataset_mcps",
    "operation_mcp",
    "profile_mcps",
    "read_profile",
    "read_schema",
    "walk_upstream",
    "downstream_of",
    "FRESHNESS_PROPERTY",
    "field_type",
    "logical_type_of",
    "is_known",
    "dataset_name",
    "upstreams_of",
    "read_owners",
    "upstream_mcps",
]

FRESHNESS_PROPERTY = "kintsugi.freshnessSlaHours"
_FIELD_TYPES: dict[str, type] = {
    "number": s.NumberTypeClass,
    "integer": s.NumberTypeClass,
    "string": s.StringTypeClass,
    "timestamp": s.TimeTypeClass,
    "date": s.DateTypeClass,
    "boolean": s.BooleanTypeClass,
}


@dataclass(frozen=True)
class SchemaColumn:
    """A column as registered: its logical type (the contract's words) and its physical type (e.g. arrow's)."""

    name: str
    logical_type: str
    native_type: str = ""


def field_type(logical: str) -> s.SchemaFieldDataTypeClass:
    return s.SchemaFieldDataTypeClass(_FIELD_TYPES.get(logical, s.NullTypeClass)())


def logical_type_of(schema_field: s.SchemaFieldClass) -> str:
    """The logical type of a registered field, from DataHub's field type (integers told apart by native type)."""
    kind = type(schema_field.type.type)
    native = (schema_field.nativeDataType or "").lower()
    if kind is s.NumberTypeClass:
        return "integer" if native in ("integer",) or native.startswith(("int", "uint")) else "number"
    names = {
        s.StringTypeClass: "string",
        s.TimeTypeClass: "timestamp",
        s.DateTypeClass: "date",
        s.BooleanTypeClass: "boolean",
    }
    return names.get(kind, native or "unknown")


def dataset_mcps(
    urn: str,
    *,
    name: str,
    description: str,
    columns: Sequence[SchemaColumn],
    upstreams: Sequence[str],
    owner: str,
    last_modified_ms: int,
    freshness_hours: float | None = None,
    properties: dict[str, str] | None = None,
) -> list[MCP]:
    custom = {**(properties or {}), **({FRESHNESS_PROPERTY: str(freshness_hours)} if freshness_hours else {})}
    fields = [
        s.SchemaFieldClass(
            fieldPath=c.name, nativeDataType=c.native_type or c.logical_type, type=field_type(c.logical_type)
        )
        for c in columns
    ]
    aspects: list[s._Aspect] = [
        s.DatasetPropertiesClass(
            name=name, description=description, customProperties=custom, lastModified=s.TimeStampClass(last_modified_ms)
        ),
        s.SchemaMetadataClass(
            schemaName=name,
            platform=f"urn:li:dataPlatform:{dataset_platform(urn)}",
            version=0,
            hash="",
            platformSchema=s.OtherSchemaClass(rawSchema=""),
            fields=fields,
        ),
        s.OwnershipClass(owners=[s.OwnerClass(owner=owner, type=s.OwnershipTypeClass.TECHNICAL_OWNER)]),
        s.StatusClass(removed=False),
    ]
    if upstreams:
        aspects.append(
            s.UpstreamLineageClass(
                upstreams=[s.UpstreamClass(dataset=up, type=s.DatasetLineageTypeClass.TRANSFORMED) for up in upstreams]
            )
        )
    return [MCP(entityUrn=urn, aspect=a) for a in aspects]


def operation_mcp(
    urn: str, *, rows: int | None, at_ms: int, actor: str, properties: dict[str, str] | None = None
) -> MCP:
    """DataHub's standard record of a load: an INSERT (of `rows` rows, when counted) at `at_ms`."""
    return MCP(
        entityUrn=urn,
        aspect=s.OperationClass(
            timestampMillis=at_ms,
            lastUpdatedTimestamp=at_ms,
            operationType=s.OperationTypeClass.INSERT,
            numAffectedRows=rows,
            actor=actor,
            customProperties=properties,
        ),
    )


def upstream_mcps(
    port: MetadataPort, urn: str, *, sla_hours: float | None, owner: str, now_ms: int, description: str
) -> list[MCP]:
    """An upstream DataHub does not know registered (properties with its SLA, owner, status: no schema, its last
    load counted as `now_ms`); a known one given a new SLA; [] when it has that SLA already or none is asked."""
    known = port.aspect(urn, s.DatasetPropertiesClass)
    if known is None:
        mcps = dataset_mcps(
            urn,
            name=DatasetUrn.from_string(urn).name,
            columns=[],
            upstreams=[],
            owner=owner,
            last_modified_ms=now_ms,
            freshness_hours=sla_hours,
            description=description,
        )
        return [m for m in mcps if not isinstance(m.aspect, s.SchemaMetadataClass)]
    current = (known.customProperties or {}).get(FRESHNESS_PROPERTY)
    if sla_hours is None or current == str(sla_hours):
        return []
    known.customProperties = {**(known.customProperties or {}), FRESHNESS_PROPERTY: str(sla_hours)}
    return [MCP(entityUrn=urn, aspect=known)]


def is_known(port: MetadataPort, urn: str) -> bool:
    """DataHub holds the dataset's properties."""
    return port.aspect(urn, s.DatasetPropertiesClass) is not None


def dataset_name(port: MetadataPort, urn: str) -> str | None:
    properties = port.aspect(urn, s.DatasetPropertiesClass)
    return properties.name if properties is not None and properties.name else None


def upstreams_of(port: MetadataPort, urn: str) -> tuple[str, ...]:
    """The datasets the dataset reads from directly (its upstreamLineage), sorted."""
    lineage = port.aspect(urn, s.UpstreamLineageClass)
    return tuple(sorted(u.dataset for u in (lineage.upstreams if lineage else [])))


def read_owners(port: MetadataPort, urn: str) -> list[str]:
    ownership = port.aspect(urn, s.OwnershipClass)
    return [o.owner for o in ownership.owners] if ownership is not None else []


def read_schema(port: MetadataPort, urn: str, as_of_ms: int | None = None) -> list[SchemaColumn] | None:
    schema = port.aspect(urn, s.SchemaMetadataClass, as_of_ms)
    if schema is None:
        return None
    return [SchemaColumn(f.fieldPath, logical_type_of(f), f.nativeDataType) for f in schema.fields]


def profile_mcps(urn: str, profile: DatasetProfile, at_ms: int) -> list[MCP]:
    """The reference profile's summary as DataHub's datasetProfile (the full reference lives in the workspace)."""
    fields = [_field_profile(column) for column in profile.columns.values()]
    aspect = s.DatasetProfileClass(
        timestampMillis=at_ms, rowCount=profile.row_count, columnCount=len(fields), fieldProfiles=fields
    )
    return [MCP(entityUrn=urn, aspect=aspect)]


def _field_profile(column: ColumnProfile) -> s.DatasetFieldProfileClass:
    def text(value: float | None) -> str | None:
        return None if value is None else repr(float(value))

    return s.DatasetFieldProfileClass(
        fieldPath=column.name,
        nullCount=column.null_count,
        nullProportion=column.null_fraction,
        min=text(column.minimum),
        max=text(column.maximum),
        mean=text(column.mean),
        stdev=text(column.stdev),
        median=text(column.quantile(0.5)),
        quantiles=[s.QuantileClass(quantile=repr(q), value=repr(v)) for q, v in column.quantiles],
        distinctValueFrequencies=None
        if column.value_counts is None
        else [s.ValueFrequencyClass(value=v, frequency=n) for v, n in column.value_counts],
    )


def read_profile(port: MetadataPort, urn: str, as_of_ms: int | None = None) -> DatasetProfile | None:
    profile = port.aspect(urn, s.DatasetProfileClass, as_of_ms)
    if profile is None or profile.rowCount is None:
        return None
    types = {c.name: c.logical_type for c in read_schema(port, urn) or []}
    columns = {
        f.fieldPath: _column_profile(f, profile.rowCount, types.get(f.fieldPath, "unknown"))
        for f in profile.fieldProfiles or []
    }
    return DatasetProfile(row_count=profile.rowCount, columns=columns)


def _column_profile(field: s.DatasetFieldProfileClass, rows: int, kind: str) -> ColumnProfile:
    def number(text: str | None) -> float | None:
        return None if text is None else float(text)

    frequencies = field.distinctValueFrequencies
    return ColumnProfile(
        name=field.fieldPath,
        logical_type=kind,
        row_count=rows,
        null_count=field.nullCount or 0,
        minimum=number(field.min),
        maximum=number(field.max),
        mean=number(field.mean),
        stdev=number(field.stdev),
        quantiles=tuple((float(q.quantile), float(q.value)) for q in field.quantiles or []),
        value_counts=None if frequencies is None else tuple((f.value, f.frequency) for f in frequencies),
    )


def walk_upstream(port: MetadataPort, dataset: str) -> tuple[UpstreamNode, ...]:
    """Breadth-first over upstreamLineage, any depth, each dataset once."""
    active = active_incidents(port)
    nodes: list[UpstreamNode] = []
    seen, queue = {dataset}, deque([(dataset, 0)])
    while queue:
        urn, depth = queue.popleft()
        lineage = port.aspect(urn, s.UpstreamLineageClass)
        for upstream in lineage.upstreams if lineage else []:
            if upstream.dataset in seen:
                continue
            seen.add(upstream.dataset)
            node = _node(port, upstream.dataset, depth + 1, tuple(active.get(upstream.dataset, ())))
            nodes.append(node)
            if node.known:
                queue.append((upstream.dataset, depth + 1))
    return tuple(nodes)


def _node(port: MetadataPort, urn: str, depth: int, incidents: tuple[str, ...]) -> UpstreamNode:
    properties = port.aspect(urn, s.DatasetPropertiesClass)
    if properties is None:
        return UpstreamNode(urn=urn, depth=depth, known=False)
    deprecation = port.aspect(urn, s.DeprecationClass)
    sla = (properties.customProperties or {}).get(FRESHNESS_PROPERTY)
    return UpstreamNode(
        urn=urn,
        depth=depth,
        known=True,
        deprecated=bool(deprecation and deprecation.deprecated),
        active_incidents=incidents,
        last_updated_ms=_last_updated(port, urn, properties),
        freshness_hours=float(sla) if sla else None,
    )


def _last_updated(port: MetadataPort, urn: str, properties: s.DatasetPropertiesClass) -> int | None:
    operation = port.aspect(urn, s.OperationClass)
    stamps = [
        properties.lastModified.time if properties.lastModified else None,
        operation.lastUpdatedTimestamp if operation else None,
    ]
    known = [stamp for stamp in stamps if stamp is not None]
    return max(known) if known else None


def downstream_of(port: MetadataPort, datasets: set[str]) -> set[str]:
    """`datasets` and every dataset that reads from them through upstreamLineage, any depth."""
    readers: dict[str, set[str]] = {}
    for urn in port.urns("dataset"):
        lineage = port.aspect(urn, s.UpstreamLineageClass)
        for upstream in lineage.upstreams if lineage else []:
            readers.setdefault(upstream.dataset, set()).add(urn)
    found, queue = set(datasets), deque(datasets)
    while queue:
        for reader in readers.get(queue.popleft(), set()) - found:
            found.add(reader)
            queue.append(reader)
    return found
