"""A whole table whose time column moved by a number of hours, pinned by the rows that passed earlier.

The guard reads a shift of hourly data from the hour-of-day profile within an hour only (`guard.checks.timeshift`),
and a table shifted whole carries the rows at each kept batch's edge into its neighbour, or before the first one
(rows no batch holds). Neither can be healed on a guess. But the kept batches say exactly where their rows went:
shifted by the right s hours, every kept batch's window holds exactly the rows that passed in it (the
fingerprint of `profiles.fingerprints`, times moved by s), and no row is left outside every window. An hour
off, the windows cut other rows. That is evidence for the whole table at once, so the shift findings of every
batch (and the rows no batch held, `history_changed` on the time column) are replaced by one finding over every
row, pinned, with the playbook that shifts it back. So is every other finding on the rows that passed earlier: each
kept batch holds exactly its kept rows once moved back, so whatever its rows as they are now showed (a batch whose
own check saw no shift in a day of broad hours and says it "changed in a way no check names", a category the day
it came from had not held) is the shift.

Only a table that moved whole is pinned: the new rows must be found shifted too (a finding of their own within an
hour of s), and every kept batch must match. Anything less is left as the guard found it. It lives in the control
plane, not the guard, because it reads the table itself (one fingerprint pass per candidate shift, at most three).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.statistics import signed
from profiles.fingerprints import Fingerprint, fingerprint_of_profile, fingerprint_windows
from profiles.profile import BatchProfile, TimeWindow

__all__ = ["pin_table_shift", "pinned_shift", "shifts_only", "finding_window", "moved_window"]

_HOUR_MS = 3_600_000


def pin_table_shift(
    findings: tuple[Finding, ...], table: Path, kept: Sequence[BatchProfile], new_rows: TimeWindow
) -> tuple[Finding, ...]:
    """The findings with a whole-table shift of `new_rows.column` pinned by the kept batches, when there is one."""
    column = new_rows.column
    shifts = [f for f in findings if shifts_only(f, column)]
    new = [f for f in shifts if _reaches_new_rows(f, new_rows)]
    windows = [b.window for b in kept]
    if not new or not kept or any(w is None or w.column != column for w in windows):
        return findings
    candidates = {signed(f.params["offset_hours"] + d) for f in new for d in (-1, 0, 1)}
    pinned = [
        (s, prints)
        for s in sorted(c for c in candidates if abs(c) >= POLICY.min_shift_hours)
        if (prints := _kept_rows_at(table, kept, new_rows, s)) is not None
    ]
    if len(pinned) != 1:
        return findings
    hours, prints = pinned[0]
    first = min((p.columns[column]["min"] for p in prints if "min" in p.columns.get(column, {})), default=None)
    if first is None:
        return findings
    kept_rows = (windows[0].after_ms if windows[0] is not None else None, new_rows.after_ms)
    explained = {id(f) for f in shifts} | {id(f) for f in findings if _unguarded(f, column) or _on(f, *kept_rows)}
    return (*(f for f in findings if id(f) not in explained), _finding(findings[0].dataset, column, hours, first, kept))


def shifts_only(finding: Finding, column: str) -> bool:
    """A timestamp_shift that moves `column` alone (no other timestamp, no hour column)."""
    return (
        finding.kind is FindingKind.TIMESTAMP_SHIFT
        and finding.params.get("offset_hours") is not None
        and set(finding.params.get("shifts_hours") or {}) == {column}
        and not finding.params.get("hour_columns")
    )


def _reaches_new_rows(finding: Finding, new_rows: TimeWindow) -> bool:
    """The finding's rows run through the new rows: the new batch's own, or kept batches' joined with it."""
    window = finding_window(finding)
    if window is None or window[1] is not None:
        return False
    return window[0] is None or new_rows.after_ms is None or window[0] <= new_rows.after_ms


def finding_window(finding: Finding) -> tuple[int | None, int | None] | None:
    return finding.rows.bounds if finding.rows is not None else None


def _unguarded(finding: Finding, column: str) -> bool:
    """The rows that lie in no kept batch (`controlplane.stages.guarding`): a shift carries the first batch's edge out."""
    return (
        finding.kind is FindingKind.HISTORY_CHANGED and finding.column == column and "unguarded_rows" in finding.params
    )


def _on(finding: Finding, after: int | None, through: int | None) -> bool:
    """The finding concerns rows that passed earlier only: its window lies in the kept batches' (after, through]."""
    window = finding_window(finding)
    if window is None or through is None:
        return False
    low, high = window
    return isinstance(high, int) and high <= through and (after is None or (isinstance(low, int) and low >= after))


def _kept_rows_at(
    table: Path, kept: Sequence[BatchProfile], new_rows: TimeWindow, hours: int
) -> list[Fingerprint] | None:
    """The fingerprints of the kept windows moved by `hours` when each holds exactly its kept rows (times moved
    by as much) and every row of the table lies in one of them or after them; else None."""
    column = new_rows.column
    moved = [moved_window(b.window, hours) for b in kept if b.window is not None] + [moved_window(new_rows, hours)]
    prints, outside = fingerprint_windows(table, moved)
    if outside:
        return None
    for batch, found in zip(kept, prints):
        expected = fingerprint_of_profile(batch.profile)
        times = expected.columns.get(column, {})
        expected.columns[column] = {k: v + hours * _HOUR_MS if k in ("min", "max") else v for k, v in times.items()}
        if not found.matches(expected):
            return None
    return prints[: len(kept)]


def moved_window(window: TimeWindow, hours: int) -> TimeWindow:
    step = hours * _HOUR_MS
    return replace(
        window,
        after_ms=None if window.after_ms is None else window.after_ms + step,
        through_ms=None if window.through_ms is None else window.through_ms + step,
    )


def _finding(dataset: str, column: str, hours: int, first_ms: float, kept: Sequence[BatchProfile]) -> Finding:
    return pinned_shift(
        dataset,
        column,
        hours,
        int(first_ms),
        f"the whole table's {column!r} moved by {hours:+d} h: each of the {len(kept)} batches that passed "
        f"holds exactly its kept rows {abs(hours)} h {'earlier' if hours < 0 else 'later'} than it did, and no row "
        "lies outside them (a timezone written as UTC?). Healed by shifting every row back.",
        pinned_by="kept_batches",
        kept_batches=len(kept),
    )


def pinned_shift(dataset: str, column: str, hours: int, first_ms: int, message: str, **evidence: Any) -> Finding:
    """A timestamp_shift of `column` alone, pinned to the hour by the kept batches, with the playbook that shifts it
    back; `first_ms` is the earliest time of its rows as the guard saw them."""
    return make_finding(
        FindingKind.TIMESTAMP_SHIFT,
        dataset,
        column,
        observed={"offset_hours": hours},
        expected={"offset_hours": 0},
        playbook="shift_timestamps",
        offset_hours=hours,
        shifts_hours={column: hours},
        hour_columns={},
        observed_min_ms={column: first_ms},
        ambiguous=False,
        pinned=True,
        message=message,
        **evidence,
    )
