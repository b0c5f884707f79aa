"""Datasets in DataHub: schema, lineage, ownership, contract and reference profile — written and read back."""
from __future__ import annotations

from collections import deque
from typing import Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import contract_urn
from controlplane.errors import ContractError
from controlplane.odcs import parse_odcs
from guard.context import UpstreamNode
from guard.contract import Contract
from guard.profile import ColumnProfile, DatasetProfile

__all__ = [
    "dataset_mcps", "contract_mcps", "profile_mcps", "read_contract", "read_profile", "walk_upstream",
    "active_incidents_on", "downstream_of", "FRESHNESS_PROPERTY",
]

FRESHNESS_PROPERTY = "kintsugi.freshnessSlaHours"
_TYPES = {"number": s.NumberTypeClass, "integer": s.NumberTypeClass, "string": s.StringTypeClass,
          "timestamp": s.TimeTypeClass, "date": s.DateTypeClass, "boolean": s.BooleanTypeClass}


def dataset_mcps(urn: str, *, name: str, description: str, columns: Sequence[tuple[str, str]],
                 upstreams: Sequence[str], owner: str, last_modified_ms: int,
                 freshness_hours: float | None = None) -> list[MCP]:
    custom = {FRESHNESS_PROPERTY: str(freshness_hours)} if freshness_hours is not None else {}
    fields = [s.SchemaFieldClass(fieldPath=col, nativeDataType=kind, type=s.SchemaFieldDataTypeClass(_TYPES[kind]()))
              for col, kind in columns]
    aspects: list[s._Aspect] = [
        s.DatasetPropertiesClass(name=name, description=description, customProperties=custom,
                                 lastModified=s.TimeStampClass(last_modified_ms)),
        s.SchemaMetadataClass(schemaName=name, platform=urn.split(",")[0].split("(")[-1], version=0, hash="",
                              platformSchema=s.OtherSchemaClass(rawSchema=""), fields=fields),
        s.OwnershipClass(owners=[s.OwnerClass(owner=owner, type=s.OwnershipTypeClass.TECHNICAL_OWNER)]),
        s.StatusClass(removed=False),
    ]
    if upstreams:
        aspects.append(s.UpstreamLineageClass(upstreams=[
            s.UpstreamClass(dataset=up, type=s.DatasetLineageTypeClass.TRANSFORMED) for up in upstreams]))
    return [MCP(entityUrn=urn, aspect=a) for a in aspects]


def contract_mcps(contract: Contract, raw_yaml: str) -> list[MCP]:
    """The contract as a DataHub dataContract entity; the ODCS document is kept verbatim in rawContract."""
    urn = contract_urn(contract.dataset_urn)
    return [
        MCP(entityUrn=urn, aspect=s.DataContractPropertiesClass(entity=contract.dataset_urn, rawContract=raw_yaml)),
        MCP(entityUrn=urn, aspect=s.DataContractStatusClass(state=s.DataContractStateClass.ACTIVE)),
    ]


def read_contract(port: MetadataPort, dataset: str) -> tuple[Contract | None, str | None]:
    """(contract, None), or (None, why) when it is missing or does not parse — the guard blocks on either."""
    properties = port.aspect(contract_urn(dataset), s.DataContractPropertiesClass)
    if properties is None or not properties.rawContract:
        return None, None
    try:
        return parse_odcs(properties.rawContract, f"the contract of {dataset}"), None
    except ContractError as exc:
        return None, str(exc)


def profile_mcps(urn: str, profile: DatasetProfile, at_ms: int) -> list[MCP]:
    fields = [_field_profile(column) for column in profile.columns.values()]
    aspect = s.DatasetProfileClass(timestampMillis=at_ms, rowCount=profile.row_count,
                                   columnCount=len(fields), fieldProfiles=fields)
    return [MCP(entityUrn=urn, aspect=aspect)]


