"""Sums, ratios, hours of the day and calendar parts the reference always held: `relation_broken`.

An identity c = a + b or c = a * b (a difference or a ratio, read the other way) that held on at least
`policy.relation_held` of at least `policy.relation_min_rows` informative reference rows (`profiles.relations`) is evaluated on the batch's row
sample with the same tolerance (half the finest decimal step of c); broken on at least `policy.relation_min_broken` rows and
`policy.relation_broken_share` of them, it is a finding on c. The cause may be elsewhere (a unit change in a or b, a swap):
a finding that names it explains this one (`guard.causes`).

An integer column H the reference holds as the hour of a timestamp T (`hour_of`: (H - hour(T)) mod 24 on
one offset, or two adjacent ones) departs from it on a batch's rows when its offset is none of those
(give or take the hour daylight saving time moves a local hour). A timestamp whose reference rows all but fall on
one hour (`on_one_hour`: a daily or monthly table stamped at midnight) has no hour column: its hour never varies, so
any column constant there reads as one. On at least `policy.relation_departed_share` and
`policy.relation_min_broken` rows, and not moved as a whole (that is a timestamp shift, `guard.checks.timeshift`), H is no
longer derived from T there. Where, on the departed rows, H determines the label (`guard.checks.leakage`'s
association, at least `policy.leakage_jump_floor`) and the hour it should have been does not come within `policy.leakage_jump` of that, H was
computed from the outcome on those rows: `target_leakage`. Otherwise `relation_broken` on H.

An integer column C the reference holds as a calendar part of a timestamp T (`profiles.calendar`: a weekday, a
day of the month, a month, a year, on one offset from the time's part) breaks where a batch's sampled row holds
another value, or C is missing where T is not and the reference never had it so: on `policy.relation_min_broken`
rows and `policy.relation_broken_share` of them, learned on `policy.relation_held` of `policy.relation_min_rows` rows
where the part moved over three values (round its whole cycle, for a weekday or a month). Nulls alone are
`null_spike` on C; otherwise `relation_broken`, which says where every row moved by one offset (a batch stamped a
period late).

A bound a <= b between two columns the contract gives one unit (an order the reference held and reached,
`PairMoments.bound`: a lower series that meets its upper one at a limit; two ranges that merely did not
overlap are no bound) is broken on a batch's sampled rows like an identity. The finding names the column of the
two that the other columns explain worse on the broken rows than on the rest (fitted on the batch's own rows: a year
is not the reference's stretch of it), and both in `columns`. Where, on the broken rows, that column is an exact monotone
function of the label (its values ordered as the label's over `policy.monotone_labels` distinct labels, or `policy.monotone_categories`
categories taken in the order of their medians, and `policy.monotone_pairs` pairs of rows), it was computed from the outcome
there: `target_leakage`. An order the reference held but never reached (a daily minimum and maximum that were
never equal) may be two series that have not crossed yet, so its break alone is no finding; but the
same exact monotone function of the label on its broken rows is leakage too, when the label is neither column.
Unless the contract declares it (`ColumnContract.at_least`, ODCS `atLeast`): a declared order is judged as a bound,
with or without a reference, since its owner says it holds on every row.

Closest calls, on the column a finding would name, for every relation the reference keeps (learned or not): how it
was learned (`relation_min_rows`, `relation_held`, `hour_of_learned`), how far the batch breaks it
(`relation_min_broken`, `relation_broken_share` or `relation_departed_share`; for an hour column, also its share
still holding it, `hour_of_holds`, and moved as a whole, `hour_of_moved`), and for an order merely held, the label
groups and pairs of rows its broken rows follow the label over (`monotone_labels` or `monotone_categories`,
`monotone_pairs`); each deciding where the rest of its rule held. `relation_fit_rows` and `relation_leak_rows` decide
which column, and which kind, a broken relation names, never whether it blocks: they have none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.findings import ClosestCall, Condition, Finding, make_finding, rule_calls
from guard.kinds import FindingKind
from guard.policy import Policy
from guard.registry import register
from guard.statistics import (
    association,
    hour_of_shares,
    hour_of_shift,
    learned_offsets,
    learned_share,
    on_one_hour,
)
from guard.units import same_unit
from profiles.calendar import CYCLES, CalendarPart, calendar_part, part_offsets, whole_values
from profiles.relations import (
    HOURS,
    PairMoments,
    epoch_ms_of,
    hour_offset_counts,
    hour_offsets,
    identity_holds,
    informative_rows,
    order_broken,
    resolution,
    utc_hours,
)

__all__ = ["check_relations", "parse_identity"]


def parse_identity(key: str) -> tuple[str, str, str, str]:
    """'c=a+b' -> (c, a, op, b)."""
    target, expression = key.split("=", 1)
    op = "+" if "+" in expression else "*"
    a, b = expression.split(op, 1)
    return target, a, op, b


@register("relations", per_column=True)
def check_relations(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot
    reference = ctx.reference_profile
    relations = reference.relations if reference is not None else None
    sample = ctx.snapshot.sample
    for key, (holds, tested) in (relations.identities if relations else {}).items():
        c, a, op, b = parse_identity(key)
        if not tested or not {a, b, c} <= set(sample.columns):
            continue
        learned = [
            Condition(
                "relation_min_rows", tested, ctx.policy.relation_min_rows, tested >= ctx.policy.relation_min_rows
            ),
            Condition(
                "relation_held", holds / tested, ctx.policy.relation_held, holds / tested >= ctx.policy.relation_held
            ),
        ]
        found = _judge(ctx, key, _floats(sample[c]), _floats(sample[a]), _floats(sample[b]), op, c, learned)
        yield from found
    declared = ctx.contract.declared_orders  # judged with or without a reference
    learned_orders = [
        (order, moments.n)
        for key, moments in (relations.pairs if relations else {}).items()
        if (order := _learned_order(ctx, key, moments, enough=0)) is not None and order[:2] not in declared
    ]
    orders = [((low, high, "declared"), None) for low, high in declared]
    for (low, high, how), rows in [*orders, *learned_orders]:
        learned = [] if rows is None else [_enough_rows(ctx, rows)]
        yield from _broken_order(ctx, low, high, how, learned)
    for t, columns in (relations.hour_of if relations else {}).items():
        if _hour_never_varies(ctx, t):
            continue
        for h, counts in columns.items():
            if t in sample and h in sample:
                yield from _departed_hours(ctx, t, h, counts)
    for key, part in (relations.calendar if relations else {}).items():
        t, c, name = key.split("|")
        if t in sample and c in sample:
            yield from _calendar_broken(ctx, t, c, name, part)


def _hour_never_varies(ctx: GuardContext, t: str) -> bool:
    reference = ctx.reference_profile
    column = reference.columns.get(t) if reference is not None else None
    return column is not None and on_one_hour(column.hours, policy=ctx.policy)


def _enough_rows(ctx: GuardContext, rows: int) -> Condition:
    """The reference's rows behind a learned relation against `policy.relation_min_rows`."""
    return Condition("relation_min_rows", rows, ctx.policy.relation_min_rows, rows >= ctx.policy.relation_min_rows)


