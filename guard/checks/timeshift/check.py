"""Timestamps shifted by a whole number of hours (a timezone written as UTC), from the hour-of-day profile.

Evidence that anchors a timestamp column T to the world (where its hours should fall):

- counts: the batch's rows per UTC hour of T against the reference's, circularly cross-correlated: the
  offset k whose rolled reference histogram the batch matches (total variation distance). Daily data
  (every row at 00:00) moved by 5 h puts every row at 19:00. A reading is taken only against the readings it
  could be confused with: the reference need not be unlike all its own shifts, only unlike the one read (a
  business's broad day looks like itself an hour later, never five: moved five hours it is read within an
  hour). Uninformative where the reference's histogram looks like its shifts (hourly data: one row per hour,
  flat). Where the reference's rows all but fall on one hour (`on_one_hour`), each row is a witness of its
  own, and a batch of `policy.shift_min_relation_rows` rows is enough (a year of monthly rows);
- diurnal: the batch's per-hour means of the numeric columns against the reference's (Pearson
  correlation over the 24 hours, rolled by k, averaged over the columns whose hour-of-day pattern stands
  out of the batch's noise): a reading that is zero at night, one that peaks after noon, deliveries that slow
  at rush hours; the pattern moves with T.

Relationships that tie columns together (learned from the reference, `profiles.relations`):

- hour_of: an integer column H that is an hour of T, (H - hour(T)) mod 24 concentrated on one offset (or
  two adjacent ones: daylight saving time); a batch whose offset moved by k means H or T moved. Not learned
  where T's hour never varies (a table stamped at midnight): any constant or two-valued column would read as
  an hour of it;
- lags: a second timestamp that follows T by a typical lag; its quantiles all moved by d whole hours.

Every column's shift is solved from the anchors through the relationships (a relation that did not move
carries the shift along: a whole pipeline written in local time moves the event time, the label time and
the hour column together). A relation that moved says only that one of its two columns did; a diurnal
reading too weak to anchor a column alone (a broad pattern moved 2 or 3 hours) says which, when it peaks
where the relation's move puts it (`_corroborated`). A shift is named only when |k| >= `policy.min_shift_hours` (2):
one hour is what daylight saving time does, legitimately, to local activity recorded in UTC. Counts and
diurnal evidence give the offset modulo 24 h (reported in -11..12; 12 is ambiguous and not healed).
Conflicting evidence names nothing.

Closest calls, on the whole batch: what the readings and relations compared, in each threshold's terms
(`_statistics`); the evidence is solved across columns, so a call's `decides` is read by judging the batch again with
that one threshold moved just across the statistic. `dst_regime` decides whether a move is pinned to the hour (and
healed), never whether it blocks: it has none.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

import numpy as np

from guard.checks.timeshift.evidence import (
    DiurnalReadings,
    Evidence,
    count_shift,
    diurnal_evidence,
    hour_distances,
    lag_shift,
)
from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding, moved_across, window_rows
from guard.kinds import FindingKind
from guard.policy import Policy
from guard.registry import register
from guard.statistics import hour_of_shares, hour_of_shift, learned_offsets, learned_share, on_one_hour, signed
from profiles.profile import DatasetProfile
from profiles.relations import Relations, learn_relations

__all__ = ["check_timestamp_shift"]


@dataclass
class _Edge:
    a: str
    b: str
    move: int  # s(b) - s(a), hours
    modular: bool  # known modulo 24 only
    relation: str
    learned: list[int] | None = None  # hour_of: the offsets (b - hour(a)) mod 24 the reference holds
    exact: bool = True  # the move is pinned to the hour


@register("timestamp_shift")
def check_timestamp_shift(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot
    reference = ctx.reference_profile
    if reference is None or reference.relations is None:
        return  # a reference without hour-of-day profiles (e.g. DataHub's datasetProfile) cannot say
    batch_relations = _relations(ctx)
    kept = reference.relations

    @functools.cache
    def readings(column: str, skip: frozenset[str]) -> DiurnalReadings:
        return DiurnalReadings.of(kept.diurnal.get(column, {}), batch_relations.diurnal.get(column, {}), skip)

    found = _judged(ctx, batch_relations, ctx.policy, readings)
    yield from _closest_calls(ctx, batch_relations, bool(found), readings)
    yield from found


_Readings = Callable[[str, frozenset[str]], DiurnalReadings]  # a timestamp's readings, skipping derived columns


def _judged(ctx: GuardContext, batch_relations: Relations, policy: Policy, readings: _Readings) -> list[Finding]:
    """The check's findings with its thresholds at `policy`."""
    assert ctx.contract is not None and ctx.snapshot is not None and ctx.reference_profile is not None
    reference, batch = ctx.reference_profile, ctx.snapshot.profile
    assert reference.relations is not None
    times = _times(ctx)
    hours_of = {t: reference.columns[t].hours for t in times}
    edges = _edges(reference.relations, batch_relations, times, hours_of, policy)
    derived = frozenset(e.b for e in edges if e.relation == "hour_of")
    anchors = {t: e for t in times if (e := _anchor(reference, batch, t, policy, readings(t, derived))) is not None}
    anchors |= {
        t: e
        for t in times
        if t not in anchors
        and (e := _corroborated(reference, batch, t, edges, policy, readings(t, derived))) is not None
    }
    return list(_findings(ctx, _solve(anchors, edges), anchors, edges, batch, policy))


