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
from datetime import datetime, timezone
from typing import Any, Callable, Iterable

import numpy as np
import pandas as pd

from guard.contract import Contract
from guard.findings import Finding
from guard.kinds import FindingKind
from profiles.profile import DatasetProfile

__all__ = [
    "HealInput",
    "HealStep",
    "Playbook",
    "PlaybookRefused",
    "table_column",
    "PLAYBOOKS",
    "ALIASES",
    "register",
    "playbook_for",
]


class PlaybookRefused(Exception):
    """A playbook would exceed its safety limit, or cannot act on this table; the message says why."""


def table_column(columns: Iterable[str], name: str | None, playbook: str) -> str:
    """`name`, a column a finding tells `playbook` to act on, which the table must hold."""
    if name is None or name not in columns:
        raise PlaybookRefused(f"{playbook} found no column {name!r} in the table; re-run the guard")
    return name


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

    def note(self) -> str:
        """One line a person reads: the playbook, the column, the rows it touched, its parameters in words (a unit
        change as `m -> km (/1000)`, epoch milliseconds as UTC times, the rows it concerns by time)."""
        counts = [f"{self.rows_touched} rows changed"]
        counts += [
            f"{n} rows {what}" for n, what in ((self.rows_dropped, "dropped"), (self.rows_quarantined, "set aside"))
        ]
        said = [c for c in counts if not c.startswith("0 ")] or ["no row changed"]
        return f"{self.playbook} on {self.column or 'the table'}: " + "; ".join([*said, *_params_said(self.params)])


def _params_said(params: dict[str, Any]) -> list[str]:
    """A step's parameters as short phrases; nothing said for a parameter that is None or empty."""
    shown = {k: v for k, v in params.items() if v is not None and v != {} and v != []}
    said = []
    if {"from_unit", "to_unit", "scale"} <= set(shown):
        offset = float(shown.pop("offset", 0) or 0)
        scale = float(shown.pop("scale"))
        said.append(
            f"{shown.pop('from_unit')} -> {shown.pop('to_unit')} (/{scale:g}"
            + (f", {-offset:+g}" if offset else "")
            + ")"
        )
    rows = shown.pop("rows", None)
    if isinstance(rows, dict):
        said.append(_rows_said(rows))
    said += [f"{key.removesuffix('_ms')} {_value_said(key, value)}" for key, value in shown.items()]
    return said


def _rows_said(rows: dict[str, Any]) -> str:
    """A `RowSelector` as heal evidence carries it, in words."""
    column, after, through = rows.get("column"), rows.get("after_ms"), rows.get("through_ms")
    bounds = [f"after {_utc(after)}"] if after is not None else []
    bounds += [f"through {_utc(through)}"] if through is not None else []
    said = f"rows with {column} " + " and ".join(bounds) if bounds else f"rows by {column}"
    also = rows.get("also") or []
    return said + (f", and {len(also)} more named one by one" if also else "")


def _value_said(key: str, value: Any) -> str:
    if key.endswith("_ms") and isinstance(value, (int, float)) and not isinstance(value, bool):
        return _utc(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(
            f"{k} {_value_said(str(k), v)}" if not isinstance(v, str) else f"{k} -> {v}" for k, v in value.items()
        )
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _utc(epoch_ms: Any) -> str:
    return datetime.fromtimestamp(int(epoch_ms) / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


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
