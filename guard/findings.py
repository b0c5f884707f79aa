"""Findings and the guard report: evidence, not prose.

The rows a finding concerns are a typed value, `Finding.rows` (a `RowSelector`), never a free `params` key. A
finding about some rows only (the newest batch of a table, a unit changed since a release) names them by a time
window of the batch, so a heal can act on those rows only and leave the rest exactly as they are: the rows whose
`RowSelector.column` lies in (after_ms, through_ms], in UTC epoch milliseconds, as `profiles.profile.TimeWindow` cuts
a batch. Either bound may be None (unbounded). `rows` None: every row of the table. A selector may also name rows
outside the window one by one (`also`: `NamedRow(at_ms, key)`, see `remediations.rows`): the rows a batch written
hours early carried into the batch before it. `window_rows(ctx)` gives the window the snapshot was read with.
Playbooks read it through `remediations.rows.selected_rows`; a selector they cannot apply (an unknown column, a
column that is not a timestamp) refuses the heal, never widens it. `params` is evidence for people.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from enum import Enum
from typing import TYPE_CHECKING, Any, Mapping

from guard.kinds import DEFAULT_SEVERITY, FindingKind, Severity
from guard.policy import Policy

if TYPE_CHECKING:
    from profiles.profile import TimeWindow

__all__ = [
    "CheckOutcome",
    "ClosestCall",
    "Condition",
    "Finding",
    "GuardReport",
    "NamedRow",
    "RowSelector",
    "Verdict",
    "make_finding",
    "moved_across",
    "rule_calls",
    "window_rows",
]


@dataclass(frozen=True)
class NamedRow:
    """One row outside a selector's window, by its time and its `remediations.rows.row_key`."""

    at_ms: int
    key: str


@dataclass(frozen=True)
class RowSelector:
    """The rows a finding concerns: those whose `column` lies in (after_ms, through_ms], and the rows in `also`."""

    column: str
    after_ms: int | None = None
    through_ms: int | None = None
    also: tuple[NamedRow, ...] = ()

    @classmethod
    def of_window(cls, window: TimeWindow) -> RowSelector:
        return cls(window.column, window.after_ms, window.through_ms)

    @property
    def bounds(self) -> tuple[int | None, int | None]:
        return (self.after_ms, self.through_ms)

    def through(self, later: RowSelector) -> RowSelector:
        """These rows and the `later` ones after them: one window from this one's start to `later`'s end."""
        return replace(self, through_ms=later.through_ms, also=self.also + later.also)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"column": self.column, "after_ms": self.after_ms, "through_ms": self.through_ms}
        if self.also:
            data["also"] = [{"at_ms": row.at_ms, "key": row.key} for row in self.also]
        return data

    @classmethod
    def from_dict(cls, data: Any) -> RowSelector:
        """A selector read back from JSON; a malformed one is a ValueError naming what was wrong."""
        if (
            not isinstance(data, Mapping)
            or not isinstance(data.get("column"), str)
            or not set(data) <= {"column", "after_ms", "through_ms", "also"}
        ):
            raise ValueError(f"a finding's rows are {data!r}, not {{'column': TIME_COLUMN, 'after_ms': X, ...}}")
        bounds = [data.get("after_ms"), data.get("through_ms")]
        if any(b is not None and (isinstance(b, bool) or not isinstance(b, int)) for b in bounds):
            raise ValueError(f"a finding's row window {bounds!r} is not epoch milliseconds")
        also = data.get("also") or []
        if not isinstance(also, list) or not all(
            isinstance(r, Mapping) and isinstance(r.get("at_ms"), int) and isinstance(r.get("key"), str) for r in also
        ):
            raise ValueError(f"a finding's named rows {also!r} are not [{{'at_ms': T, 'key': K}}, ...]")
        return cls(data["column"], bounds[0], bounds[1], tuple(NamedRow(int(r["at_ms"]), str(r["key"])) for r in also))


