"""The governance scan: a pure, escalate-only judgement of a model's training lineage as DataHub classifies it.

Its evidence (`TrainingLineage`) is read from DataHub only (`controlplane.stages.governance`): the feature table and
every upstream, each with its tags and glossary terms, those of its schema fields, its domains and deprecation, and
the column lineage between them. A column the model trains on (a feature, or the label) is traced to its sources:
through DataHub's fine-grained lineage where the dataset declares edges for it, else to the columns of the same name
in the dataset's direct upstreams; and so on, any depth.

    PII or restricted on a column the model trains on, or on a column it traces to     BLOCK
    PII so, where every dataset it passes through lies in `pii_allowed_in_domain`     EXCEPTION (recorded)
    PII or restricted on a dataset as a whole (which column is not said)               REVIEW
    a deprecated dataset in the lineage (the table itself or an upstream)               REVIEW
    a feature that traces to the same column as the label (`lineage_leakage`)         BLOCK
    PII or restricted on a column no trained column traces to                           NOTED

REVIEW asks a person (the gate says NEEDS_REVIEW); the spec's `governance: {escalate: [KIND, ...]}` makes a kind's
REVIEW findings block. No rule loosens a BLOCK but the PII exception, which stays on the record (the gate's reasons,
the passport, DataHub). Which tag and term names mark PII or restricted data is `MARKERS`, here and nowhere else.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Iterator, Mapping

from controlplane.datahub.classifications import Classified, Marker
from controlplane.datahub.column_lineage import ColumnEdge, ColumnRef
from controlplane.spec import GovernanceKind, GovernanceRules
from profiles.records import Record

__all__ = [
    "Classification",
    "MarkerWords",
    "MARKERS",
    "classify",
    "GovernanceKind",
    "GovernanceSeverity",
    "GovernanceFinding",
    "GovernanceRules",
    "TrainingLineage",
    "scan",
]


class Classification(StrEnum):
    PII = "pii"
    RESTRICTED = "restricted"


@dataclass(frozen=True)
class MarkerWords:
    """A tag or term name marks `classification` when one of its words is one of `words` (case ignored; words are
    split on `.`, `-`, `_`, `/`, `:` and spaces, so `pii`, `PII`, `Pii.Email` and `Classification.PII` all mark PII)."""

    classification: Classification
    words: frozenset[str]


MARKERS: tuple[MarkerWords, ...] = (
    MarkerWords(
        Classification.PII, frozenset({"pii", "personaldata", "personalinformation", "personallyidentifiable"})
    ),
    MarkerWords(Classification.RESTRICTED, frozenset({"restricted", "confidential", "highlyconfidential", "secret"})),
)
_WORD_BREAKS = re.compile(r"[.\-_/: ]+")


def classify(name: str) -> tuple[Classification, ...]:
    """The classifications a tag or term name marks (none for most names)."""
    words = {w for w in _WORD_BREAKS.split(name.lower()) if w}
    return tuple(m.classification for m in MARKERS if words & m.words)


class GovernanceSeverity(StrEnum):
    BLOCK = "block"  # the gate blocks
    REVIEW = "review"  # the gate asks a person (NEEDS_REVIEW)
    EXCEPTION = "exception"  # allowed by a rule of the pipeline's spec, and recorded as such
    NOTED = "noted"  # in the lineage, not in what the model trains on


@dataclass(frozen=True)
class GovernanceFinding(Record):
    kind: GovernanceKind
    severity: GovernanceSeverity
    column: str | None  # the column the model trains on that it concerns; None: no trained column
    dataset: str  # where DataHub records it: the marked, deprecated or shared-source dataset
    source_column: str | None  # the marked field, or the source column a feature shares with the label
    marker: str | None  # the tag or glossary term URN
    message: str

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class TrainingLineage:
    """What the scan reads: the table, the columns the model trains on, every dataset of the lineage as DataHub
    classifies it (the table first), each dataset's direct upstreams and its column edges."""

    table: str
    label: str
    features: tuple[str, ...]
    datasets: tuple[Classified, ...]
    upstreams: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    edges: Mapping[str, tuple[ColumnEdge, ...]] = field(default_factory=dict)

    @property
    def by_urn(self) -> dict[str, Classified]:
        return {d.urn: d for d in self.datasets}

    def sources(self, column: ColumnRef) -> list[ColumnRef]:
        """The columns `column` is made from: its declared edges, else its namesakes in the direct upstreams."""
        declared = [e.source for e in self.edges.get(column.dataset, ()) if e.column == column.column]
        if declared:
            return declared
        known = self.by_urn
        return [
            ColumnRef(up, column.column)
            for up in self.upstreams.get(column.dataset, ())
            if up in known and column.column in known[up].fields
        ]

    def traced(self, column: str) -> list[ColumnRef]:
        """The table's `column` and every column it traces to, nearest first, each once."""
        start = ColumnRef(self.table, column)
        seen, order, queue = {start}, [start], deque([start])
        while queue:
            for source in self.sources(queue.popleft()):
                if source not in seen:
                    seen.add(source)
                    order.append(source)
                    queue.append(source)
        return order


def scan(lineage: TrainingLineage, rules: GovernanceRules) -> tuple[GovernanceFinding, ...]:
    """Every finding over the lineage, in a fixed order: trained columns, datasets, leakage, then the rest."""
    found = [
        *_trained_columns(lineage, rules),
        *_datasets(lineage, rules),
        *_leakage(lineage),
    ]
    found += _noted(lineage, found)
    return tuple(_escalated(f, rules) for f in found)


