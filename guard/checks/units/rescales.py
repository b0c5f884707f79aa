"""Units of the same rows read again (`guard.checks.units`): a batch that passed earlier against its kept profile,
where a named conversion maps every kept quantile and extreme onto today's exactly, and a column rescaled with no
unit, read against a partner column that kept its scale.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np

from guard.checks.units.hypotheses import unit_mismatch_of
from guard.context import GuardContext
from guard.contract import ColumnContract
from guard.findings import ClosestCall, Condition, Finding, make_finding, rule_calls
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.units import candidates_for, conversion
from guard.variation import (
    Natural,
    core,
    sketched,
    weighted_items,
)
from profiles.profile import BatchProfile, ColumnProfile
from profiles.reference import Reference
from profiles.relations import Relations, resolution


def its_own(reference: Reference, batch: BatchProfile | None) -> bool:
    """The reference is this batch's own profile, kept when it passed (the history check): the same rows."""
    return batch is not None and [b.batch_id for b in reference.batches] == [batch.batch_id]


def _kept_and_now(kept: ColumnProfile, now: ColumnProfile) -> np.ndarray | None:
    """(kept, today's) pairs of every profiled quantile and extreme of the same rows; None when they cannot show a
    map (fewer than two distinct kept values) or show none (every value as it was)."""
    pairs = [(k, now.quantile(q)) for q, k in kept.quantiles] + [
        (kept.minimum, now.minimum),
        (kept.maximum, now.maximum),
    ]
    known = np.array([(k, n) for k, n in pairs if k is not None and n is not None], dtype=float)
    if len(known) < 2 or len(np.unique(known[:, 0])) < 2 or np.allclose(known[:, 0], known[:, 1], rtol=1e-9, atol=0.0):
        return None
    return known


def same_rows_converted(urn: str, column: ColumnContract, kept: ColumnProfile, now: ColumnProfile) -> Finding | None:
    """The same rows, every value converted: a named conversion maps each kept quantile and extreme onto today's
    exactly (a monotone map keeps each value's rank), however few values there are beside a point mass."""
    assert column.unit is not None
    known = _kept_and_now(kept, now)
    if known is None:
        return None
    for unit in candidates_for(column.unit):
        scale, offset = conversion(column.unit, unit)
        if np.allclose(known[:, 1], known[:, 0] * scale + offset, rtol=1e-6, atol=1e-9):
            return unit_mismatch_of(
                urn,
                column.name,
                column.unit,
                unit,
                observed={"unit": unit, "median": now.quantile(0.5), "same_rows": True},
                expected={"unit": column.unit, "median": kept.quantile(0.5)},
                message=f"{column.name!r} is in {unit}, the contract says {column.unit} (x{scale:.6g} {offset:+.6g}): "
                "these rows passed earlier, and every kept quantile converted is today's exactly",
            )
    return None