def _times(ctx: GuardContext) -> list[str]:
    """The contracted timestamps the batch and the reference both profile."""
    assert ctx.contract is not None and ctx.snapshot is not None and ctx.reference_profile is not None
    batch, reference = ctx.snapshot.profile, ctx.reference_profile
    return [
        c.name
        for c in ctx.contract.columns
        if c.logical_type == "timestamp" and c.name in batch.columns and c.name in reference.columns
    ]


def _closest_calls(
    ctx: GuardContext, batch_relations: Relations, named: bool, readings: _Readings
) -> list[ClosestCall]:
    """The check's thresholds against what it read of the batch (`_statistics`), on the whole batch (a shift is
    named on the event time, or on whichever column the readings move). A call across its limit decides where a
    shift was named; one short of it, where none was and the check names one with that threshold moved just across
    the statistic, every other at its value (crossing it alone would block). Columns that read alike move the
    threshold to the same value: the check is judged once per value."""

    @functools.cache
    def names_one(policy: Policy) -> bool:
        return bool(_judged(ctx, batch_relations, policy, readings))

    calls = []
    for field, statistic, above in _statistics(ctx, batch_relations, readings):
        limit = float(getattr(ctx.policy, field))
        crossed = statistic > limit if above else statistic < limit
        if crossed or named or not math.isfinite(statistic):
            decides = crossed and named
        else:
            decides = names_one(moved_across(ctx.policy, field, statistic, above))
        calls.append(ClosestCall(field, None, statistic, limit, above, decides))
    return calls


