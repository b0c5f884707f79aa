"""Sums, ratios and hours of the day the reference always held: `relation_broken`.

An identity c = a + b or c = a * b (a difference or a ratio, read the other way) that held on at least
`policy.relation_held` of at least `policy.relation_min_rows` informative reference rows (`profiles.relations`) is evaluated on the batch's row
sample with the same tolerance (half the finest decimal step of c); broken on at least `policy.relation_min_broken` rows and
`policy.relation_broken_share` of them, it is a finding on c. The cause may be elsewhere (a unit change in a or b, a swap):
a finding that names it explains this one (`guard.causes`).

An integer column H the reference holds as the hour of a timestamp T (`hour_of`: (H - hour(T)) mod 24 on
one offset, or two adjacent ones) departs from it on a batch's rows when its offset is none of those
(give or take the hour daylight saving time moves a local hour). On at least `policy.relation_departed_share` and
`policy.relation_min_broken` rows, and not moved as a whole (that is a timestamp shift, `guard.checks.timeshift`), H is no
longer derived from T there. Where, on the departed rows, H determines the label (`guard.checks.leakage`'s
association, at least `policy.leakage_jump_floor`) and the hour it should have been does not come within `policy.leakage_jump` of that, H was
computed from the outcome on those rows: `target_leakage`. Otherwise `relation_broken` on H.

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
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register
from guard.statistics import association, hour_of_shift, learned_offsets
from guard.units import same_unit
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
def check_relations(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot
    reference = ctx.reference_profile
    relations = reference.relations if reference is not None else None
    sample = ctx.snapshot.sample
    for key, (holds, tested) in (relations.identities if relations else {}).items():
        c, a, op, b = parse_identity(key)
        if (
            tested < ctx.policy.relation_min_rows
            or holds / tested < ctx.policy.relation_held
            or not {a, b, c} <= set(sample.columns)
        ):
            continue
        finding = _judge(ctx, key, _floats(sample[c]), _floats(sample[a]), _floats(sample[b]), op, c)
        if finding is not None:
            yield finding
    declared = ctx.contract.declared_orders  # judged with or without a reference
    learned = (_learned_order(ctx, key, moments) for key, moments in (relations.pairs if relations else {}).items())
    orders = [(low, high, "declared") for low, high in declared]
    for low, high, how in [*orders, *(o for o in learned if o is not None and o[:2] not in declared)]:
        finding = _broken_order(ctx, low, high, how)
        if finding is not None:
            yield finding
    for t, columns in (relations.hour_of if relations else {}).items():
        for h, counts in columns.items():
            if t in sample and h in sample:
                finding = _departed_hours(ctx, t, h, counts)
                if finding is not None:
                    yield finding


def _floats(values: pd.Series) -> np.ndarray:
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _judge(
    ctx: GuardContext, key: str, c: np.ndarray, a: np.ndarray, b: np.ndarray, op: str, target: str
) -> Finding | None:
    rows = informative_rows(c, a, b)
    if not rows.any():
        return None
    holds = identity_holds(c[rows], a[rows], b[rows], op, resolution(c))
    broken = int((~holds).sum())
    share = broken / int(rows.sum())
    if broken < ctx.policy.relation_min_broken or share < ctx.policy.relation_broken_share:
        return None
    return make_finding(
        FindingKind.RELATION_BROKEN,
        ctx.dataset_urn,
        target,
        observed={"relation": key, "broken_share": round(share, 6)},
        expected={"relation": key, "broken_share": 0.0},
        relation=key,
        columns=[name for name in parse_identity(key) if name not in "+*"],
        broken_rows=broken,
        tested_rows=int(rows.sum()),
        message=f"{key} held on every reference row; it is broken on {broken} of {int(rows.sum())} sampled rows "
        f"({share:.1%}): one of its columns changed",
    )


def _departed_hours(ctx: GuardContext, t: str, h: str, counts: tuple[int, ...]) -> Finding | None:
    """A finding when the hour column h departs from the hour of t on part of the sampled rows."""
    assert ctx.snapshot is not None and ctx.contract is not None
    learned = learned_offsets(counts)
    stamps, present = epoch_ms_of(ctx.snapshot.sample[t])
    values = _floats(ctx.snapshot.sample[h])
    rows = present & ~np.isnan(values)
    offsets = hour_offsets(stamps[rows], values[rows])
    if learned is None or hour_of_shift(counts, hour_offset_counts(offsets)) is not None:
        return None  # not an hour of t, too few rows, holding, or moved as a whole (a timestamp shift)
    usual = max(learned, key=lambda k: counts[k])
    tolerated = [(k + d) % HOURS for k in learned for d in (-1, 0, 1)]
    departed = ~np.isin(offsets, tolerated)
    broken, tested = int(departed.sum()), len(offsets)
    if broken < ctx.policy.relation_min_broken or broken < ctx.policy.relation_departed_share * tested:
        return None
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
            return make_finding(
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
    return make_finding(
        FindingKind.RELATION_BROKEN,
        ctx.dataset_urn,
        h,
        observed={"relation": f"{h}=hour({t})", "broken_share": round(broken / tested, 6)},
        expected={"relation": f"{h}=hour({t})", "broken_share": 0.0},
        relation=f"{h}=hour({t})",
        columns=[h, t],
        broken_rows=broken,
        tested_rows=tested,
        message=f"{stated}: {h!r} or {t!r} changed on those rows",
    )


def _scores(feature: pd.Series, label: pd.Series) -> dict[str, float]:
    """The leakage scores of feature -> label over the rows holding both (each compared with its own kind)."""
    both = feature.notna().to_numpy() & label.notna().to_numpy()
    return association(feature[both].reset_index(drop=True), label[both].reset_index(drop=True))


def _learned_order(ctx: GuardContext, key: str, moments: PairMoments) -> tuple[str, str, str] | None:
    """(low, high, how) of an order a <= b of two columns of one unit the reference learned: a bound it reached
    ("reached"), or an order it held without reaching it ("held", judged as leakage only, and only with the label
    in neither column)."""
    assert ctx.contract is not None
    a, b = key.split("|")
    if moments.n < ctx.policy.relation_min_rows or not _one_unit(ctx, a, b):
        return None
    bound = moments.bound(a, b)
    if bound is not None:
        return (*bound, "reached")
    order = None if ctx.contract.label_column in (a, b) else moments.order(a, b)
    return None if order is None else (*order, "held")


def _broken_order(ctx: GuardContext, low: str, high: str, how: str) -> Finding | None:
    """A finding when an order low <= high is broken on part of the sampled rows: one the contract declares
    (`atLeast`) or the reference reached, or (as leakage only) one it merely held."""
    assert ctx.snapshot is not None and ctx.contract is not None
    if not {low, high} <= set(ctx.snapshot.sample.columns):
        return None  # a missing column is the schema check's finding
    x, y = _floats(ctx.snapshot.sample[low]), _floats(ctx.snapshot.sample[high])
    rows = ~np.isnan(x) & ~np.isnan(y)
    off = rows & order_broken(x, y)
    broken, tested = int(off.sum()), int(rows.sum())
    if broken < ctx.policy.relation_min_broken or broken < ctx.policy.relation_broken_share * tested:
        return None
    changed, unlike = _changed_column(ctx, low, high, off)
    relation = f"{low}<={high}"
    stated = {
        "declared": f"the contract declares {relation} ({high!r} atLeast {low!r})",
        "reached": f"{relation} held on every reference row, which reached it ({low} == {high} on some)",
        "held": f"{relation} held on every reference row, though none reached it",
    }[how]
    stated += f"; it is broken on {broken} of {tested} sampled rows ({broken / tested:.1%})"
    leak = _follows_label(ctx, changed, off)
    if leak is not None:
        label, groups = leak
        return make_finding(
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
    if how == "held":  # two series that never crossed in the reference may cross now: no evidence of a failure
        return None
    why = (
        f"{changed!r} changed (the other columns explain it {unlike:.1f}x worse there than on the rest)"
        if unlike is not None
        else "one of them changed"
    )
    return make_finding(
        FindingKind.RELATION_BROKEN,
        ctx.dataset_urn,
        changed,
        observed={"relation": relation, "broken_share": round(broken / tested, 6)},
        expected={"relation": relation, "broken_share": 0.0},
        relation=relation,
        columns=[low, high],
        broken_rows=broken,
        tested_rows=tested,
        unlike_elsewhere=unlike,
        message=f"{stated}: {why}",
    )


def _follows_label(ctx: GuardContext, column: str, rows: np.ndarray) -> tuple[str, int] | None:
    """(label, distinct labels) when, on these rows, the column is a monotone function of the label: grouped by
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
    needed = ctx.policy.monotone_labels if numeric else ctx.policy.monotone_categories
    if len(groups) < needed or np.unique(values[both]).size < needed or pairs < ctx.policy.monotone_pairs:
        return None
    low, high = groups["min"].to_numpy(), groups["max"].to_numpy()
    rising, falling = np.all(high[:-1] <= low[1:]), np.all(low[:-1] >= high[1:])
    return (label, len(groups)) if rising or falling else None


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