def rescaled_without_unit(
    ctx: GuardContext, column: ColumnContract, observed: ColumnProfile, calls: list[ClosestCall]
) -> Finding | None:
    """A numeric column that declares no unit has no conversion to name, but one plan still inverts a rescaling
    (a count written per thousand, a share written as a percentage): dividing by one factor. SCALE_SHIFT (a block)
    where that plan alone explains the change:
    - the same rows that passed earlier (the history check): every kept quantile and extreme times one factor is
      today's exactly;
    - a new batch (a feature): it sits beyond `policy.unexplained` of natural variation as it came (where, with no
      cause named, the drift check blocks it), or it has values outside the contract's bounds (where the range
      check blocks it) and the factor that puts them back inside brings the batch nearer its natural variation too
      (a few bad values are not every value times one factor: dividing all by the factor that fits them moves the
      rest away; and a calendar field whose batches each hold another stretch of it varies so widely from batch
      to batch that its band says little where its bounds say much); its shape is one the
      reference batches had, and divided by the factor
      that brings it nearest its natural variation it is inside it (and inside the bounds). A slow cycle moves a
      level by steps and reshapes it; it does not multiply every value by one number. Either way the batch was
      blocked already: the name is what changes, never the verdict;
    - a new batch of a feature not blocked as it came: rescaled against a partner (`_rescaled_against_partner`,
      whose closest calls go to `calls`), a block."""
    assert ctx.contract is not None and ctx.snapshot is not None and ctx.reference_profile is not None
    reference, kept = ctx.reference, ctx.reference_profile.columns.get(column.name)
    if not isinstance(reference, Reference) or kept is None or not kept.quantiles:
        return None
    if its_own(reference, ctx.snapshot.batch):
        return _same_rows_rescaled(ctx.dataset_urn, column.name, kept, observed)
    features = {c.name for c in ctx.contract.features}
    if column.name not in features or ctx.spans_batches or not (sketched(kept) and sketched(observed)):
        return None
    if reference.held_per_batch(column.name) or reference.holds_the_periods_value(column.name, observed):
        return None  # one value per batch: no spread to show a rescaling by
    assert observed.sketch is not None and kept.sketch is not None
    natural = Natural.of(reference, kept, None, reference.shorter_by(ctx.snapshot.batch))
    as_is = core(observed.sketch, natural.atom)
    d0 = natural.measure(as_is)[0]
    blocked = d0 is not None and (d0 > POLICY.unexplained or _outside(column, observed))
    if d0 is None or not natural.keeps_shape(as_is)[0]:
        return None
    if not blocked:
        return _rescaled_against_partner(ctx, column.name, observed, natural, d0, calls)
    rescaled = _within_bounds(column, observed, natural, natural.plain_rescale(observed.sketch, kept.sketch))
    if rescaled is None or rescaled[1] > 1 or (d0 <= POLICY.unexplained and rescaled[1] >= d0):
        return None  # out of bounds alone: the factor must bring the batch nearer natural variation too
    factor, back = rescaled
    return make_finding(
        FindingKind.SCALE_SHIFT,
        ctx.dataset_urn,
        column.name,
        observed={"distance": round(d0, 3), "factor": round(factor, 6), "distance_rescaled_back": round(back, 3)},
        expected={"median": kept.quantile(0.5), "far": POLICY.unexplained},
        message=f"{column.name!r} moved {d0:.1f}x as far as its natural variation allows and divided by {factor:.4g} "
        f"it is back inside ({back:.2f}x the band), its shape kept: rescaled upstream? (no unit is declared to name "
        "a conversion)",
    )


def _rescaled_against_partner(
    ctx: GuardContext, name: str, observed: ColumnProfile, natural: Natural, d0: float, calls: list[ClosestCall]
) -> Finding | None:
    """SCALE_SHIFT (a block) for a feature not blocked as it came, when a partner says it was rescaled: a column it
    followed in every reference batch (|correlation| at least `policy.pair_scale_correlation`), against which its
    scale (`profiles.relations` "k:a|b", log(sd b / sd a)) moved from the middle of the range those batches span by
    more than `policy.far` bands (a band: one and a half times that range, and three sampling errors of the batch's
    own ratio). Two plans invert that move: the column divided by its factor, or the partner multiplied by it. The column
    is named when its plan brings it nearer its natural variation (and inside it) while the partner's would take the
    partner further from its own; otherwise the batch cannot say which of the two moved, and nothing is named. A
    level that drifts moves both columns of a pair that moves together; a rescaling of one moves it alone.

    Closest calls, per partner whose scale against the column moved: the least |correlation| its pair held over the
    reference batches against `pair_scale_correlation`, and the move against `far`, each deciding where the other
    held and the partner's plan named the column (read partner by partner, the farthest among those held named)."""
    assert ctx.snapshot is not None and ctx.reference_profile is not None and observed.sketch is not None
    reference = ctx.reference
    kept, now = ctx.reference_profile.relations, ctx.snapshot.profile.relations
    if kept is None or now is None or not isinstance(reference, Reference) or len(reference.batches) < 3:
        return None
    moves = list(_scale_moves(kept, now, name))
    for partner, factor, distance, held in moves:
        follows, moved = held >= POLICY.pair_scale_correlation, distance > POLICY.far
        named = (follows or moved) and _named_by(ctx, reference, observed, natural, d0, partner, factor) is not None
        calls += rule_calls(  # neither held: no call decides, and the plans are not tried
            name,
            Condition("pair_scale_correlation", held, POLICY.pair_scale_correlation, follows),
            Condition("far", distance, POLICY.far, moved),
            when=named,
        )
    followed = [move for move in moves if move[3] >= POLICY.pair_scale_correlation]
    farthest = max(followed, key=lambda move: move[2], default=None)
    if farthest is None or farthest[2] <= POLICY.far:
        return None
    partner, factor, distance, _ = farthest
    plans = _named_by(ctx, reference, observed, natural, d0, partner, factor)
    if plans is None:
        return None
    back, rival = plans
    return make_finding(
        FindingKind.SCALE_SHIFT,
        ctx.dataset_urn,
        name,
        observed={
            "distance": round(d0, 3),
            "partner": partner,
            "scale_distance": round(distance, 3),
            "factor": round(factor, 6),
            "distance_rescaled_back": round(back, 3),
            "partner_distance": [round(rival[0], 3), round(rival[1], 3)],
        },
        expected={"far": POLICY.far, "correlation_at_least": POLICY.pair_scale_correlation},
        message=f"{name!r} against {partner!r}, which it followed in every reference batch, moved {distance:.1f}x as far "
        f"as those batches allow (limit {POLICY.far:g}); divided by {factor:.4g}, {name!r} comes back from {d0:.2f}x to "
        f"{back:.2f}x its natural variation, while {partner!r} multiplied by it would leave its own ({rival[0]:.2f}x to "
        f"{rival[1]:.2f}x): rescaled upstream?",
    )