def _statistics(ctx: GuardContext, batch_relations: Relations, readings: _Readings) -> list[tuple[str, float, bool]]:
    """(field, statistic, above) for what the check compares, in each field's terms. Per timestamp: its rows per
    hour against the reference's, where their best roll k moved it (k != 0): the batch's rows
    (`shift_min_count_rows`, or `shift_min_relation_rows` where the reference's rows all but fall on one hour, which
    is the share of them on their hour against `hour_of_learned`), the distance at k (`shift_count_match`, from
    above), its gain over k = 0 (`shift_count_gain`) and |k| (`min_shift_hours`); its diurnal columns' hours covered
    (`shift_min_diurnal_hours`) and pattern over noise (`shift_min_signal_to_noise`), and where their rolls read a
    move k, the score at k (`shift_diurnal_match`), its gain over k = 0 (`shift_diurnal_gain`,
    `shift_corroborated_gain`) and |k|. Per relation: an hour column's reference share on its offsets
    (`hour_of_learned`), the batch's rows (`shift_min_relation_rows`), its share still within them (`hour_of_holds`,
    from above) and the most on them moved by any k (`hour_of_moved`); a lag's fewer rows of the two sides."""
    assert ctx.snapshot is not None and ctx.reference_profile is not None
    reference, batch = ctx.reference_profile, ctx.snapshot.profile
    assert reference.relations is not None
    policy, times = ctx.policy, _times(ctx)
    edges = _edges(reference.relations, batch_relations, times, {t: reference.columns[t].hours for t in times}, policy)
    derived = frozenset(e.b for e in edges if e.relation == "hour_of")  # read as hours of a timestamp, not a pattern
    found: list[tuple[str, float, bool]] = []
    for t in times:
        hours, seen = reference.columns[t].hours, batch.columns[t].hours
        if hours and seen and sum(hours) and sum(seen):
            one = max(hours) / sum(hours)
            found.append(("hour_of_learned", one, True))
            rows_field = "shift_min_relation_rows" if one >= policy.hour_of_learned else "shift_min_count_rows"
            found.append((rows_field, float(sum(seen)), True))
            distances = hour_distances(hours, seen)
            best = int(np.argmax(-distances))
            if best:
                found += [
                    ("shift_count_match", float(distances[best]), False),
                    ("shift_count_gain", float(distances[0] - distances[best]), True),
                    ("min_shift_hours", float(abs(signed(best))), True),
                ]
        diurnal = readings(t, derived)
        for covered, over_noise in zip(diurnal.covered, diurnal.signal_to_noise(policy)):
            found.append(("shift_min_diurnal_hours", float(covered), True))
            found.append(("shift_min_signal_to_noise", float(over_noise), True))
        scored = diurnal.scored(policy)
        if scored is not None:
            score = scored[0]
            best = int(np.argmax(score))
            if best:
                gain = float(score[best] - score[0])
                found += [
                    ("shift_diurnal_match", float(score[best]), True),
                    ("shift_diurnal_gain", gain, True),
                    ("shift_corroborated_gain", gain, True),
                    ("min_shift_hours", float(abs(signed(best))), True),
                ]
        for h, counts in reference.relations.hour_of.get(t, {}).items():
            share, learned = learned_share(counts), learned_offsets(counts, least=0.0)
            now = batch_relations.hour_of.get(t, {}).get(h)
            if share is None or learned is None or now is None:
                continue
            found.append(("hour_of_learned", share, True))
            read = hour_of_shares(learned, now)
            if read is not None:
                found += [
                    ("shift_min_relation_rows", read[0], True),
                    ("hour_of_holds", read[1], False),
                    ("hour_of_moved", read[2], True),
                ]
    for key, sketch in reference.relations.lags.items():
        if key in batch_relations.lags:
            found.append(("shift_min_relation_rows", float(min(sketch.n, batch_relations.lags[key].n)), True))
    return found


def _relations(ctx: GuardContext) -> Relations:
    assert ctx.snapshot is not None
    found = ctx.snapshot.profile.relations
    if found is not None:
        return found
    return learn_relations(ctx.snapshot.sample, {n: c.logical_type for n, c in ctx.snapshot.profile.columns.items()})


def _anchor(
    reference: DatasetProfile, batch: DatasetProfile, column: str, policy: Policy, diurnal: DiurnalReadings
) -> Evidence | None:
    """What the counts and the diurnal profile (`diurnal`: the column's readings) say of a column; None when they
    cannot say or disagree."""
    found = [
        e
        for e in (
            count_shift(reference.columns[column].hours, batch.columns[column].hours, policy=policy),
            diurnal_evidence(diurnal.scored(policy), policy),
        )
        if e is not None
    ]
    if not found or len({e.offset for e in found}) > 1:
        return None
    moved = [e for e in found if e.offset]
    return moved[0] if moved else found[0]


