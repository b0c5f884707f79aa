"""What a stage returns instead of its result when the run cannot go on: the stage, the one line the run ends
with, and the evidence for people. Only the story (`controlplane.pipeline`) ends a run."""

from __future__ import annotations

from dataclasses import dataclass

from controlplane.vocab import Stage

__all__ = ["Blocked"]


@dataclass(frozen=True)
class Blocked:
    stage: Stage
    reason: str  # the run's outcome: "BLOCKED: ... (incident stays open)"
