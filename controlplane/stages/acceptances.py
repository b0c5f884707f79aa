"""The blocks a person accepted as the new normal, kept per pipeline next to its reference.

`kintsugi accept RUN_ID --finding KIND:COLUMN --reason TEXT` on a run the guard blocked keeps the run's batch in
the reference (`controlplane.stages.kept_reference`) and records here who accepted which finding and why
(`references/<pipeline>/acceptances.json`, oldest first). An acceptance taken back is marked withdrawn, with who
and why, and stays on the record. The passport of the next champion names the acceptances in force that the
previous champion's passport did not (`in_force_since`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

from controlplane.errors import WorkspaceError
from controlplane.stages.kept_reference import state_path
from controlplane.workspace import Workspace
from guard.kinds import FindingKind
from profiles.records import Record, RecordError

__all__ = ["Acceptance", "Withdrawal", "acceptances_path", "load_acceptances", "save_acceptances", "in_force_since"]


@dataclass(frozen=True)
class Withdrawal(Record):
    by: str
    reason: str
    at_ms: int


@dataclass(frozen=True)
class Acceptance(Record):
    """A person's word that a blocking finding of a run is not a failure of the data but its new normal."""

    run_id: str
    kind: FindingKind
    column: str  # "" for a finding about the whole dataset
    by: str
    reason: str
    at_ms: int
    batch: str  # the id of the batch it let into the reference
    incident: str = ""  # the DataHub incident the block raised, resolved by the acceptance (reopened if withdrawn)
    withdrawn: Withdrawal | None = None

    @property
    def finding(self) -> str:
        """KIND:COLUMN, as `--finding` names it."""
        return f"{self.kind.value}:{self.column}"

    @property
    def in_force(self) -> bool:
        return self.withdrawn is None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.run_id, self.kind.value, self.column, self.batch)

    def withdraw(self, by: str, reason: str, at_ms: int) -> Acceptance:
        return replace(self, withdrawn=Withdrawal(by, reason, at_ms))


def acceptances_path(ws: Workspace, pipeline: str) -> Path:
    return state_path(ws, pipeline).with_name("acceptances.json")


def load_acceptances(ws: Workspace, pipeline: str) -> tuple[Acceptance, ...]:
    """Every acceptance of the pipeline, oldest first (none when it never had one)."""
    path = acceptances_path(ws, pipeline)
    if not path.is_file():
        return ()
    try:
        data = json.loads(path.read_text())
        return tuple(Acceptance.from_dict(a) for a in data["acceptances"])
    except (ValueError, KeyError, TypeError, RecordError) as exc:
        raise WorkspaceError(
            f"the acceptances {ws.rel(path)} are unreadable ({exc})",
            "restore the workspace's references/ folder from a backup",
        ) from exc


def save_acceptances(ws: Workspace, pipeline: str, acceptances: Iterable[Acceptance]) -> None:
    path = acceptances_path(ws, pipeline)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({"acceptances": [a.to_dict() for a in acceptances]}, indent=2, sort_keys=True))
    os.replace(temporary, path)


def in_force_since(
    acceptances: Iterable[Acceptance], previous_passport: Mapping[str, Any] | None
) -> tuple[Acceptance, ...]:
    """The acceptances in force that the previous champion's passport body did not name (all of them when there
    is no previous passport, or it predates acceptances)."""
    named = {
        (a.get("run_id"), a.get("kind"), a.get("column"), a.get("batch"))
        for a in (previous_passport or {}).get("acceptances", [])
        if isinstance(a, Mapping)
    }
    return tuple(a for a in acceptances if a.in_force and a.key not in named)
