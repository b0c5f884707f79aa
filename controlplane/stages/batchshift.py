"""A new batch whose time column moved by whole hours: earlier, its first rows carried into the batch before it; or later.

A timezone written as UTC in the new batch alone moves its rows s hours early: those of its first |s| hours land at
or before the watermark, inside the last batch that passed, beside the rows that were there (at the very same times
when the data is hourly). The guard finds the new rows shifted (`guard.checks.timeshift`, from the hour-of-day
profile, often within an hour only) and the batch before them changed (`history_changed`). Neither is healed alone:
shifting the new rows back leaves the carried ones behind, and by their times they cannot be told from the kept ones.

The kept batch's fingerprint (`profiles.fingerprints`: its rows, and per column the nulls, extremes and sums)
tells them apart: of the rows in its last |s| hours, one choice of the extra ones leaves it holding exactly the rows
that passed. A candidate shift (the guard's offset, give or take the hour it could not place) an hour too far may
find the same rows: the times alone cannot tell a batch moved 6 hours whose first hour is missing from one moved 5.
Then the reading taken is the one that starts the new rows one step (the kept rows' own) after the watermark, and
only when every batch that passed began one step after the one before it: the producer is seen to deliver batches
that continue the table's step. When exactly one candidate is left, with exactly one such choice, the shift is
pinned: the new rows' finding and the changed batch's are replaced by one finding over the new rows and the carried
rows, these named one by one (`remediations.rows`: their time and the key of their values), with the playbook that
shifts them back. Anything less is left as the guard found it, blocked: a second choice, a carried row alike a kept
one, a shift no fingerprint pins, rows in no batch, or more than MAX_CHOICES ways to pick.

A batch moved later carries nothing into the past: every kept batch is found as it passed, and no fingerprint can
pin the shift. There the boundaries speak: when every batch that passed began the same gap after the one before it
ended (at least two boundaries), the reading taken is the one that starts the new rows that gap after the last kept
row, if exactly one within an hour of the guard's does. The assumption is the same as the tie rule's above, and it
rests on the same evidence; a late batch whose first hours are also missing would be read an hour too far.
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa

from controlplane.stages.tableshift import finding_window, pinned_shift, shifts_only
from guard.findings import Finding, NamedRow, RowSelector
from guard.policy import DEFAULT as POLICY
from guard.statistics import signed
from profiles.fingerprints import (
    Fingerprint,
    FingerprintCache,
    fingerprint_of_profile,
    fingerprint_rows,
    fingerprint_windows,
    rows_in,
)
from profiles.profile import BatchProfile, TimeWindow
from profiles.profiler import frame_of
from profiles.relations import epoch_ms_of
from remediations.rows import row_key

__all__ = ["pin_batch_shift", "MAX_CHOICES"]

MAX_CHOICES = 5_000  # ways to pick the carried rows among a kept batch's last hours, at most, that are tried
_HOUR_MS = 3_600_000

Carried = list[tuple[int, str]]  # (time in epoch ms, row key) of each row carried into a kept batch


def pin_batch_shift(
    findings: tuple[Finding, ...],
    table: Path,
    kept: Sequence[BatchProfile],
    new_rows: TimeWindow,
    cache: FingerprintCache | None = None,
) -> tuple[Finding, ...]:
    """The findings with a shift of the new rows alone pinned by the kept batch it carried rows into, if there is
    exactly one way to read it. `cache`: the row groups' fingerprints of the kept windows, as the history check
    left them."""
    column, watermark = new_rows.column, new_rows.after_ms
    shifts = [f for f in findings if shifts_only(f, column) and finding_window(f) == (watermark, None)]
    windows = [b.window for b in kept]
    if len(shifts) != 1 or watermark is None or not kept or any(w is None or w.column != column for w in windows):
        return findings
    now, outside = fingerprint_windows(table, [w for w in windows if w is not None], cache, rest=new_rows)
    changed = [b for b, found in zip(kept, now) if not found.matches(fingerprint_of_profile(b.profile))]
    shift = shifts[0]
    if outside:
        return findings
    if not changed:
        return _pin_later(findings, shift, kept, new_rows)
    offset = int(shift.params["offset_hours"])
    spread = (0,) if shift.params.get("pinned") else (-1, 0, 1)
    candidates = sorted({signed(offset + d) for d in spread} & set(range(-11, -POLICY.min_shift_hours + 1)))
    readings = [
        (hours, *reading)
        for hours in candidates
        if (reading := _carried(table, changed, watermark, hours, now[: len(kept)], kept)) is not None
    ]
    found = [(hours, carried) for hours, carried, _ in readings]
    if len(found) > 1:  # readings an hour apart that find the same rows: the one that keeps the table's step
        found = [
            (h, c)
            for h, c, step in readings
            if step is not None
            and _contiguous(kept, column, step)
            and 0 < min(at for at, _ in c) - h * _HOUR_MS - watermark <= step
        ]
    if len(found) != 1:
        return findings
    hours, carried = found[0]
    starts = [b.window.after_ms for b in changed if b.window is not None]
    first = None if None in starts else min(s for s in starts if s is not None)
    explained = {id(shift)} | {id(f) for f in findings if _within(f, first, watermark)}
    return (*(f for f in findings if id(f) not in explained), _finding(shift, new_rows, hours, carried))


def _pin_later(
    findings: tuple[Finding, ...], shift: Finding, kept: Sequence[BatchProfile], new_rows: TimeWindow
) -> tuple[Finding, ...]:
    """A shift of the new rows alone, later, with every kept batch as it passed: nothing was carried, so no
    fingerprint pins it. Of the readings within an hour of the guard's, the one that starts the new rows one gap
    after the last kept row is pinned, when every batch that passed began that same gap after the one before it."""
    column = new_rows.column
    first = (shift.params.get("observed_min_ms") or {}).get(column)
    last = kept[-1].profile.columns.get(column)
    gap = _boundary_gap(kept, column)
    if shift.params.get("pinned") or first is None or last is None or last.maximum is None or gap is None:
        return findings
    offset = int(shift.params["offset_hours"])
    candidates = {signed(offset + d) for d in (-1, 0, 1)} & set(range(POLICY.min_shift_hours, 12))
    found = [hours for hours in sorted(candidates) if first - hours * _HOUR_MS - last.maximum == gap]
    if len(found) != 1:
        return findings
    (hours,) = found
    pinned = pinned_shift(
        shift.dataset,
        column,
        hours,
        int(first),
        f"the new rows' {column!r} moved by {hours:+d} h (a timezone written as UTC?): they begin {hours} h after "
        f"the next row was due, {gap / _HOUR_MS:g} h after the last kept one, as each of the {len(kept)} batches "
        "that passed began after the one before it; no other shift within an hour of the guard's reading does. "
        "Healed by shifting the new rows back.",
        pinned_by="kept_boundaries",
        rows=RowSelector.of_window(new_rows),
    )
    return (*(f for f in findings if f is not shift), pinned)


def _boundary_gap(kept: Sequence[BatchProfile], column: str) -> float | None:
    """The one gap between a batch's last time and the next one's first that every boundary between the batches
    that passed shows (at least two boundaries); None otherwise."""
    times = [b.profile.columns.get(column) for b in kept]
    ends = [(t.minimum, t.maximum) if t is not None else (None, None) for t in times]
    gaps = {
        first - last if first is not None and last is not None else None
        for (_, last), (first, _) in zip(ends[:-1], ends[1:])
    }
    (gap,) = gaps if len(gaps) == 1 else (None,)
    return gap if len(kept) > 2 and gap is not None and gap > 0 else None


def _contiguous(kept: Sequence[BatchProfile], column: str, step: float) -> bool:
    """Each batch that passed began one step after the one before it ended: the producer delivers batches that
    continue the table's step, so a new batch that starts further from the watermark is not read that way."""
    return _boundary_gap(kept, column) == step


