"""Findings and the guard report: evidence, not prose.

The rows a finding concerns (`params["rows"]`). A finding about some rows only (the newest batch of a
table, a unit changed since a release) names them by a time window of the batch, so a heal can act on those
rows only and leave the rest exactly as they are:

    params["rows"] = {"column": TIME_COLUMN, "after_ms": X, "through_ms": Y}

the rows whose TIME_COLUMN lies in (X, Y]: after X, up to and including Y, in UTC epoch milliseconds, as
`guard.profile.TimeWindow` cuts a batch (`TimeWindow.to_dict()` is this dict). Either bound may be None
(unbounded). Absent or None: every row of the table. It may also name rows outside the window one by one
(`"also": [{"at_ms": T, "key": K}, ...]`, see `remediations.rows`): the rows a batch written hours early carried
into the batch before it. `window_rows(ctx)` gives the window the snapshot was read with. Playbooks read it through `remediations.rows.selected_rows`; a selector they cannot read (an
unknown column, a column that is not a timestamp, a malformed dict) refuses the heal, never widens it.
Other row counts in params use other names (`estimated_rows`, `rows_swapped`...).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from guard.kinds import DEFAULT_SEVERITY, FindingKind, Severity

__all__ = ["CheckOutcome", "Finding", "GuardReport", "Verdict", "make_finding", "window_rows"]


def window_rows(ctx: Any) -> dict[str, Any] | None:
    """The `params["rows"]` of a finding about the snapshot's rows: the window it was read with, or None (every
    row). Takes a `guard.context.GuardContext`."""
    window = getattr(ctx.snapshot, "window", None) if ctx.snapshot is not None else None
    return window.to_dict() if window is not None else None


class Verdict(str, Enum):
    CLEAN = "CLEAN"
    BLOCKED = "BLOCKED"


@dataclass(frozen=True)
class Finding:
    """One failed check: what was looked at, what was seen, what was expected."""

    kind: FindingKind
    dataset: str
    column: str | None
    severity: Severity
    observed: Any
    expected: Any
    message: str
    playbook: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    check: str = ""  # the registered check that found it ("" for the runner's own preconditions)

    @property
    def key(self) -> tuple[str, str, str]:
        """The identity of a failure: (dataset, kind, column). Incidents are keyed on it."""
        return (self.dataset, self.kind.value, self.column or "")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = self.kind.value
        data["severity"] = self.severity.value
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        return cls(**{**data, "kind": FindingKind(data["kind"]), "severity": Severity(data["severity"])})


def make_finding(
    kind: FindingKind,
    dataset: str,
    column: str | None,
    *,
    observed: Any,
    expected: Any,
    message: str,
    playbook: str | None = None,
    severity: Severity | None = None,
    **params: Any,
) -> Finding:
    """Build a finding with the kind's default severity unless one is given. Evidence is JSON: a non-finite
    number (a jump from a reference of one batch) is written as its name, "inf" or "nan"."""
    return Finding(
        kind=kind,
        dataset=dataset,
        column=column,
        severity=severity or DEFAULT_SEVERITY[kind],
        observed=_finite(observed),
        expected=_finite(expected),
        message=message,
        playbook=playbook,
        params=_finite(dict(params)),
    )


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_finite(v) for v in value)
    return value


@dataclass(frozen=True)
class CheckOutcome:
    """Which check ran on which column, and whether it failed: the assertion history."""

    check: str
    column: str | None
    passed: bool
    observed: Any = None


@dataclass(frozen=True)
class GuardReport:
    dataset: str
    findings: tuple[Finding, ...]
    outcomes: tuple[CheckOutcome, ...] = ()

    @property
    def verdict(self) -> Verdict:
        blocked = any(f.severity is Severity.BLOCK for f in self.findings)
        return Verdict.BLOCKED if blocked else Verdict.CLEAN

    @property
    def blocking(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.BLOCK)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.WARN)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "verdict": self.verdict.value,
            "findings": [f.to_dict() for f in self.findings],
            "outcomes": [asdict(o) for o in self.outcomes],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GuardReport:
        return cls(
            dataset=data["dataset"],
            findings=tuple(Finding.from_dict(f) for f in data["findings"]),
            outcomes=tuple(CheckOutcome(**o) for o in data.get("outcomes", [])),
        )