def window_rows(ctx: Any) -> RowSelector | None:
    """The rows of a finding about the snapshot's rows: the window it was read with, or None (every row). Takes a
    `guard.context.GuardContext`."""
    window = getattr(ctx.snapshot, "window", None) if ctx.snapshot is not None else None
    return RowSelector.of_window(window) if window is not None else None


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
    params: dict[str, Any] = field(default_factory=dict)  # evidence for people, never instructions for code
    check: str = ""  # the registered check that found it ("" for the runner's own preconditions)
    rows: RowSelector | None = None  # the rows it concerns; None: every row of the table

    @property
    def key(self) -> tuple[str, str, str]:
        """The identity of a failure: (dataset, kind, column). Incidents are keyed on it."""
        return (self.dataset, self.kind.value, self.column or "")

    def with_rows(self, rows: RowSelector | None) -> Finding:
        return replace(self, rows=rows)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["kind"] = self.kind.value
        data["severity"] = self.severity.value
        data["rows"] = self.rows.to_dict() if self.rows is not None else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        """A finding read back; records written before rows were typed kept them in `params["rows"]`."""
        params = dict(data.get("params") or {})
        legacy = params.pop("rows", None) if isinstance(params.get("rows"), Mapping) else None
        rows = data.get("rows") if data.get("rows") is not None else legacy
        return cls(
            **{
                **data,
                "kind": FindingKind(data["kind"]),
                "severity": Severity(data["severity"]),
                "params": params,
                "rows": RowSelector.from_dict(rows) if rows is not None else None,
            }
        )


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
    rows: RowSelector | None = None,
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
        rows=rows,
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
class ClosestCall:
    """How near one threshold of `guard.policy` came to a block on this batch, recorded whether it crossed or not:
    the statistic a check compared with the policy field `threshold`, on `column` (None: the whole batch), in the
    field's own terms (a distance in band widths, a share of rows, a factor). `limit` is the value it was compared
    with; `above`: a statistic above the limit crosses it (False: one below it does). `decides`: the rule's other
    conditions held on this batch, so crossing this limit alone blocks it (False: crossing it would not, or the
    check's verdict on the column came from something else, a named cause). Evidence for measuring the policy
    (`benchmarks/policy_lodo.py`), never an input to a verdict."""

    threshold: str
    column: str | None
    statistic: float
    limit: float
    above: bool = True
    decides: bool = True
    check: str = ""  # the registered check that compared it (set by the runner)

    @property
    def crossed(self) -> bool:
        return self.statistic > self.limit if self.above else self.statistic < self.limit

    @property
    def closeness(self) -> float:
        """The statistic relative to its limit, so that 1 is the limit and more is across it."""
        high, low = (self.statistic, self.limit) if self.above else (self.limit, self.statistic)
        if low == 0:
            return math.inf if high > 0 else 1.0
        return high / low

    def to_dict(self) -> dict[str, Any]:
        return _finite(asdict(self))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClosestCall:
        """A closest call read back; a non-finite statistic was written as its name ("inf")."""
        return cls(**{**data, "statistic": float(data["statistic"]), "limit": float(data["limit"])})


@dataclass(frozen=True)
class Condition:
    """One comparison of a rule with a policy field, as the rule makes it: the statistic in the field's terms, the
    field's value, its direction (`above`: a statistic above the limit is across it), and whether it holds as the
    rule compares it (`holds`: at or across the limit, where the rule counts the limit itself as across)."""

    threshold: str
    statistic: float
    limit: float
    holds: bool
    above: bool = True


def rule_calls(column: str | None, *conditions: Condition, when: bool = True) -> list[ClosestCall]:
    """The closest calls of a rule that blocks where all its `conditions` hold and `when` (what it asks that is no
    policy field's): each deciding where every other condition, and `when`, held on this batch."""
    return [
        ClosestCall(
            c.threshold,
            column,
            c.statistic,
            c.limit,
            c.above,
            decides=when and all(o.holds for o in conditions if o is not c),
        )
        for c in conditions
    ]


def moved_across(policy: Policy, field: str, statistic: float, above: bool, index: int | None = None) -> Policy:
    """`policy` with one threshold (or one end of a pair of them, `index`) just across `statistic`: what a rule
    judges where crossing that threshold alone is asked of it (`above`: a statistic above the limit is across)."""
    across = math.nextafter(statistic, -math.inf if above else math.inf)
    if index is None:
        changes: dict[str, Any] = {field: across}
    else:
        ends = list(getattr(policy, field))
        ends[index] = across
        changes = {field: tuple(ends)}
    return replace(policy, **changes)


@dataclass(frozen=True)
class GuardReport:
    """The guard's findings, the checks that ran (`outcomes`) and how near each measured threshold came to a block
    (`closest_calls`, nearest first)."""

    dataset: str
    findings: tuple[Finding, ...]
    outcomes: tuple[CheckOutcome, ...] = ()
    closest_calls: tuple[ClosestCall, ...] = ()

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
            "closest_calls": [c.to_dict() for c in self.closest_calls],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GuardReport:
        return cls(
            dataset=data["dataset"],
            findings=tuple(Finding.from_dict(f) for f in data["findings"]),
            outcomes=tuple(CheckOutcome(**o) for o in data.get("outcomes", [])),
            closest_calls=tuple(ClosestCall.from_dict(c) for c in data.get("closest_calls", [])),
        )
