"""What a run record carries for later commands beside its timeline: typed, one value per concern. Light on
purpose (the CLI's startup reads run records): the pinned table is made and checked in `controlplane.stages.pin`.

Records written before these were typed kept them in one free `facts` dict; `lift_facts` reads that shape, so a
workspace on disk (and `kintsugi recover` on it) reads as it did.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane.workspace import Workspace
from profiles.records import Record

__all__ = ["Pinned", "Impact", "Rollback", "lift_facts"]

# facts kept under the same name as the typed field that holds them now
_SAME_NAME = (
    "pinned",
    "incidents",
    "memory",
    "published_hash",
    "resolved",
    "impact",
    "version",
    "postmortems",
    "dataset",
    "batch",
)


@dataclass(frozen=True)
class Pinned(Record):
    """A run's immutable view of its table."""

    table: str  # workspace-relative: the one parquet file every stage reads
    table_hash: str  # sha256 of that file's bytes
    content_hash: str  # the location's content hash when pinned (what publishing compares and swaps)
    location: str  # as the spec names it
    snapshot: str = ""  # the table format's own name of the version pinned ("delta version 3"); "" for files

    def path(self, ws: Workspace) -> Path:
        return ws.path(self.table)


@dataclass(frozen=True)
class Impact:
    """The heal's impact, measured in the run that healed (`controlplane.stages.impact`): the holdout metric of a
    model trained on the poisoned bytes next to the candidate's; `error` says why the poisoned one was not scored."""

    metric: str
    healed: float | None
    poisoned: float | None = None
    holdout_rows: int | None = None
    version: int | None = None
    error: str | None = None

    @property
    def measured(self) -> bool:
        return self.poisoned is not None


@dataclass(frozen=True)
class Rollback:
    """What a rollback record moves: the champion from one version to another (None: none left), and why."""

    from_version: int
    to_version: int | None
    causes: tuple[str, ...] = ()


def lift_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """The typed fields of a record written with a free `facts` dict (its JSON shape, as `RunRecord.from_dict`
    reads it): `kind` or `command` became `kind`, the rollback's versions and causes one `rollback`."""
    lifted: dict[str, Any] = {"kind": facts.get("kind") or facts.get("command") or "run"}
    for name in _SAME_NAME:
        if facts.get(name) is not None:
            lifted[name] = facts[name]
    if "from_version" in facts:
        lifted["rollback"] = {k: facts.get(k) for k in ("from_version", "to_version", "causes") if k in facts}
    return lifted
