"""The governance scan's reads: the training lineage as DataHub classifies it, and the pure scan over it.

Read at the promote gate (`controlplane.stages.train.assess`), so a tag, a term, a domain or a deprecation recorded
in DataHub while a run waits at the gate is judged when it is approved."""

from __future__ import annotations

from typing import Sequence

from controlplane.datahub.classifications import read_classified
from controlplane.datahub.column_lineage import read_column_lineage
from controlplane.datahub.datasets import upstreams_of, walk_upstream
from controlplane.datahub.port import MetadataPort
from controlplane.models.governance import GovernanceFinding, TrainingLineage, scan
from controlplane.spec import PipelineSpec

__all__ = ["lineage_of", "read_training_lineage", "govern"]


def lineage_of(port: MetadataPort, spec: PipelineSpec) -> tuple[str, ...]:
    """The feature table's upstreams, any depth, as DataHub holds them now (`walk_upstream`)."""
    return tuple(node.urn for node in walk_upstream(port, spec.feature_table))


def read_training_lineage(port: MetadataPort, spec: PipelineSpec, lineage: Sequence[str]) -> TrainingLineage:
    """The feature table and its upstreams (`lineage`, as `walk_upstream` found them), each classified, with their
    direct upstreams and column edges."""
    urns = list(dict.fromkeys([spec.feature_table, *lineage]))
    training = spec.training
    return TrainingLineage(
        table=spec.feature_table,
        label=training.target,
        features=tuple(training.features),
        datasets=tuple(read_classified(port, urn) for urn in urns),
        upstreams={urn: upstreams_of(port, urn) for urn in urns},
        edges={urn: read_column_lineage(port, urn) for urn in urns},
    )


def govern(port: MetadataPort, spec: PipelineSpec, lineage: Sequence[str]) -> tuple[GovernanceFinding, ...]:
    return scan(read_training_lineage(port, spec, lineage), spec.governance)
