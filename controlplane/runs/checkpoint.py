"""Typed checkpoints: where a paused run waits, and the facts it had when it paused.

Saved in `run.json`; `approve` resumes from one by reading the current state again and deciding anew, so a
checkpoint is what the run knew, never what the resumed run must believe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from controlplane.datahub.incidents import IncidentRef
from controlplane.errors import RunStateError
from controlplane.runs.journal import RunRecord
from controlplane.stages.heal import Healed
from controlplane.stages.pin import Pinned
from controlplane.stages.train import Trained
from controlplane.vocab import Gate

__all__ = [
    "PublishCheckpoint",
    "PromoteCheckpoint",
    "RollbackCheckpoint",
    "Checkpoint",
    "save_checkpoint",
    "load_checkpoint",
]


@dataclass(frozen=True)
class PublishCheckpoint:
    """Paused before publishing a verified heal."""

    pinned: Pinned
    healed: Healed
    incidents: tuple[IncidentRef, ...]
    detect_report: dict[str, Any]
    gate: Gate = Gate.PUBLISH

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate.value,
            "pinned": self.pinned.to_dict(),
            "healed": self.healed.to_dict(),
            "incidents": [r.to_dict() for r in self.incidents],
            "detect_report": self.detect_report,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PublishCheckpoint:
        return cls(
            Pinned.from_dict(data["pinned"]),
            Healed.from_dict(data["healed"]),
            tuple(IncidentRef.from_dict(r) for r in data["incidents"]),
            data["detect_report"],
        )


@dataclass(frozen=True)
class PromoteCheckpoint:
    """Paused before moving the champion alias: a registered candidate and the gate's verdict when it paused."""

    trained: Trained
    verdict: str
    reasons: tuple[str, ...]
    gate: Gate = Gate.PROMOTE

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate.value,
            "trained": self.trained.to_dict(),
            "verdict": self.verdict,
            "reasons": list(self.reasons),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PromoteCheckpoint:
        return cls(Trained.from_dict(data["trained"]), data["verdict"], tuple(data["reasons"]))


@dataclass(frozen=True)
class RollbackCheckpoint:
    """A rollback of an unsafe champion proposed by `kintsugi watch` (policy ratify), waiting for `approve`."""

    from_version: int
    to_version: int
    causes: tuple[str, ...]
    gate: Gate = Gate.ROLLBACK

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": self.gate.value,
            "from_version": self.from_version,
            "to_version": self.to_version,
            "causes": list(self.causes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RollbackCheckpoint:
        return cls(int(data["from_version"]), int(data["to_version"]), tuple(data["causes"]))


Checkpoint = Union[PublishCheckpoint, PromoteCheckpoint, RollbackCheckpoint]


def save_checkpoint(record: RunRecord, checkpoint: Checkpoint | None) -> None:
    record.checkpoint = None if checkpoint is None else checkpoint.to_dict()


def load_checkpoint(record: RunRecord) -> Checkpoint:
    data = record.checkpoint or {}
    try:
        if data.get("gate") == Gate.PUBLISH.value:
            return PublishCheckpoint.from_dict(data)
        if data.get("gate") == Gate.PROMOTE.value:
            return PromoteCheckpoint.from_dict(data)
        if data.get("gate") == Gate.ROLLBACK.value:
            return RollbackCheckpoint.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise RunStateError(
            f"run {record.run_id}'s checkpoint is unreadable ({type(exc).__name__}: {exc})",
            f"reject it with `kintsugi reject {record.run_id} --reason ...` and run again",
        ) from exc
    raise RunStateError(
        f"run {record.run_id} has no checkpoint to resume from",
        "only a run paused at a gate can be approved or rejected; see `kintsugi runs`",
    )