def _corroborated(
    reference: DatasetProfile,
    batch: DatasetProfile,
    column: str,
    edges: list[_Edge],
    policy: Policy,
    diurnal: DiurnalReadings,
) -> Evidence | None:
    """The diurnal reading of a column whose relation moved, when the two agree: one relation of the column moved
    by k hours (so the column or its partner moved), and the hour-of-day profile peaks at k, give or take an
    hour, matching there and better than unshifted by `policy.shift_corroborated_gain`. Alone, a broad pattern moved 2 or 3
    hours gains too little over its unshifted score to name a shift (`policy.shift_diurnal_gain`: a search over 24 offsets);
    here it only says which of the two columns the relation's move belongs to. None otherwise."""
    implied = {
        signed(-e.move if e.a == column else e.move)
        for e in edges
        if column in (e.a, e.b) and abs(signed(e.move)) >= policy.min_shift_hours
    }
    hours = (reference.columns[column].hours, batch.columns[column].hours)
    if len(implied) != 1 or count_shift(*hours, policy=policy) is not None:
        return None
    scored = diurnal.scored(policy)
    if scored is None:
        return None
    score, source = scored
    best, (moved,) = int(np.argmax(score)), implied
    agrees = abs(signed(best - moved)) <= 1 and abs(signed(best)) >= policy.min_shift_hours
    if (
        agrees
        and score[best] >= policy.shift_diurnal_match
        and score[best] - score[0] >= policy.shift_corroborated_gain
    ):
        return Evidence(f"{source}+relation", signed(best), float(score[0]), float(score[best]), exact=False)
    return None


def _edges(
    reference: Relations,
    batch: Relations,
    times: list[str],
    hours_of: Mapping[str, tuple[int, ...] | None],
    policy: Policy,
) -> list[_Edge]:
    """The relations of the timestamps `times` (each with the reference's rows per hour of the day, `hours_of`)
    and how far each moved in the batch."""
    edges = []
    for t in times:
        if on_one_hour(hours_of.get(t), policy=policy):
            continue  # an hour column of a timestamp whose hour never varies is any constant column
        for h, counts in reference.hour_of.get(t, {}).items():
            seen = batch.hour_of.get(t, {}).get(h)
            moved = hour_of_shift(counts, seen, policy=policy) if seen is not None else None
            if moved is not None:
                edges.append(
                    _Edge(
                        t,
                        h,
                        moved[0],
                        True,
                        "hour_of",
                        sorted(learned_offsets(counts, least=policy.hour_of_learned) or ()),
                        moved[1],
                    )
                )
    for key, sketch in reference.lags.items():
        a, b = key.split("|")
        if a in times and b in times and key in batch.lags:
            move = lag_shift(sketch, batch.lags[key], policy=policy)
            if move is not None:
                edges.append(_Edge(a, b, move, False, "lag"))
    return edges


def _solve(anchors: Mapping[str, Evidence], edges: list[_Edge]) -> dict[str, tuple[int, bool] | None]:
    """Each column's (shift, pinned to the hour?), propagated from the anchored timestamps through the
    relations; None where the evidence conflicts. A diurnal anchor places a shift within an hour only (a
    broad pattern peaks an hour off when the time of year, or daylight saving time in the data, moves it); counts
    of concentrated hours and relations pin it. So a column tied to an anchor by a pinned relation, and
    anchored to nothing itself, is taken as unmoved when the anchor would move it by at most an hour, and the
    anchor's shift is then read from the relation."""
    shifts: dict[str, tuple[int, bool] | None] = {t: (e.offset, e.exact) for t, e in anchors.items()}
    for edge in edges:
        for known, other, sign in ((edge.a, edge.b, 1), (edge.b, edge.a, -1)):
            found = shifts.get(known)
            if known in anchors and other not in anchors and found is not None and edge.exact and not found[1]:
                if abs(signed(found[0] + sign * edge.move)) <= 1:
                    shifts[other], shifts[known] = (0, True), (signed(-sign * edge.move), True)
    for _ in range(len(edges) + 1):
        for edge in edges:
            for known, other, sign in ((edge.a, edge.b, 1), (edge.b, edge.a, -1)):
                found = shifts.get(known)
                if found is None:
                    continue
                implied = found[0] + sign * edge.move
                implied = signed(implied) if edge.modular else implied
                if other not in shifts:
                    shifts[other] = (implied, found[1] and edge.exact)
                elif shifts[other] is not None and signed(shifts[other][0] - implied) != 0:  # type: ignore[index]
                    shifts[other] = None
    return shifts