def _broken(ctx: GuardContext, broken: int, tested: int, share_field: str = "relation_broken_share") -> list[Condition]:
    """Rows a relation is broken on against `policy.relation_min_broken`, and their share of the tested rows against
    the share field (`relation_broken_share`, or `relation_departed_share` for an hour column)."""
    share = getattr(ctx.policy, share_field)
    return [
        Condition(
            "relation_min_broken", broken, ctx.policy.relation_min_broken, broken >= ctx.policy.relation_min_broken
        ),
        Condition(share_field, broken / tested if tested else 0.0, share, broken >= share * tested),
    ]


def _floats(values: pd.Series) -> np.ndarray:
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _judge(
    ctx: GuardContext,
    key: str,
    c: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    op: str,
    target: str,
    learned: list[Condition],
) -> Iterator[Finding | ClosestCall]:
    """The identity's closest calls (how it was learned, `learned`, and how far it is broken), and its finding where
    it was learned and is broken on enough rows."""
    rows = informative_rows(c, a, b)
    if not rows.any():
        return
    holds = identity_holds(c[rows], a[rows], b[rows], op, resolution(c))
    broken = int((~holds).sum())
    share = broken / int(rows.sum())
    conditions = [*learned, *_broken(ctx, broken, int(rows.sum()))]
    yield from rule_calls(target, *conditions)
    if not all(condition.holds for condition in learned):
        return
    if broken < ctx.policy.relation_min_broken or share < ctx.policy.relation_broken_share:
        return
    yield _broken_relation(
        ctx,
        target,
        key,
        [name for name in parse_identity(key) if name not in "+*"],
        (broken, int(rows.sum())),
        f"{key} held on every reference row; it is broken on {broken} of {int(rows.sum())} sampled rows "
        f"({share:.1%}): one of its columns changed",
    )


