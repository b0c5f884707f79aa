"""The allowlist: playbooks keyed by name, each declaring the finding kinds it heals and its limits."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pandas as pd

from guard.contract import Contract
from guard.findings import Finding
from guard.kinds import FindingKind
from guard.profile import DatasetProfile

__all__ = ["HealInput", "HealStep", "Playbook", "PlaybookRefused", "PLAYBOOKS", "register", "playbook_for"]


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


@dataclass(frozen=True)
class HealInput:
    table: pd.DataFrame
    finding: Finding
    contract: Contract
    reference: DatasetProfile | None


Transform = Callable[[HealInput], tuple[pd.DataFrame, HealStep]]


@dataclass(frozen=True)
class Playbook:
    name: str
    heals: frozenset[FindingKind]
    apply: Transform
    max_fraction_touched: float = 1.0
    description: str = ""
    limits: dict[str, Any] = field(default_factory=dict)


PLAYBOOKS: dict[str, Playbook] = {}


def register(name: str, heals: set[FindingKind], *, max_fraction_touched: float = 1.0,
             description: str = "") -> Callable[[Transform], Transform]:
    def decorate(fn: Transform) -> Transform:
        if name in PLAYBOOKS:
            raise ValueError(f"playbook {name!r} is already registered")
        PLAYBOOKS[name] = Playbook(name, frozenset(heals), fn, max_fraction_touched, description)
        return fn

    return decorate


def playbook_for(finding: Finding) -> Playbook | None:
    """The allowlisted playbook named by a finding, if it really heals that kind (once `remediations.playbooks`
    has registered them: the sandbox imports it)."""
    playbook = PLAYBOOKS.get(finding.playbook or "")
    return playbook if playbook is not None and finding.kind in playbook.heals else None