def _trained_columns(lineage: TrainingLineage, rules: GovernanceRules) -> Iterator[GovernanceFinding]:
    known = lineage.by_urn
    for column in (*lineage.features, lineage.label):
        for ref in lineage.traced(column):
            dataset = known.get(ref.dataset)
            for marked in dataset.field_markers if dataset else ():
                if marked.field != ref.column:
                    continue
                for classification in classify(marked.marker.name):
                    yield _marked(lineage, rules, classification, column, ref, marked.marker)


def _marked(
    lineage: TrainingLineage,
    rules: GovernanceRules,
    classification: Classification,
    column: str,
    ref: ColumnRef,
    marker: Marker,
) -> GovernanceFinding:
    role = "the label" if column == lineage.label else "feature"
    where = "" if ref == ColumnRef(lineage.table, column) else f", which it is made from ({ref})"
    said = f"{classification.value.upper()} on {role} {column}: {marker.urn} on column {ref.column}{where}"
    severity, why = _pii_exception(lineage, rules, classification, ref.dataset)
    return GovernanceFinding(
        GovernanceKind(classification.value), severity, column, ref.dataset, ref.column, marker.urn, f"{said}{why}"
    )


def _pii_exception(
    lineage: TrainingLineage,
    rules: GovernanceRules,
    classification: Classification,
    dataset: str,
    *,
    soft: bool = False,
) -> tuple[GovernanceSeverity, str]:
    """(severity, why) of PII or restricted data in `dataset`: an exception where the rule holds for it and the table."""
    severity = GovernanceSeverity.REVIEW if soft else GovernanceSeverity.BLOCK
    domain = rules.pii_allowed_in_domain
    if classification is not Classification.PII or domain is None:
        return severity, ""
    known = lineage.by_urn
    outside = [urn for urn in dict.fromkeys((dataset, lineage.table)) if domain not in known[urn].domains]
    if not outside:
        return GovernanceSeverity.EXCEPTION, f"; allowed: it lies in {domain} (governance.pii_allowed_in_domain)"
    shown = ", ".join(f"{urn} is in {', '.join(known[urn].domains) or 'no domain'}" for urn in outside)
    return severity, f"; the exception for {domain} does not hold: {shown}"


def _datasets(lineage: TrainingLineage, rules: GovernanceRules) -> Iterator[GovernanceFinding]:
    for dataset in lineage.datasets:
        what = "the feature table" if dataset.urn == lineage.table else "upstream"
        for marker in dataset.markers:
            for classification in classify(marker.name):
                severity, why = _pii_exception(lineage, rules, classification, dataset.urn, soft=True)
                message = (
                    f"{classification.value.upper()} on {what} {dataset.urn} as a whole ({marker.urn}): "
                    f"which columns is not said{why}"
                )
                kind = GovernanceKind(classification.value)
                yield GovernanceFinding(kind, severity, None, dataset.urn, None, marker.urn, message)
        if dataset.deprecated:
            note = f": {dataset.deprecation_note}" if dataset.deprecation_note else ""
            message = f"{what} {dataset.urn} is deprecated{note}"
            kind, review = GovernanceKind.DEPRECATED_UPSTREAM, GovernanceSeverity.REVIEW
            yield GovernanceFinding(kind, review, None, dataset.urn, None, None, message)


def _leakage(lineage: TrainingLineage) -> Iterator[GovernanceFinding]:
    label = set(lineage.traced(lineage.label))
    for feature in lineage.features:
        shared = [ref for ref in lineage.traced(feature) if ref in label]
        if shared:
            source = shared[0]  # the nearest
            yield GovernanceFinding(
                GovernanceKind.LINEAGE_LEAKAGE,
                GovernanceSeverity.BLOCK,
                feature,
                source.dataset,
                source.column,
                None,
                f"feature {feature} is made from the same column as the label {lineage.label}: {source} "
                "(DataHub's column lineage)",
            )


def _noted(lineage: TrainingLineage, found: list[GovernanceFinding]) -> list[GovernanceFinding]:
    """Marked fields of the lineage that no trained column traces to."""
    reached = {(f.dataset, f.source_column, f.marker) for f in found}
    noted = []
    for dataset in lineage.datasets:
        for marked in dataset.field_markers:
            if (dataset.urn, marked.field, marked.marker.urn) in reached:
                continue
            for classification in classify(marked.marker.name):
                message = (
                    f"{classification.value.upper()} in the lineage on a column the model does not train on: "
                    f"{marked.marker.urn} on column {marked.field} of {dataset.urn}"
                )
                kind = GovernanceKind(classification.value)
                noted.append(
                    GovernanceFinding(
                        kind, GovernanceSeverity.NOTED, None, dataset.urn, marked.field, marked.marker.urn, message
                    )
                )
    return noted


def _escalated(finding: GovernanceFinding, rules: GovernanceRules) -> GovernanceFinding:
    if finding.severity is GovernanceSeverity.REVIEW and finding.kind in rules.escalate:
        message = f"{finding.message} (a block by the spec's governance.escalate)"
        return replace(finding, severity=GovernanceSeverity.BLOCK, message=message)
    return finding