def _broken_relation(
    ctx: GuardContext,
    column: str,
    relation: str,
    columns: list[str],
    rows: tuple[int, int],
    message: str,
    **evidence: Any,
) -> Finding:
    """`relation_broken` on `column`: `relation` (the columns it holds between) broken on `rows` (broken, tested)."""
    broken, tested = rows
    return make_finding(
        FindingKind.RELATION_BROKEN,
        ctx.dataset_urn,
        column,
        observed={"relation": relation, "broken_share": round(broken / tested, 6)},
        expected={"relation": relation, "broken_share": 0.0},
        relation=relation,
        columns=columns,
        broken_rows=broken,
        tested_rows=tested,
        message=message,
        **evidence,
    )


def _calendar_broken(
    ctx: GuardContext, t: str, c: str, part: str, learned: CalendarPart
) -> Iterator[Finding | ClosestCall]:
    """C is a calendar part of T on every reference row (`profiles.calendar`): on the batch's sampled rows with a T,
    the rows where C is another value (for a part with a cycle, also one the reference's numbering cannot write,
    `_numbered_as_learned`), or missing where the reference never had it missing, break it. Learned where
    it held on `policy.relation_held` of at least `policy.relation_min_rows` rows and the part moved over three values
    there, round its whole cycle for a part with one (`CalendarPart.shown`); broken
    on `policy.relation_min_broken` rows and `policy.relation_broken_share` of them. Nulls alone are new nulls in C
    (`null_spike`); otherwise a broken relation, moved as a whole where every row moved by one offset."""
    assert ctx.snapshot is not None
    stamps, present = epoch_ms_of(ctx.snapshot.sample[t])
    values = _floats(ctx.snapshot.sample[c])
    whole = present & whole_values(values)
    offsets = part_offsets(calendar_part(stamps[whole], part), values[whole], part)
    moved = offsets[(offsets != learned.offset) | ~_numbered_as_learned(values[whole], learned, part)]
    wrong = len(moved) + int((present & ~np.isnan(values) & ~whole).sum())
    nulls = int((present & np.isnan(values)).sum()) if learned.missing == 0 else 0
    tested, broken = int(present.sum()), wrong + nulls
    held = learned.holds / learned.tested if learned.tested else 0.0
    conditions = [
        _enough_rows(ctx, learned.tested),
        Condition("relation_held", held, ctx.policy.relation_held, held >= ctx.policy.relation_held),
        *_broken(ctx, broken, tested),
    ]
    shown = learned.shown(CYCLES[part])
    yield from rule_calls(c, *conditions, when=shown)
    if not shown or not all(condition.holds for condition in conditions):
        return
    relation = f"{c}={part}({t})" + (f"{learned.offset:+d}" if learned.offset else "")
    stated = f"{c!r} is the {part} of {t!r} on every reference row ({relation}); on {broken} of {tested} sampled rows"
    if not wrong:
        yield make_finding(
            FindingKind.NULL_SPIKE,
            ctx.dataset_urn,
            c,
            observed=round(nulls / tested, 6),
            expected=0.0,
            message=f"{stated} it is missing, though {t!r} is not: the {part} was not written there",
            reference_null_fraction=0.0,
            null_rows=nulls,
            relation=relation,
            columns=[c, t],
        )
        return
    together = len(moved) == broken and len(set(moved.tolist())) == 1
    how = (
        f"every one moved by {_signed_move(moved, learned.offset, part):+d}: {t!r} or {c!r} was shifted"
        if together
        else ""
    )
    yield _broken_relation(
        ctx,
        c,
        relation,
        [c, t],
        (broken, tested),
        f"{stated} it is not ({broken / tested:.0%}{'; ' + how if how else ''}): {c!r} or {t!r} changed",
    )