def _named_by(
    ctx: GuardContext,
    reference: Reference,
    observed: ColumnProfile,
    natural: Natural,
    d0: float,
    partner: str,
    factor: float,
) -> tuple[float, tuple[float, float]] | None:
    """(the column's distance divided by `factor`, the partner's as it came and multiplied by it) where the column's
    plan brings it nearer its natural variation and inside it while the partner's would take the partner further
    from its own; None where the batch cannot say which of the two moved."""
    assert observed.sketch is not None
    back = natural.measure(core(observed.sketch, natural.atom, factor))[0]
    rival = _distances(ctx, reference, partner, 1 / factor)
    if back is None or back > 1 or back >= d0 or rival is None or rival[1] <= rival[0]:
        return None
    return back, rival


def _scale_moves(kept: Relations, now: Relations, name: str) -> Iterator[tuple[str, float, float, float]]:
    """(partner, factor, distance, held) for each numeric column paired with `name`: the factor `name` would have
    been multiplied by to move the pair's scale as far as the batch did, that move in bands (see
    `_rescaled_against_partner`), and the least |correlation| the pair held over the reference batches (a partner
    is followed at `policy.pair_scale_correlation` or more)."""
    for key, pair in now.pairs.items():
        a, b = key.split("|")
        ratio = pair.log_scale
        if name not in (a, b) or pair.correlation is None or ratio is None or pair.n < 3:
            continue
        held, scale = kept.spread.get(f"r:{key}"), kept.spread.get(f"k:{key}")
        if held is None or scale is None:
            continue
        low, high = scale
        error = math.sqrt(max(1.0 - pair.correlation**2, 0.0) / (pair.n - 2))  # of a log ratio of two spreads
        band = 1.5 * (high - low) + 3 * error
        if band <= 0:
            continue
        moved = ratio - (low + high) / 2
        yield (b if name == a else a), math.exp(-moved if name == a else moved), abs(moved) / band, held[0]


def _distances(ctx: GuardContext, reference: Reference, name: str, factor: float) -> tuple[float, float] | None:
    """A numeric column's distance from its natural variation as it came and divided by `factor` (None: unknown)."""
    assert ctx.snapshot is not None and ctx.reference_profile is not None
    observed, kept = ctx.snapshot.profile.columns.get(name), ctx.reference_profile.columns.get(name)
    if observed is None or kept is None or not (sketched(observed) and sketched(kept)) or observed.sketch is None:
        return None
    natural = Natural.of(reference, kept, None, reference.shorter_by(ctx.snapshot.batch))
    as_is = natural.measure(core(observed.sketch, natural.atom))[0]
    moved = natural.measure(core(observed.sketch, natural.atom, factor))[0]
    return None if as_is is None or moved is None else (as_is, moved)