def _field_profile(column: ColumnProfile) -> s.DatasetFieldProfileClass:
    def text(value: float | None) -> str | None:
        return None if value is None else repr(float(value))

    return s.DatasetFieldProfileClass(
        fieldPath=column.name, nullCount=column.null_count, nullProportion=column.null_fraction,
        min=text(column.minimum), max=text(column.maximum), mean=text(column.mean), stdev=text(column.stdev),
        median=text(column.quantile(0.5)),
        quantiles=[s.QuantileClass(quantile=repr(q), value=repr(v)) for q, v in column.quantiles],
        distinctValueFrequencies=None if column.value_counts is None else [
            s.ValueFrequencyClass(value=v, frequency=n) for v, n in column.value_counts],
    )


def read_profile(port: MetadataPort, urn: str, as_of_ms: int | None = None) -> DatasetProfile | None:
    profile = port.aspect(urn, s.DatasetProfileClass, as_of_ms)
    if profile is None or profile.rowCount is None:
        return None
    schema = port.aspect(urn, s.SchemaMetadataClass)
    types = {f.fieldPath: f.nativeDataType for f in (schema.fields if schema else [])}
    columns = {f.fieldPath: _column_profile(f, profile.rowCount, types.get(f.fieldPath, "unknown"))
               for f in profile.fieldProfiles or []}
    return DatasetProfile(row_count=profile.rowCount, columns=columns)


def _column_profile(field: s.DatasetFieldProfileClass, rows: int, kind: str) -> ColumnProfile:
    def number(text: str | None) -> float | None:
        return None if text is None else float(text)

    frequencies = field.distinctValueFrequencies
    return ColumnProfile(
        name=field.fieldPath, logical_type=kind, row_count=rows, null_count=field.nullCount or 0,
        minimum=number(field.min), maximum=number(field.max), mean=number(field.mean), stdev=number(field.stdev),
        quantiles=tuple((float(q.quantile), float(q.value)) for q in field.quantiles or []),
        value_counts=None if frequencies is None else tuple((f.value, f.frequency) for f in frequencies),
    )


def walk_upstream(port: MetadataPort, dataset: str) -> tuple[UpstreamNode, ...]:
    """Breadth-first over upstreamLineage, any depth, each dataset once."""
    nodes: list[UpstreamNode] = []
    seen, queue = {dataset}, deque([(dataset, 0)])
    while queue:
        urn, depth = queue.popleft()
        lineage = port.aspect(urn, s.UpstreamLineageClass)
        for upstream in (lineage.upstreams if lineage else []):
            if upstream.dataset in seen:
                continue
            seen.add(upstream.dataset)
            node = _node(port, upstream.dataset, depth + 1)
            nodes.append(node)
            if node.known:
                queue.append((upstream.dataset, depth + 1))
    return tuple(nodes)


def _node(port: MetadataPort, urn: str, depth: int) -> UpstreamNode:
    properties = port.aspect(urn, s.DatasetPropertiesClass)
    if properties is None:
        return UpstreamNode(urn=urn, depth=depth, known=False)
    deprecation = port.aspect(urn, s.DeprecationClass)
    sla = (properties.customProperties or {}).get(FRESHNESS_PROPERTY)
    return UpstreamNode(
        urn=urn, depth=depth, known=True, deprecated=bool(deprecation and deprecation.deprecated),
        active_incidents=tuple(active_incidents_on(port, urn)),
        last_updated_ms=properties.lastModified.time if properties.lastModified else None,
        freshness_hours=float(sla) if sla else None,
    )


def downstream_of(port: MetadataPort, datasets: set[str]) -> set[str]:
    """`datasets` and every dataset that reads from them through upstreamLineage, any depth."""
    readers: dict[str, set[str]] = {}
    for urn in port.urns("dataset"):
        lineage = port.aspect(urn, s.UpstreamLineageClass)
        for upstream in (lineage.upstreams if lineage else []):
            readers.setdefault(upstream.dataset, set()).add(urn)
    found, queue = set(datasets), deque(datasets)
    while queue:
        for reader in readers.get(queue.popleft(), set()) - found:
            found.add(reader)
            queue.append(reader)
    return found


def active_incidents_on(port: MetadataPort, dataset: str) -> list[str]:
    found = []
    for urn in port.urns("incident"):
        info = port.aspect(urn, s.IncidentInfoClass)
        if info and dataset in info.entities and info.status.state == s.IncidentStateClass.ACTIVE:
            found.append(urn)
    return found