def _numbered_as_learned(written: np.ndarray, learned: CalendarPart, part: str) -> np.ndarray:
    """Values of a part with a cycle that the reference's numbering can write: within one cycle of every value it
    wrote (a weekday the reference wrote from 1 to 7 is never 0, which the cycle alone reads as its 7; a month
    written from 7 to 12 may still be 1). Every value of a part without a cycle."""
    cycle = CYCLES[part]
    if not cycle:
        return np.ones(len(written), dtype=bool)
    return (written >= learned.most - cycle + 1) & (written <= learned.least + cycle - 1)


def _signed_move(moved: np.ndarray, offset: int, part: str) -> int:
    """How far a part moved as a whole, the nearer way round its cycle (a month back, not eleven on)."""
    step, cycle = int(moved[0]) - offset, CYCLES[part]
    return (step + cycle // 2) % cycle - cycle // 2 if cycle else step


def _departed_hours(ctx: GuardContext, t: str, h: str, counts: tuple[int, ...]) -> Iterator[Finding | ClosestCall]:
    """A finding when the hour column h departs from the hour of t on part of the sampled rows, after the closest
    calls of the limits that decide it."""
    assert ctx.snapshot is not None and ctx.contract is not None
    learned = learned_offsets(counts)
    stamps, present = epoch_ms_of(ctx.snapshot.sample[t])
    values = _floats(ctx.snapshot.sample[h])
    rows = present & ~np.isnan(values)
    offsets = hour_offsets(stamps[rows], values[rows])
    yield from _hour_calls(ctx, h, counts, offsets)
    if learned is None or hour_of_shift(counts, hour_offset_counts(offsets)) is not None:
        return  # not an hour of t, too few rows, holding, or moved as a whole (a timestamp shift)
    usual = max(learned, key=lambda k: counts[k])
    tolerated = [(k + d) % HOURS for k in learned for d in (-1, 0, 1)]
    departed = ~np.isin(offsets, tolerated)
    broken, tested = int(departed.sum()), len(offsets)
    if broken < ctx.policy.relation_min_broken or broken < ctx.policy.relation_departed_share * tested:
        return
    stated = (
        f"{h!r} is the hour of {t!r} (offset {usual} h) on every reference row; on {broken} of {tested} sampled rows "
        f"({broken / tested:.0%}) it is not"
    )
    label = ctx.contract.label_column
    if label is not None and label in ctx.snapshot.sample and broken >= ctx.policy.relation_leak_rows:
        hours = (utc_hours(stamps[rows][departed]) + usual) % HOURS
        outcome = ctx.snapshot.sample[label][rows][departed].reset_index(drop=True)
        now = _scores(pd.Series(values[rows][departed]), outcome)
        was = _scores(pd.Series(hours), outcome)
        rose = [
            key
            for key in now
            if now[key] >= ctx.policy.leakage_jump_floor and now[key] >= was.get(key, 0.0) + ctx.policy.leakage_jump
        ]
        if rose:
            key = max(rose, key=lambda k: now[k] - was.get(k, 0.0))
            yield make_finding(
                FindingKind.TARGET_LEAKAGE,
                ctx.dataset_urn,
                h,
                observed=round(now[key], 4),
                expected=round(was.get(key, 0.0), 4),
                statistic=key,
                departed_rows=broken,
                tested_rows=tested,
                derived_from=t,
                label=label,
                message=f"{stated}; there it determines the label {label!r} ({key} {now[key]:.3f}, where the hour of "
                f"{t!r} gives {was.get(key, 0.0):.3f}): computed from the outcome on those rows?",
            )
            return
    yield _broken_relation(
        ctx, h, f"{h}=hour({t})", [h, t], (broken, tested), f"{stated}: {h!r} or {t!r} changed on those rows"
    )


def _hour_calls(ctx: GuardContext, h: str, counts: tuple[int, ...], offsets: np.ndarray) -> list[ClosestCall]:
    """An hour column's relation with its timestamp: how the reference learned it (its rows on one offset, or two
    adjacent ones, against `policy.hour_of_learned`), the batch's rows off those offsets (against
    `policy.relation_min_broken` and `policy.relation_departed_share`) and, on enough rows
    (`policy.shift_min_relation_rows`) to read the relation at all, its share still holding it (`policy.hour_of_holds`)
    and the largest share on the offsets moved as a whole (`policy.hour_of_moved`): below both, neither holding nor a
    timestamp shift, the relation is broken there."""
    share = learned_share(counts)
    learned = learned_offsets(counts, least=0.0)  # the offsets it holds most, learned or not
    if share is None or learned is None:
        return []
    conditions = [Condition("hour_of_learned", share, ctx.policy.hour_of_learned, share >= ctx.policy.hour_of_learned)]
    tolerated = [(k + d) % HOURS for k in learned for d in (-1, 0, 1)]
    conditions += _broken(ctx, int((~np.isin(offsets, tolerated)).sum()), len(offsets), "relation_departed_share")
    read = hour_of_shares(learned, hour_offset_counts(offsets))
    if read is not None and read[0] >= ctx.policy.shift_min_relation_rows:
        _, holding, moved = read
        conditions += [
            Condition("hour_of_holds", holding, ctx.policy.hour_of_holds, holding < ctx.policy.hour_of_holds, False),
            Condition("hour_of_moved", moved, ctx.policy.hour_of_moved, moved < ctx.policy.hour_of_moved, False),
        ]
    return rule_calls(h, *conditions)


def _scores(feature: pd.Series, label: pd.Series) -> dict[str, float]:
    """The leakage scores of feature -> label over the rows holding both (each compared with its own kind)."""
    both = feature.notna().to_numpy() & label.notna().to_numpy()
    return association(feature[both].reset_index(drop=True), label[both].reset_index(drop=True))


def _learned_order(
    ctx: GuardContext, key: str, moments: PairMoments, enough: int | None = None
) -> tuple[str, str, str] | None:
    """(low, high, how) of an order a <= b of two columns of one unit the reference learned: a bound it reached
    ("reached"), or an order it held without reaching it ("held", judged as leakage only, and only with the label
    in neither column); from `enough` reference rows (`policy.relation_min_rows` unless given)."""
    assert ctx.contract is not None
    a, b = key.split("|")
    if moments.n < (ctx.policy.relation_min_rows if enough is None else enough) or not _one_unit(ctx, a, b):
        return None
    bound = moments.bound(a, b)
    if bound is not None:
        return (*bound, "reached")
    order = None if ctx.contract.label_column in (a, b) else moments.order(a, b)
    return None if order is None else (*order, "held")


def _broken_order(
    ctx: GuardContext, low: str, high: str, how: str, learned: list[Condition]
) -> Iterator[Finding | ClosestCall]:
    """A finding when an order low <= high is broken on part of the sampled rows: one the contract declares
    (`atLeast`) or the reference reached, or (as leakage only) one it merely held; `learned`: how the reference
    learned it (none for a declared order), which must hold too. First the closest calls of its limits: the rows
    broken, and for an order merely held (a break is a finding only where the changed column follows the label
    there) the label groups and pairs of rows it follows the label over."""
    assert ctx.snapshot is not None and ctx.contract is not None
    if not {low, high} <= set(ctx.snapshot.sample.columns):
        return  # a missing column is the schema check's finding
    x, y = _floats(ctx.snapshot.sample[low]), _floats(ctx.snapshot.sample[high])
    rows = ~np.isnan(x) & ~np.isnan(y)
    off = rows & order_broken(x, y)
    broken, tested = int(off.sum()), int(rows.sum())
    conditions = [*learned, *_broken(ctx, broken, tested)]
    judged = broken >= ctx.policy.relation_min_broken
    changed, unlike = _changed_column(ctx, low, high, off) if judged else (high, None)
    monotone = _monotone(ctx, changed, off) if broken else None
    leak = monotone.follows(ctx.policy) if monotone is not None else None
    yield from rule_calls(changed, *conditions, when=how != "held" or leak is not None)
    if how == "held" and monotone is not None:
        enough = all(condition.holds for condition in conditions)
        yield from rule_calls(changed, *monotone.conditions(ctx.policy), when=enough and monotone.ordered)
    if not all(condition.holds for condition in learned):
        return
    if broken < ctx.policy.relation_min_broken or broken < ctx.policy.relation_broken_share * tested:
        return
    relation = f"{low}<={high}"
    stated = {
        "declared": f"the contract declares {relation} ({high!r} atLeast {low!r})",
        "reached": f"{relation} held on every reference row, which reached it ({low} == {high} on some)",
        "held": f"{relation} held on every reference row, though none reached it",
    }[how]
    stated += f"; it is broken on {broken} of {tested} sampled rows ({broken / tested:.1%})"
    if leak is not None:
        label, groups = leak
        yield make_finding(
            FindingKind.TARGET_LEAKAGE,
            ctx.dataset_urn,
            changed,
            observed={"relation": relation, "monotone_in_label_groups": groups},
            expected={"relation": relation, "broken_share": 0.0},
            statistic="monotone_on_broken_rows",
            relation=relation,
            columns=[low, high],
            broken_rows=broken,
            tested_rows=tested,
            label=label,
            message=f"{stated}; there {changed!r} is an exact monotone function of the label {label!r} (over "
            f"{groups} distinct labels, each label's values in an interval of their own, the intervals in order): "
            "computed from the outcome on those rows?",
        )
        return
    if how == "held":  # two series that never crossed in the reference may cross now: no evidence of a failure
        return
    why = (
        f"{changed!r} changed (the other columns explain it {unlike:.1f}x worse there than on the rest)"
        if unlike is not None
        else "one of them changed"
    )
    yield _broken_relation(
        ctx, changed, relation, [low, high], (broken, tested), f"{stated}: {why}", unlike_elsewhere=unlike
    )


@dataclass(frozen=True)
class _Monotone:
    """A column grouped by the label on some rows: the groups (distinct labels, or categories), the distinct values
    of the column there, the pairs of rows whose labels differ, and whether every group lies at or beyond the last."""

    label: str
    numeric: bool
    groups: int
    values: int
    pairs: int
    ordered: bool

    def conditions(self, policy: Policy) -> list[Condition]:
        """The groups (and distinct values) against `policy.monotone_labels` (`monotone_categories` for a category)
        and the pairs of rows against `policy.monotone_pairs`."""
        field = "monotone_labels" if self.numeric else "monotone_categories"
        needed, spread = getattr(policy, field), min(self.groups, self.values)
        return [
            Condition(field, spread, needed, spread >= needed),
            Condition("monotone_pairs", self.pairs, policy.monotone_pairs, self.pairs >= policy.monotone_pairs),
        ]

    def follows(self, policy: Policy) -> tuple[str, int] | None:
        """(label, groups) where the column follows the label over enough groups and pairs of rows."""
        enough = all(condition.holds for condition in self.conditions(policy))
        return (self.label, self.groups) if enough and self.ordered else None


def _monotone(ctx: GuardContext, column: str, rows: np.ndarray) -> _Monotone | None:
    """The column grouped by the label on these rows; it is a monotone function of the label there when grouped by
    label, each group's values all at or above (or all at or below) the previous group's, over at least
    `policy.monotone_labels` groups and `policy.monotone_pairs` pairs of rows, and the column not constant there (a placeholder
    orders nothing). A numeric label's groups come in its order. A category has none, so its groups are taken in
    the order of their medians, over at least `policy.monotone_categories` of them, and only for a feature that did not
    nearly determine the label in any reference batch (its association below `policy.leakage_jump_floor`): a feature that sorts the
    categories by nature would sort them here too. Values dealt out in the outcome's order line up with it exactly;
    measurements changed some other way did not: `make bench-leak-null` lowers, raises, halves, shuffles or scatters
    either column of an order on every real batch, and none of 17,800 such changes (7,905 breaking the order) was
    read as leakage."""
    assert ctx.snapshot is not None and ctx.contract is not None
    label = ctx.contract.label_column
    sample = ctx.snapshot.sample
    if label is None or label not in sample or label == column:
        return None
    numeric = pd.api.types.is_numeric_dtype(sample[label])
    if not numeric and not _separates_nothing(ctx, column, label):
        return None
    values = _floats(sample[column])[rows]
    outcome = _floats(sample[label])[rows] if numeric else sample[label].to_numpy(dtype=object)[rows]
    both = ~np.isnan(values) & pd.notna(outcome)
    groups = pd.Series(values[both]).groupby(outcome[both]).agg(["min", "max", "median", "size"])  # label order
    if not numeric:
        groups = groups.sort_values("median", kind="stable")
    sizes = groups["size"].to_numpy()
    pairs = (sizes.sum() ** 2 - (sizes**2).sum()) // 2  # pairs of rows whose labels differ
    low, high = groups["min"].to_numpy(), groups["max"].to_numpy()
    rising, falling = np.all(high[:-1] <= low[1:]), np.all(low[:-1] >= high[1:])
    distinct = int(np.unique(values[both]).size)
    return _Monotone(label, bool(numeric), len(groups), distinct, int(pairs), bool(rising or falling))


def _separates_nothing(ctx: GuardContext, column: str, label: str) -> bool:
    """The reference keeps the feature's association with the label, and no batch of it reached `policy.leakage_jump_floor`."""
    reference = ctx.reference_profile
    relations = reference.relations if reference is not None else None
    high = relations.highest_association(column, label) if relations is not None else None
    return high is not None and high < ctx.policy.leakage_jump_floor


def _one_unit(ctx: GuardContext, a: str, b: str) -> bool:
    """The contract gives both columns a unit, and the same one."""
    assert ctx.contract is not None
    first, second = ctx.contract.column(a), ctx.contract.column(b)
    return bool(first and second and first.unit and second.unit and same_unit(first.unit, second.unit))


def _changed_column(ctx: GuardContext, low: str, high: str, broken: np.ndarray) -> tuple[str, float | None]:
    """Of the two columns, the one the other columns explain worse on the broken rows than on the rest, and by how
    much (its residuals' RMS there over elsewhere): each column is fitted by least squares on the batch's rows
    that keep the bound, from every other contracted number but the label (a column changed on some rows is
    unlike itself there; its partner is not). `high` with None when nothing can be fitted."""
    assert ctx.snapshot is not None and ctx.contract is not None
    sample = ctx.snapshot.sample
    others = [
        c.name
        for c in ctx.contract.columns
        if c.logical_type in ("integer", "number")
        and c.name not in (low, high, ctx.contract.label_column)
        and c.name in sample
        and sample[c.name].notna().mean() >= 0.5
    ]
    frame = pd.DataFrame({n: _floats(sample[n]) for n in [low, high, *others]})
    complete = frame.notna().all(axis=1).to_numpy()
    kept, off = complete & ~broken, complete & broken
    if not others or kept.sum() < ctx.policy.relation_fit_rows or off.sum() < ctx.policy.relation_min_broken:
        return high, None
    design = np.column_stack([np.ones(len(frame)), frame[others].to_numpy()])

    def unlike(column: str) -> float:
        target = frame[column].to_numpy()
        weights, *_ = np.linalg.lstsq(design[kept], target[kept], rcond=None)
        residual = target - design @ weights
        usual = float(np.sqrt(np.mean(residual[kept] ** 2)))
        return float(np.sqrt(np.mean(residual[off] ** 2))) / usual if usual > 0 else 0.0

    ratios = {column: unlike(column) for column in (low, high)}
    column = max((low, high), key=lambda c: ratios[c])
    return column, round(ratios[column], 3)
