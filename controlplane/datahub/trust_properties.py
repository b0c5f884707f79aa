"""The trust score in DataHub, as structured properties on the model version (mlModel) and its model group.

The property definitions have fixed URNs (`urn:li:structuredProperty:kintsugi.trust_score`...) and are written once:
only when DataHub does not hold them as they are here. The version carries its score, band, deductions (one JSON
row each: reason, points, evidence) and the governance exceptions in force; the group carries the score, band and
deductions of its latest concluded version, and which version that is. Every other structured property an entity
carries is kept. The score's value types live here, below `models.trust` that computes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Sequence

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s
from datahub.metadata.urns import Urn

from controlplane.datahub.port import AspectWrite, MetadataPort
from controlplane.datahub.urns import model_group_urn, model_urn, structured_property_urn
from profiles.records import Record

__all__ = [
    "Deduction",
    "TrustBand",
    "TrustScore",
    "band_of",
    "TrustProperties",
    "TRUST_SCORE",
    "TRUST_BAND",
    "TRUST_DEDUCTIONS",
    "TRUST_VERSION",
    "GOVERNANCE_EXCEPTIONS",
    "definition_mcps",
    "trust_mcps",
    "read_trust",
]


@dataclass(frozen=True)
class Deduction(Record):
    """A row of the trust score, as `models.trust` computes it and DataHub holds it."""

    reason: str
    points: int
    evidence: str


class TrustBand(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


def band_of(score: int) -> TrustBand:
    return TrustBand.HIGH if score >= 80 else TrustBand.MEDIUM if score >= 60 else TrustBand.LOW


@dataclass(frozen=True)
class TrustScore(Record):
    score: int
    band: TrustBand
    deductions: tuple[Deduction, ...]


TRUST_SCORE = structured_property_urn("kintsugi.trust_score")
TRUST_BAND = structured_property_urn("kintsugi.trust_band")
TRUST_DEDUCTIONS = structured_property_urn("kintsugi.trust_deductions")
TRUST_VERSION = structured_property_urn("kintsugi.trust_version")
GOVERNANCE_EXCEPTIONS = structured_property_urn("kintsugi.governance_exceptions")
_MODELS = ("mlModel", "mlModelGroup")


def _definition(
    urn: str, value_type: str, entities: Sequence[str], description: str, *, many: bool = False
) -> s.StructuredPropertyDefinitionClass:
    allowed = [s.PropertyValueClass(value=b) for b in ("high", "medium", "low")] if urn == TRUST_BAND else None
    return s.StructuredPropertyDefinitionClass(
        qualifiedName=urn.removeprefix("urn:li:structuredProperty:"),
        displayName=urn.removeprefix("urn:li:structuredProperty:kintsugi.").replace("_", " "),
        valueType=Urn.make_data_type_urn(value_type),
        entityTypes=[Urn.make_entity_type_urn(e) for e in entities],
        cardinality=s.PropertyCardinalityClass.MULTIPLE if many else s.PropertyCardinalityClass.SINGLE,
        allowedValues=allowed,
        description=description,
        immutable=False,
    )


_DEFINITIONS = (
    _definition(TRUST_SCORE, "number", _MODELS, "Kintsugi's trust score: 100 minus its named deductions"),
    _definition(TRUST_BAND, "string", _MODELS, "The trust score's band: high (>= 80), medium (>= 60), low"),
    _definition(TRUST_DEDUCTIONS, "string", _MODELS, "One JSON row per deduction: reason, points, evidence", many=True),
    _definition(TRUST_VERSION, "number", ("mlModelGroup",), "The model version the group's trust score is of"),
    _definition(
        GOVERNANCE_EXCEPTIONS,
        "string",
        ("mlModel",),
        "Governance findings allowed by the pipeline's rules, as recorded at the gate",
        many=True,
    ),
)


def definition_mcps(port: MetadataPort) -> list[AspectWrite]:
    """The property definitions DataHub does not hold as they are here ([] once they are written)."""
    return [
        MCP(entityUrn=f"urn:li:structuredProperty:{d.qualifiedName}", aspect=d)
        for d in _DEFINITIONS
        if port.aspect(f"urn:li:structuredProperty:{d.qualifiedName}", s.StructuredPropertyDefinitionClass) != d
    ]


def _row(deduction: Deduction) -> str:
    return json.dumps(deduction.to_dict(), sort_keys=True)


def trust_mcps(
    port: MetadataPort, pipeline: str, version: int, trust: TrustScore, exceptions: Sequence[str]
) -> list[AspectWrite]:
    """The definitions still missing, then the version's and the group's trust (their other properties kept)."""
    rows: list[str | float] = [_row(d) for d in trust.deductions]
    shared: dict[str, list[str | float]] = {
        TRUST_SCORE: [float(trust.score)],
        TRUST_BAND: [trust.band.value],
        TRUST_DEDUCTIONS: rows,
    }
    listed: list[str | float] = list(exceptions)
    on_version = {**shared, GOVERNANCE_EXCEPTIONS: listed}
    of_version: list[str | float] = [float(version)]
    on_group = {**shared, TRUST_VERSION: of_version}
    return [
        *definition_mcps(port),
        _assigned(port, model_urn(pipeline, version), on_version),
        _assigned(port, model_group_urn(pipeline), on_group),
    ]


def _assigned(port: MetadataPort, urn: str, values: dict[str, list[str | float]]) -> AspectWrite:
    current = port.aspect(urn, s.StructuredPropertiesClass)
    kept = [p for p in (current.properties if current else []) if p.propertyUrn not in values]
    wanted = [s.StructuredPropertyValueAssignmentClass(propertyUrn=k, values=v) for k, v in values.items() if v]
    return MCP(entityUrn=urn, aspect=s.StructuredPropertiesClass(properties=kept + wanted))


@dataclass(frozen=True)
class TrustProperties:
    """The trust structured properties an entity carries, as read back from DataHub."""

    score: float | None
    band: str | None
    deductions: tuple[Deduction, ...]
    exceptions: tuple[str, ...] = ()
    version: int | None = None  # the group's: the version its score is of


def read_trust(port: MetadataPort, urn: str) -> TrustProperties | None:
    """The trust properties of a model version or group, or None when it carries none."""
    found = port.aspect(urn, s.StructuredPropertiesClass)
    values = {p.propertyUrn: list(p.values) for p in (found.properties if found else [])}
    if TRUST_SCORE not in values:
        return None
    version = values.get(TRUST_VERSION)
    return TrustProperties(
        score=float(values[TRUST_SCORE][0]),
        band=str(values[TRUST_BAND][0]) if values.get(TRUST_BAND) else None,
        deductions=tuple(Deduction.from_dict(json.loads(str(v))) for v in values.get(TRUST_DEDUCTIONS, [])),
        exceptions=tuple(str(v) for v in values.get(GOVERNANCE_EXCEPTIONS, [])),
        version=int(version[0]) if version else None,
    )
