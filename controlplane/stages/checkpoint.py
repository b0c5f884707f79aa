"""Typed checkpoints: where a paused run waits, and the facts it had when it paused.

Saved in `run.json`; `approve` resumes from one by reading the current state again and deciding anew, so a
checkpoint is what the run knew, never what the resumed run must believe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from controlplane.datahub.incidents import IncidentRef
from controlplane.errors import RunStateError
from controlplane.runs.journal import RunRecord
from controlplane.stages.heal import Healed
from controlplane.stages.pin import Pinned
from controlplane.stages.train import Trained
from controlplane.vocab import Gate
from profiles.records import Record

__all__ = [
    "PublishCheckpoint",
    "PromoteCheckpoint",
    "RollbackCheckpoint",
    "Checkpoint",
    "save_checkpoint",
    "load_checkpoint",
]


@dataclass(frozen=True)
class PublishCheckpoint(Record):
    """Paused before publishing a verified heal."""

    pinned: Pinned
    healed: Healed
    incidents: tuple[IncidentRef, ...]
    detect_report: dict[str, Any]
    gate: Gate = Gate.PUBLISH


@dataclass(frozen=True)
class PromoteCheckpoint(Record):
    """Paused before moving the champion alias: a registered candidate and the gate's verdict when it paused."""

    trained: Trained
    verdict: str
    reasons: tuple[str, ...]
    gate: Gate = Gate.PROMOTE
    passport_draft: dict[str, Any] = field(default_factory=dict)  # unsigned: what approving would sign (for people)


@dataclass(frozen=True)
class RollbackCheckpoint(Record):
    """A rollback of an unsafe champion proposed by `kintsugi watch` (policy ratify), waiting for `approve`."""

    from_version: int
    to_version: int
    causes: tuple[str, ...]
    gate: Gate = Gate.ROLLBACK


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