def _within(finding: Finding, after: int | None, through: int) -> bool:
    """The finding concerns rows of the changed kept batches only: its window lies in (after, through]."""
    window = finding_window(finding)
    if window is None:
        return False
    low, high = window
    starts_inside = after is None or (isinstance(low, int) and low >= after)
    return isinstance(high, int) and high <= through and starts_inside


def _carried(
    table: Path,
    changed: Sequence[BatchProfile],
    watermark: int,
    hours: int,
    now: Sequence[Fingerprint],
    kept: Sequence[BatchProfile],
) -> tuple[Carried, float | None] | None:
    """The rows carried into the changed batches by a shift of `hours` (< 0): in each, the one choice among its rows
    after watermark + hours whose removal leaves exactly the rows that passed; None when there is not one. With the
    median step between the times of the last batch's rows that stay there (None: fewer than two)."""
    start = watermark + hours * _HOUR_MS
    rows_now = {b.batch_id: found.rows for b, found in zip(kept, now)}
    carried: Carried = []
    step = None
    for batch in changed:
        window = batch.window
        assert window is not None
        if window.through_ms is None or window.through_ms <= start:
            return None  # this batch changed where no carried row can be
        lower = start if window.after_ms is None else max(window.after_ms, start)
        extra = rows_now[batch.batch_id] - batch.profile.row_count
        last_hours = rows_in(table, TimeWindow(window.column, lower, window.through_ms))
        if extra <= 0 or extra > last_hours.num_rows or math.comb(last_hours.num_rows, extra) > MAX_CHOICES:
            return None
        (before,), _ = fingerprint_windows(table, [TimeWindow(window.column, window.after_ms, lower)])
        choice = _one_choice(last_hours, extra, before, fingerprint_of_profile(batch.profile), window.column)
        if choice is None:
            return None
        carried += choice[0]
        step = choice[1]
    return carried, step


