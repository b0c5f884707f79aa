"""How DataHub classifies a dataset: its tags (globalTags) and glossary terms (glossaryTerms), the tags and terms on
its schema fields (schemaMetadata's fields, and editableSchemaMetadata where a person added them in DataHub's UI),
its domains and its deprecation — read into one typed record; and the writes that tag a field (or give it a term) or
put a dataset in a domain, as a person does in DataHub's UI.

Which names mark what (PII, restricted) is the governance scan's word (`controlplane.models.governance`); this
module only reads the names DataHub holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s
from datahub.metadata.urns import GlossaryTermUrn, TagUrn
from datahub.utilities.urns.field_paths import get_simple_field_path_from_v2_field_path

from controlplane.datahub.port import AspectWrite, MetadataPort

__all__ = ["Marker", "FieldMarker", "Classified", "read_classified", "field_marker_mcps", "domain_mcps"]

_ACTOR = "urn:li:corpuser:kintsugi"


@dataclass(frozen=True)
class Marker:
    """A tag or glossary term on an entity: its URN and its name (`pii`, `Classification.PII`)."""

    urn: str
    name: str


@dataclass(frozen=True)
class FieldMarker:
    field: str  # the field's simple path (a v2 path is read as its simple form)
    marker: Marker


@dataclass(frozen=True)
class Classified:
    """One dataset as DataHub classifies it (`known`: DataHub holds its properties or its schema)."""

    urn: str
    known: bool
    markers: tuple[Marker, ...] = ()  # on the dataset
    field_markers: tuple[FieldMarker, ...] = ()  # on its schema fields
    fields: tuple[str, ...] = ()  # its schema's fields
    domains: tuple[str, ...] = ()
    deprecated: bool = False
    deprecation_note: str = ""


def read_classified(port: MetadataPort, urn: str) -> Classified:
    properties = port.aspect(urn, s.DatasetPropertiesClass)
    schema = port.aspect(urn, s.SchemaMetadataClass)
    editable = port.aspect(urn, s.EditableSchemaMetadataClass)
    deprecation = port.aspect(urn, s.DeprecationClass)
    domains = port.aspect(urn, s.DomainsClass)
    field_markers = [
        FieldMarker(_simple(f.fieldPath), marker)
        for f in (schema.fields if schema else [])
        for marker in _markers(f.globalTags, f.glossaryTerms)
    ]
    field_markers += [
        FieldMarker(_simple(info.fieldPath), marker)
        for info in (editable.editableSchemaFieldInfo if editable else [])
        for marker in _markers(info.globalTags, info.glossaryTerms)
    ]
    return Classified(
        urn=urn,
        known=properties is not None or schema is not None,
        markers=tuple(_markers(port.aspect(urn, s.GlobalTagsClass), port.aspect(urn, s.GlossaryTermsClass))),
        field_markers=tuple(dict.fromkeys(field_markers)),
        fields=tuple(_simple(f.fieldPath) for f in (schema.fields if schema else [])),
        domains=tuple(sorted(domains.domains)) if domains else (),
        deprecated=bool(deprecation and deprecation.deprecated),
        deprecation_note=deprecation.note if deprecation and deprecation.deprecated else "",
    )


def _markers(tags: s.GlobalTagsClass | None, terms: s.GlossaryTermsClass | None) -> list[Marker]:
    found = [Marker(t.tag, _name(t.tag, TagUrn)) for t in (tags.tags if tags else [])]
    return found + [Marker(t.urn, _name(t.urn, GlossaryTermUrn)) for t in (terms.terms if terms else [])]


def _name(urn: str, kind: type[TagUrn] | type[GlossaryTermUrn]) -> str:
    try:
        return kind.from_string(urn).name
    except Exception:  # a malformed URN still carries its name after the entity type
        return urn.rpartition(":")[2]


def _simple(field_path: str) -> str:
    return get_simple_field_path_from_v2_field_path(field_path)


def field_marker_mcps(port: MetadataPort, dataset: str, field: str, marker: str, at_ms: int) -> list[AspectWrite]:
    """A tag (`urn:li:tag:...`) or glossary term (`urn:li:glossaryTerm:...`) added to the field in
    editableSchemaMetadata, where DataHub's UI writes it, at `at_ms`; every other edit kept."""
    editable = port.aspect(dataset, s.EditableSchemaMetadataClass) or s.EditableSchemaMetadataClass(
        editableSchemaFieldInfo=[]
    )
    infos = {info.fieldPath: info for info in editable.editableSchemaFieldInfo}
    info = infos.setdefault(field, s.EditableSchemaFieldInfoClass(fieldPath=field))
    stamp = s.AuditStampClass(time=at_ms, actor=_ACTOR)
    if marker.startswith("urn:li:glossaryTerm:"):
        terms = info.glossaryTerms or s.GlossaryTermsClass(terms=[], auditStamp=stamp)
        if marker not in {t.urn for t in terms.terms}:
            terms.terms.append(s.GlossaryTermAssociationClass(urn=marker))
        info.glossaryTerms = terms
    else:
        tags = info.globalTags or s.GlobalTagsClass(tags=[])
        if marker not in {t.tag for t in tags.tags}:
            tags.tags.append(s.TagAssociationClass(marker))
        info.globalTags = tags
    editable.editableSchemaFieldInfo = [infos[name] for name in sorted(infos)]
    editable.lastModified = stamp
    editable.created = editable.created or stamp
    return [MCP(entityUrn=dataset, aspect=editable)]


def domain_mcps(dataset: str, domain: str) -> list[AspectWrite]:
    """The dataset put in `domain` (DataHub's `domains` aspect: one domain per dataset)."""
    return [MCP(entityUrn=dataset, aspect=s.DomainsClass(domains=[domain]))]
