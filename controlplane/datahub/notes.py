"""Notes kept in DataHub: a note on an incident (`incidentNotes`, one per source id, markdown) and the links a
dataset's institutional memory keeps (a postmortem, an accepted new normal)."""

from __future__ import annotations

from dataclasses import dataclass

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.port import AspectWrite, MetadataPort

__all__ = ["incident_note_mcps", "read_incident_note", "memory_link_mcps", "MemoryLink", "read_memory_links"]


def _mine(notes: s.IncidentNotesClass | None, note_id: str) -> list[s.IncidentNoteClass]:
    return [n for n in (notes.notes or [] if notes else []) if n.source is not None and n.source.externalId == note_id]


def incident_note_mcps(
    port: MetadataPort, incident: str, note_id: str, markdown: str, at_ms: int, by: str
) -> list[AspectWrite]:
    """The incident's note `note_id` set to `markdown`, the other notes kept; nothing when it says that already."""
    notes = port.aspect(incident, s.IncidentNotesClass) or s.IncidentNotesClass(notes=[])
    mine = _mine(notes, note_id)
    if mine and mine[0].message == markdown:
        return []
    others = [n for n in notes.notes or [] if n not in mine]
    note = s.IncidentNoteClass(
        message=markdown,
        created=s.AuditStampClass(time=at_ms, actor=by),
        source=s.IncidentNoteSourceClass(sourceType="EXTERNAL", externalId=note_id),
    )
    return [MCP(entityUrn=incident, aspect=s.IncidentNotesClass(notes=[*others, note]))]


def read_incident_note(port: MetadataPort, incident: str, note_id: str) -> str | None:
    """The last note `note_id` on the incident, or None."""
    mine = _mine(port.aspect(incident, s.IncidentNotesClass), note_id)
    return mine[-1].message if mine else None


def memory_link_mcps(
    port: MetadataPort, dataset: str, *, url: str, description: str, at_ms: int, by: str, once: bool = False
) -> list[AspectWrite]:
    """A link added to the dataset's institutional memory (with `once`, nothing when one to `url` is there)."""
    memory = port.aspect(dataset, s.InstitutionalMemoryClass) or s.InstitutionalMemoryClass(elements=[])
    if once and any(e.url == url for e in memory.elements):
        return []
    link = s.InstitutionalMemoryMetadataClass(
        url=url, description=description, createStamp=s.AuditStampClass(time=at_ms, actor=by)
    )
    return [MCP(entityUrn=dataset, aspect=s.InstitutionalMemoryClass(elements=[*memory.elements, link]))]


@dataclass(frozen=True)
class MemoryLink:
    """One link of a dataset's institutional memory, as DataHub holds it."""

    url: str
    description: str
    by: str
    at_ms: int


def read_memory_links(port: MetadataPort, dataset: str, *, prefix: str = "") -> list[MemoryLink]:
    """The dataset's institutional memory links whose url starts with `prefix`, oldest first."""
    memory = port.aspect(dataset, s.InstitutionalMemoryClass)
    return [
        MemoryLink(e.url, e.description, e.createStamp.actor, e.createStamp.time)
        for e in (memory.elements if memory else [])
        if e.url.startswith(prefix)
    ]