def _one_choice(
    rows: pa.Table, extra: int, before: Fingerprint, kept: Fingerprint, column: str
) -> tuple[Carried, float | None] | None:
    """The `extra` rows of `rows` whose removal leaves, with the rows `before` them, the kept fingerprint: when
    exactly one set of values does, and none of them is alike a row that stays. With the median step between the
    distinct times of the rows that stay."""
    frame = frame_of(rows)  # as the sandbox reads them (`profiles.snapshot.read_frame`), so row keys agree
    keys = [row_key(values) for values in frame.to_dict("records")]
    stamps, _ = epoch_ms_of(frame[column])
    everyone = range(rows.num_rows)
    choices: dict[tuple[str, ...], tuple[int, ...]] = {}
    for removed in combinations(everyone, extra):
        staying = [i for i in everyone if i not in removed]
        if before.merged(fingerprint_rows(rows.take(staying))).matches(kept):
            choices[tuple(sorted(keys[i] for i in removed))] = removed
    if len(choices) != 1:
        return None
    (removed,) = choices.values()
    staying = [i for i in everyone if i not in removed]
    if {keys[i] for i in removed} & {keys[i] for i in staying}:
        return None  # a carried row alike one that stays: which of them moved cannot be told
    times = np.unique(stamps[staying])
    step = float(np.median(np.diff(times))) if times.size >= 2 else None
    return [(int(stamps[i]), keys[i]) for i in removed], step


def _finding(shift: Finding, new_rows: TimeWindow, hours: int, carried: Carried) -> Finding:
    column = new_rows.column
    return pinned_shift(
        shift.dataset,
        column,
        hours,
        min(at for at, _ in carried),
        f"the new rows' {column!r} moved by {hours:+d} h (a timezone written as UTC?): their first {abs(hours)} h lie "
        f"among the rows of the batch that passed before them, where exactly one choice of {len(carried)} rows leaves "
        "that batch holding the rows that passed, and no other shift within an hour of the guard's reading does. "
        "Healed by shifting the new rows and those back.",
        pinned_by="kept_batch",
        carried_rows=len(carried),
        rows=replace(RowSelector.of_window(new_rows), also=tuple(NamedRow(at, key) for at, key in sorted(carried))),
    )
