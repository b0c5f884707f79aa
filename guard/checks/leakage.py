"""Target leakage: a feature that nearly determines the label, judged on the snapshot's row sample.

Two scores, each flagged at `policy.leakage_threshold` or above:

- correlation (numeric feature and numeric label): the larger of |Pearson| and |Spearman|;
- mapping (any feature, any label): how well the label is predicted from the feature's value alone,
  out of sample. The sampled rows are split in two by a seeded shuffle; each half's per-value label
  (mean for a numeric label, most frequent for a categorical one) predicts the other half, values the
  other half; rows whose value the other half never saw are left out, and when they are more than
  1 - `policy.leakage_min_coverage` of the rows the score is 0 (an identifier has no mapping to learn). The score is
  sqrt(R²) for a numeric label and the error removed over always guessing the mode,
  (accuracy - base) / (1 - base), for a categorical one, floored at 0. Numeric features with more than
  MAX_BINS distinct values are cut into MAX_BINS quantile bins first. Being out of sample, an
  independent feature scores about 0 however many values it has; a deterministic mapping about 1.

A column outside the contract whose values equal the label's on at least `policy.copy_threshold` of the sampled
labelled rows is a copy of the label: on `policy.leakage_min_rows` sampled rows or more, or on fewer where so many
equal values could not be chance (a column independent of the label matches it on m rows with probability at most
p^m, p the largest share of one label value, and a copy needs p^m <= `policy.copy_chance`: a dozen rows of
distinct values). Only features
are tested for an association: not the label, the keys or timestamps, and at least `policy.leakage_min_rows`
sampled rows holding both values are needed for that verdict.

Against a reference that keeps associations (`profiles.relations`: |correlation| of two numbers, the
correlation ratio of a category and a number, with the lowest and highest value any one reference batch
showed), a contracted feature is judged by how far its association with the label jumped instead, which
also catches leakage in part of the rows: the batch's association must exceed the reference's highest
batch by `policy.leakage_jump`, reach `policy.leakage_jump_floor`, and be a significant rise over the merged reference's (Fisher z of at
least `policy.leakage_jump_z`). A feature that legitimately determines the label in the reference (the hour of day of an
hourly temperature) is then not leakage. Without those associations, the absolute rule above applies.

Closest calls, per feature: its strongest score against `leakage_threshold` (the absolute rule); or, against a
reference keeping associations, its rise over the highest batch (`leakage_jump`), the association itself
(`leakage_jump_floor`) and the Fisher z of the rise (`leakage_jump_z`), each deciding where the other two and the
rows needed held. With the absolute rule, also the rows holding both values against `leakage_min_rows` and the
share of rows the mapping's halves cover against `leakage_min_coverage`; with the jump, the rows against
`leakage_min_rows`. A column outside the contract: its share equal to the label against `copy_threshold`, its rows
against `leakage_min_rows` and, on fewer, the chance of so many equal values against `copy_chance`.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register
from guard.statistics import association_fit, covered, is_number
from profiles.relations import Relations, learn_relations

__all__ = [
    "check_leakage",
    "association_jump",
]


@register("leakage")
def check_leakage(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot
    ctx.require_sample()
    label, sample = ctx.contract.label_column, ctx.snapshot.sample
    if label is None or label not in sample:
        return  # no label declared, or missing (the schema check)
    learned = _learned(ctx)
    for column in ctx.contract.features:
        if column.name in sample:
            if learned and _comparable(learned, column.name, label):
                yield from _jump_calls(ctx, learned, column.name, label)
                finding = association_jump(ctx, learned, column.name, label)
            else:
                fit = _fit(ctx, column.name, label)
                yield from _absolute_calls(ctx, column.name, fit)
                scored = (
                    (covered(*fit[:2]), fit[2]) if fit is not None and fit[2] >= ctx.policy.leakage_min_rows else None
                )
                if scored is not None:
                    top = max(scored[0].values(), default=0.0)
                    yield ClosestCall("leakage_threshold", column.name, top, ctx.policy.leakage_threshold)
                finding = _determines_label(ctx, column.name, label, scored)
            if finding is not None:
                yield finding
    for name in sample.columns:
        if ctx.contract.column(name) is None:
            yield from _copy_calls(ctx, name, label)
            finding = _copies_label(ctx, name, label)
            if finding is not None:
                yield finding


def _fit(ctx: GuardContext, name: str, label: str) -> tuple[dict[str, float], float, int] | None:
    """The feature's association scores with the label, its mapping scored whatever the share of rows its halves
    cover, that share, and the sampled rows holding both (`statistics.association_fit`); None under three rows. The
    absolute rule reads `covered` scores, and only on `policy.leakage_min_rows` rows or more."""
    assert ctx.snapshot is not None
    pair = ctx.snapshot.sample[[name, label]].dropna()
    if len(pair) < 3:
        return None
    scores, coverage = association_fit(pair[name], pair[label])
    return scores, coverage, len(pair)


def _absolute_calls(
    ctx: GuardContext, name: str, fit: tuple[dict[str, float], float, int] | None
) -> Iterator[ClosestCall]:
    """The absolute rule's other two limits: the rows holding both values against `policy.leakage_min_rows` (deciding
    where the scores reach `leakage_threshold`), and the share of rows the mapping's halves cover against
    `policy.leakage_min_coverage` (deciding where the mapping, scored anyway, reaches it, with the rows needed and no
    correlation reaching it already)."""
    if fit is None:
        return
    scores, coverage, rows = fit
    policy = ctx.policy
    enough = rows >= policy.leakage_min_rows
    top = max(covered(scores, coverage).values(), default=0.0)
    yield ClosestCall("leakage_min_rows", name, rows, policy.leakage_min_rows, decides=top >= policy.leakage_threshold)
    if not math.isnan(coverage):
        mapped = scores.get("mapping", 0.0) >= policy.leakage_threshold
        correlated = scores.get("correlation", 0.0) >= policy.leakage_threshold
        decides = enough and mapped and not correlated
        yield ClosestCall("leakage_min_coverage", name, coverage, policy.leakage_min_coverage, decides=decides)


def _determines_label(
    ctx: GuardContext, name: str, label: str, scored: tuple[dict[str, float], int] | None
) -> Finding | None:
    if scored is None:
        return None
    scores, rows = scored
    if not scores or max(scores.values()) < ctx.policy.leakage_threshold:
        return None
    strongest = max(scores, key=lambda key: scores[key])
    return make_finding(
        FindingKind.TARGET_LEAKAGE,
        ctx.dataset_urn,
        name,
        observed=round(scores[strongest], 4),
        expected=ctx.policy.leakage_threshold,
        scores={k: round(v, 4) for k, v in scores.items()},
        statistic=strongest,
        sample_rows=rows,
        label=label,
        message=f"{name!r} nearly determines the label {label!r} ({strongest} {scores[strongest]:.3f} over "
        f"{rows} sampled rows, limit {ctx.policy.leakage_threshold}): is it computed from the outcome?",
    )


def _learned(ctx: GuardContext) -> tuple[Relations, Relations] | None:
    """(reference, batch) relations when the reference keeps associations."""
    assert ctx.snapshot is not None
    reference = ctx.reference_profile
    if reference is None or reference.relations is None or not reference.relations.spread:
        return None
    batch = ctx.snapshot.profile.relations or learn_relations(
        ctx.snapshot.sample, {n: c.logical_type for n, c in ctx.snapshot.profile.columns.items()}
    )
    return reference.relations, batch


def _comparable(learned: tuple[Relations, Relations], name: str, label: str) -> bool:
    return all(relations.association(name, label) is not None for relations in learned)


def _jump_calls(
    ctx: GuardContext, learned: tuple[Relations, Relations], name: str, label: str
) -> Iterator[ClosestCall]:
    """The three limits `association_jump` compares, each deciding where the other two and the rows needed held."""
    reference, batch = learned
    before, now = reference.association(name, label), batch.association(name, label)
    high = reference.highest_association(name, label)
    if before is None or now is None or high is None:
        return
    (_, was, _), (_, seen, rows) = before, now
    policy = ctx.policy
    z = (_fisher(seen) - _fisher(was)) * math.sqrt(rows - 3) if rows > 3 else -math.inf
    enough = rows >= policy.leakage_min_rows
    over_floor, over_high, over_z = (
        seen >= policy.leakage_jump_floor,
        seen >= high + policy.leakage_jump,
        z >= policy.leakage_jump_z,
    )
    yield ClosestCall("leakage_jump", name, seen - high, policy.leakage_jump, decides=enough and over_floor and over_z)
    yield ClosestCall(
        "leakage_min_rows", name, rows, policy.leakage_min_rows, decides=over_floor and over_high and over_z
    )
    yield ClosestCall(
        "leakage_jump_floor", name, seen, policy.leakage_jump_floor, decides=enough and over_high and over_z
    )
    if rows > 3:
        yield ClosestCall("leakage_jump_z", name, z, policy.leakage_jump_z, decides=enough and over_floor and over_high)


def association_jump(ctx: GuardContext, learned: tuple[Relations, Relations], name: str, label: str) -> Finding | None:
    """A finding when the feature's association with the label rose past every reference batch's."""
    reference, batch = learned
    before, now = reference.association(name, label), batch.association(name, label)
    high = reference.highest_association(name, label)
    if before is None or now is None or high is None:
        return None
    key, was, _ = before
    _, seen, rows = now
    rise = _fisher(seen) - _fisher(was)
    if (
        seen < ctx.policy.leakage_jump_floor
        or seen < high + ctx.policy.leakage_jump
        or rows < ctx.policy.leakage_min_rows
        or rise * math.sqrt(rows - 3) < ctx.policy.leakage_jump_z
    ):
        return None
    return make_finding(
        FindingKind.TARGET_LEAKAGE,
        ctx.dataset_urn,
        name,
        observed=round(seen, 4),
        expected=round(high, 4),
        statistic="association_jump",
        association=key.split(":")[0],
        reference_association=round(was, 4),
        reference_batch_high=round(high, 4),
        association_rows=rows,
        label=label,
        message=f"{name!r}'s association with the label {label!r} jumped to {seen:.3f} (reference {was:.3f}, highest "
        f"batch {high:.3f}): computed from the outcome on some rows?",
    )


def _fisher(value: float) -> float:
    return math.atanh(min(value, 0.999999))


def _copy_calls(ctx: GuardContext, name: str, label: str) -> Iterator[ClosestCall]:
    """A column outside the contract: its share equal to the label against `policy.copy_threshold`, and what else a
    copy needs, `policy.leakage_min_rows` labelled rows or, on fewer, a chance of so many equal values at most
    `policy.copy_chance` (either suffices: each of the two decides where the other does not hold)."""
    assert ctx.snapshot is not None
    pair = ctx.snapshot.sample[[name, label]]
    pair = pair[pair[label].notna()]
    if pair.empty:
        return
    policy = ctx.policy
    share = _equal_share(pair[name], pair[label])
    chance = _chance_of_matches(pair[label], round(share * len(pair)))
    equal, enough, unlikely = (
        share >= policy.copy_threshold,
        len(pair) >= policy.leakage_min_rows,
        chance <= policy.copy_chance,
    )
    yield ClosestCall("copy_threshold", name, share, policy.copy_threshold, decides=enough or unlikely)
    yield ClosestCall("leakage_min_rows", name, len(pair), policy.leakage_min_rows, decides=equal and not unlikely)
    if not enough:
        yield ClosestCall("copy_chance", name, chance, policy.copy_chance, False, decides=equal)


def _copies_label(ctx: GuardContext, name: str, label: str) -> Finding | None:
    assert ctx.snapshot is not None
    pair = ctx.snapshot.sample[[name, label]]
    pair = pair[pair[label].notna()]
    if pair.empty:
        return None
    share = _equal_share(pair[name], pair[label])
    chance = _chance_of_matches(pair[label], round(share * len(pair)))
    if share < ctx.policy.copy_threshold or (
        len(pair) < ctx.policy.leakage_min_rows and chance > ctx.policy.copy_chance
    ):
        return None
    return make_finding(
        FindingKind.TARGET_LEAKAGE,
        ctx.dataset_urn,
        name,
        observed=round(share, 4),
        expected=ctx.policy.copy_threshold,
        statistic="equal_share",
        sample_rows=len(pair),
        chance=float(f"{chance:.3g}"),
        label=label,
        message=f"column {name!r}, not in the contract, equals the label {label!r} on {share:.1%} of "
        f"{len(pair)} sampled rows: a copy of the outcome",
    )


def _chance_of_matches(label: pd.Series, matches: int) -> float:
    """The most a column independent of the label could match it on `matches` rows by chance: p^matches, p the
    largest share of one label value (a column always on the label's mode matches it the most often)."""
    mode_share = float(label.astype(str).value_counts(normalize=True).iloc[0])
    return math.exp(matches * math.log(mode_share)) if mode_share < 1 else 1.0


def _equal_share(column: pd.Series, label: pd.Series) -> float:
    if is_number(column) and is_number(label):
        x, y = column.to_numpy(dtype=float, na_value=np.nan), label.to_numpy(dtype=float, na_value=np.nan)
        return float(np.isclose(x, y, rtol=1e-9, atol=0.0).mean())
    return float((column.astype(str) == label.astype(str)).fillna(False).mean())