def _outside(column: ColumnContract, observed: ColumnProfile, factor: float = 1.0) -> bool:
    """Whether the batch divided by `factor` has a value outside the contract's bounds (where the range check
    blocks). Divided back, a value may miss its bound by the rounding the writer did after rescaling (half the step
    of the batch's values, over the factor: whole weeks times 2.5 written as whole numbers), and by float rounding."""
    assert observed.minimum is not None and observed.maximum is not None
    written = _written(observed) if factor != 1.0 else 0.0

    def slack(bound: float) -> float:
        return written / factor + 1e-9 * max(1.0, abs(bound))

    low, high = observed.minimum / factor, observed.maximum / factor
    return (column.minimum is not None and low < column.minimum - slack(column.minimum)) or (
        column.maximum is not None and high > column.maximum + slack(column.maximum)
    )


def _written(observed: ColumnProfile) -> float:
    """Half the step the batch's values are written on (0.5 for whole numbers), from its sketch's retained items."""
    return resolution(weighted_items(observed.sketch)[0]) if observed.sketch is not None else 0.0


def _within_bounds(
    column: ColumnContract, observed: ColumnProfile, natural: Natural, rescaled: tuple[float, float] | None
) -> tuple[float, float] | None:
    """The rescale (factor, distance) whose inverse also keeps the contract's bounds: the nearest one if it does,
    else the nearest of the factors that keep both (positive bounds: from the maximum's over the upper bound to the
    minimum's over the lower, each widened by the writer's rounding; tried at its ends and its middle, and the
    factors that put an extreme on its bound), since the search's nearest factor is only as exact as a batch of
    repeated values lets it be (clamped into that range it would be one of its ends); None when no factor keeps
    both."""
    if rescaled is None or not _outside(column, observed, rescaled[0]):
        return rescaled
    assert observed.sketch is not None and observed.minimum is not None and observed.maximum is not None
    written, lowest, highest = _written(observed), 0.0, math.inf
    if column.maximum is not None and column.maximum > 0 and observed.maximum > 0:
        lowest = (observed.maximum - written) / column.maximum
    if column.minimum is not None and column.minimum > 0 and observed.minimum > 0:
        highest = (observed.minimum + written) / column.minimum
    ends = [f for f in (lowest, highest) if 0 < f < math.inf]
    extremes = ((observed.maximum, column.maximum), (observed.minimum, column.minimum))
    onto = [value / bound for value, bound in extremes if bound]
    tried = {*ends, *([sum(ends) / 2] if len(ends) == 2 else []), *onto}
    kept = []
    for factor in sorted(f for f in tried if f > 0 and not _outside(column, observed, f)):
        found = natural.measure(core(observed.sketch, natural.atom, factor))[0]
        if found is not None:
            kept.append((factor, found))
    return min(kept, key=lambda pair: pair[1], default=None)


def _same_rows_rescaled(urn: str, name: str, kept: ColumnProfile, now: ColumnProfile) -> Finding | None:
    """The same rows, every value times one factor: each kept quantile and extreme maps onto today's exactly."""
    known = _kept_and_now(kept, now)
    if known is None:
        return None
    factor = float(known[:, 0] @ known[:, 1] / (known[:, 0] @ known[:, 0]))
    if factor <= 0 or not np.allclose(known[:, 1], known[:, 0] * factor, rtol=1e-6, atol=1e-9):
        return None
    return make_finding(
        FindingKind.SCALE_SHIFT,
        urn,
        name,
        observed={"factor": round(factor, 6), "median": now.quantile(0.5), "same_rows": True},
        expected={"median": kept.quantile(0.5)},
        message=f"{name!r} is x{factor:.6g} what it was: these rows passed earlier, and every kept quantile times "
        f"{factor:.6g} is today's exactly (no unit is declared to name a conversion)",
    )
