"""The allowlist: playbooks keyed by name, each declaring the finding kinds it heals and its limits.

Two sorts of playbook, neither of which ever writes an invented value:

- a correction (`Transform`) returns the table with an exact, invertible correction applied (rename,
  cast, casing, shift, swap, rescale, dedupe) and its `HealStep`;
- a quarantine (`Quarantine`, registered with `quarantines=True`) returns the table unchanged in spirit:
  only a boolean mask of the rows it cannot correct (nulls from a broken join, sentinels) and its step.
  The sandbox keeps those rows in the published table as they are, lists them beside it and leaves them
  out of the training view (`remediations.sandbox`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from guard.contract import Contract
from guard.findings import Finding
from guard.kinds import FindingKind
from profiles.profile import DatasetProfile

__all__ = ["HealInput", "HealStep", "Playbook", "PlaybookRefused", "PLAYBOOKS", "ALIASES", "register", "playbook_for"]


class PlaybookRefused(Exception):
    """A playbook would exceed its safety limit, or cannot act on this table; the message says why."""


@dataclass(frozen=True)
class HealStep:
    """What one playbook did: evidence for the incident's heal notes."""

    playbook: str
    finding_kind: str
    column: str | None
    params: dict[str, Any]
    rows_touched: int
    rows_dropped: int = 0
    rows_quarantined: int = 0  # rows left as they are in the published table and out of the training view


@dataclass(frozen=True)
class HealInput:
    table: pd.DataFrame
    finding: Finding
    contract: Contract
    reference: DatasetProfile | None


Transform = Callable[[HealInput], tuple[pd.DataFrame, HealStep]]
Quarantine = Callable[[HealInput], tuple[np.ndarray, HealStep]]


@dataclass(frozen=True)
class Playbook:
    name: str
    heals: frozenset[FindingKind]
    apply: Callable[[HealInput], tuple[Any, HealStep]]  # a Transform, or a Quarantine when `quarantines`
    max_fraction_touched: float = 1.0
    description: str = ""
    limits: dict[str, Any] = field(default_factory=dict)
    quarantines: bool = False
    # the finding's params that instruct this playbook (the rest are evidence for people): two findings of one
    # kind on one column whose plans are equal are one failure, and their rows can be healed as one
    plan: tuple[str, ...] = ()

    def plan_of(self, finding: Finding) -> dict[str, Any]:
        return {key: finding.params.get(key) for key in self.plan}


PLAYBOOKS: dict[str, Playbook] = {}
# names findings may still carry for a playbook that was renamed: null_impute filled nulls with invented
# values; the rows it was given are now quarantined instead
ALIASES = {"null_impute": "quarantine_rows"}


def register(
    name: str,
    heals: set[FindingKind],
    *,
    max_fraction_touched: float = 1.0,
    description: str = "",
    quarantines: bool = False,
    plan: tuple[str, ...] = (),
) -> Callable[[Any], Any]:
    def decorate(fn: Any) -> Any:
        if name in PLAYBOOKS:
            raise ValueError(f"playbook {name!r} is already registered")
        PLAYBOOKS[name] = Playbook(
            name, frozenset(heals), fn, max_fraction_touched, description, quarantines=quarantines, plan=plan
        )
        return fn

    return decorate


def playbook_for(finding: Finding) -> Playbook | None:
    """The allowlisted playbook named by a finding, if it really heals that kind (once `remediations.playbooks`
    has registered them: the sandbox imports it)."""
    name = finding.playbook or ""
    playbook = PLAYBOOKS.get(ALIASES.get(name, name))
    return playbook if playbook is not None and finding.kind in playbook.heals else None