def _findings(
    ctx: GuardContext,
    shifts: Mapping[str, tuple[int, bool] | None],
    anchors: Mapping[str, Evidence],
    edges: list[_Edge],
    batch: DatasetProfile,
    policy: Policy,
) -> Iterator[Finding]:
    moved = {c: s for c, s in shifts.items() if s is not None and abs(signed(s[0])) >= policy.min_shift_hours}
    if moved:
        yield _anchored(ctx, moved, anchors, edges, batch)
        return
    for edge in edges:  # a relation moved, and nothing says which of its columns did
        if (
            edge.move
            and abs(signed(edge.move)) >= policy.min_shift_hours
            and edge.a not in shifts
            and edge.b not in shifts
        ):
            yield _unanchored(ctx, edge)


def _is_timestamp(batch: DatasetProfile, column: str) -> bool:
    found = batch.columns.get(column)
    return found is not None and found.logical_type == "timestamp"


def _anchored(
    ctx: GuardContext,
    moved: Mapping[str, tuple[int, bool]],
    anchors: Mapping[str, Evidence],
    edges: list[_Edge],
    batch: DatasetProfile,
) -> Finding:
    assert ctx.contract is not None
    timestamps = {c: signed(s) for c, (s, _) in moved.items() if _is_timestamp(batch, c)}
    hour_columns = {c: signed(s) for c, (s, _) in moved.items() if c not in timestamps}
    event = ctx.contract.event_timestamp_column
    column = event if event in timestamps else sorted(timestamps or hour_columns)[0]
    offset = signed(moved[column][0])
    twelve = any(abs(signed(s)) == 12 for s, _ in moved.values())  # +12 h or -12 h: modulo 24, the same
    unpinned = [c for c, (_, exact) in moved.items() if not exact]
    ambiguous = twelve or bool(unpinned)
    observed = {c: int(first) for c in timestamps if (first := batch.columns[c].minimum) is not None}
    where = ", ".join(f"{c} {signed(s):+d} h" for c, (s, _) in sorted(moved.items()))
    why = (
        "The offset is known modulo 24 h only: heal by hand."
        if twelve
        else f"The hour-of-day profile places it within an hour only ({', '.join(unpinned)}): confirm the offset "
        "and shift by hand."
        if unpinned
        else "Healed by shifting back."
    )
    return make_finding(
        FindingKind.TIMESTAMP_SHIFT,
        ctx.dataset_urn,
        column,
        observed={"offset_hours": offset},
        expected={"offset_hours": 0},
        playbook=None if ambiguous else "shift_timestamps",
        offset_hours=offset,
        shifts_hours=timestamps,
        hour_columns=hour_columns,
        evidence={c: e.to_dict() for c, e in anchors.items()},
        relations=[{"columns": [e.a, e.b], "relation": e.relation, "moved_hours": e.move} for e in edges],
        hour_of={e.b: {"timestamp": e.a, "offsets": e.learned} for e in edges if e.b in hour_columns},
        observed_min_ms=observed,
        ambiguous=ambiguous,
        pinned=not unpinned,
        rows=window_rows(ctx),
        message=f"{column!r} is shifted by {offset:+d} h against the reference's hour-of-day profile ({where}): "
        f"a timezone written as UTC? {why}",
    )


def _unanchored(ctx: GuardContext, edge: _Edge) -> Finding:
    move = signed(edge.move) if edge.modular else edge.move
    return make_finding(
        FindingKind.TIMESTAMP_SHIFT,
        ctx.dataset_urn,
        edge.b,
        observed={"relative_hours": move},
        expected={"relative_hours": 0},
        playbook=None,
        offset_hours=None,
        relative_to=edge.a,
        relative_hours=move,
        relation=edge.relation,
        rows=window_rows(ctx),
        message=f"{edge.b!r} moved {move:+d} h against {edge.a!r} ({edge.relation} learned from the reference); "
        "nothing says which of the two moved: check both producers",
    )
