"""Units and scale: block only on a named conversion (or a change far beyond natural variation).

Against a batch `Reference` (per-batch summaries of natural variation, KLL sketches on both sides):

1. The batch is summarised as `guard.variation` does (core location, core spread, share on the point
   mass) and its distance d0 from natural variation is measured (<= 1: inside): the nearer of its
   distance from the reference batches' band and of its step from the newest reference batch against
   the steps they took (a slow cycle moving on is a run of ordinary steps).
2. d0 <= 1 and the batch's values on the reference's decimal grid (below): nothing to say. Otherwise every unit of the declared unit's group (`guard.units`) is tried
   as a hypothesis: the batch converted back from it (x -> (x - offset) / scale, the conversion's exact
   factor and offset) is summarised and measured the same way, d_u.
3. A **good fit** for unit u (the closest of the candidates), either of:
   - far: the batch as it came sits beyond `policy.far` (d0 > `policy.far`) and converted back from u inside natural
     variation (d_u <= 1; not merely back within `policy.far`: x7.3 is not km/h (x3.6) with some drift left over);
   - a jump: the batch as it came sits outside natural variation (d0 > 1) and its step from the newest
     reference batch is beyond `policy.far` of the steps the reference batches took from one to the next, while
     converted back from u it is inside natural variation (d_u <= 1) and its step is an ordinary one
     (<= 1). Slow cycles move by steps; a unit change is a discontinuity. (Needs three reference batches.)
   and in both, converted back, its core keeps a shape the reference batches had (`guard.variation.shape`:
   where the median sits in the quartiles, the tails against the body; within `policy.far`): an affine map keeps
   shapes, so a good fit is one where the conversion alone explains the change.
   Then UNIT_MISMATCH names u (a block): the conversion's factor and offset explain the change; what is
   left is no more than natural variation. Unless the runner-up unit is a good fit too and fits less than
   `policy.unit_margin` further (lengths in metres or in yards, 9% apart, on a short batch whose band is
   wider than that): then the batch cannot say which. UNIT_MISMATCH still names the nearer (its failure
   mode, as memory fingerprints it) with both in `explained_by`, but with no playbook: a heal by the nearer
   alone would be a guess, and a wrong factor still verifies inside the band. What decides is the past: the
   verified heal of this very failure mode (`controlplane.stages.memory.reuse`), else it stays blocked.
   The least-squares affine map of the core's quantiles (observed against reference) is reported as
   evidence beside the conversion's own factor and offset.
   Or, from the values themselves: the reference's values sit on a decimal grid (0.1 mm, whole W/m2)
   that most of the batch's values left, and converted back from u they are on it again, and nearer natural
   variation than they came (`_Grid`). A conversion moves values off their grid and undoing it restores it
   exactly; no slow cycle does that. It names a unit inside natural variation (a month of small amounts in
   inches, as far out as 1.02x the band) and in a batch unlike any past one (a week of low readings in kW/m2).
4. Beyond `policy.far`, its shape kept (a rescaling), and no unit explains it: SCALE_SHIFT (a block: x2.5 with
   no unit).
5. Beyond `policy.far` with a changed shape (noise added, a broken feed) and no cause named: DRIFT, a block. A change
   twice as far as any past batch moved, that nothing explains, is evidence of a failure, not a slow cycle.
6. Otherwise (between 1 and `policy.far`): DRIFT, a warning (recorded, not a block): a change of the size or kind past
   batches show is not evidence of a failure.

A snapshot covering more than `policy.multi_batch_cadences` cadences (a whole table judged against a reference of batches)
mixes several batches' stretches of a cycle: its spread is wider than any one batch's by construction. A named
conversion still blocks it; an unexplained distance does not (DRIFT, a warning), since it is not
evidence of a failure.

`policy.far` = 2: twice as far from the centre of natural variation as the band's edge, where the band already
spans every reference batch, one more step of the largest batch-to-batch move, and three standard
errors of the new batch's own statistic. A point-mass column (one value >= 10% of rows: zeros of a
zero-inflated column, a visibility of 16,100 m) is judged on its core, and its point is a statistic of
its own: degC -> degF moves the point, so the conversion is still seen. Fewer than MIN_CORE values
beside the point and nothing else to judge: UNIT_UNCHECKED, a warning that says the check cannot judge.

Against a batch's own kept profile (the history check: a batch that passed earlier, read again, its rows the
same), a named conversion maps every kept quantile and extreme onto today's exactly, whatever the number of
values (a month with three non-zero days): UNIT_MISMATCH. Otherwise the batch is judged as above, against a
reference of that one batch: values emptied by a broken join leave a subset of the same rows, which moves
quantiles by sampling, not by a unit.

A numeric column that declares no unit has one hypothesis left, a rescaling by a factor no unit names: SCALE_SHIFT
where dividing by one factor alone explains the change (`_rescaled_without_unit`): the same rows that passed
earlier, every kept quantile times one factor exactly today's; or a new batch of a feature beyond
`policy.unexplained` as it came (where the drift check blocks it anyway), or outside the contract's bounds (where
the range check does) and nearer natural variation once divided, its shape kept, and back inside natural variation
(and the bounds)
divided by the factor that brings it nearest: there the name is what changes, not the verdict. A batch of a feature
that nothing blocks as it came is a SCALE_SHIFT, a block, when a partner it followed in every reference batch says it
was rescaled: their scale against each other moved beyond `policy.far`, the factor of that move brings the column
nearer its natural variation (and inside it), and the same factor would take the partner further from its own
(`_rescaled_against_partner`). A column whose own level varies widely from batch to batch (a panel of entities of
every size) hides a rescaling inside its band; against a column it moves with, the same rescaling is far outside.

Closest calls, per column with a unit against natural variation: d0 against `far` and `unexplained`, the cadences
the snapshot spans against `multi_batch_cadences`, and where the reference's values sit on a grid, the grid's
three limits (`_grid_calls`); against a bare profile, the fit's scale and offset against their tolerances
(`_profile_calls`). `unit_margin` and `match_scale_tolerance` decide which unit is named and whether it is healed,
never whether the batch blocks: they have none.

Against a bare whole-table profile (DataHub's datasetProfile: nine quantiles, no sketch, no batch
history) the check fits an affine map on the 10-90% quantiles and names the unit whose factor and offset
match within fixed tolerances (measured on 40 seeds of the demo table), as before; quantiles that tie on
a point mass are fitted on the distinct ones, and a reference whose quantiles all tie cannot be judged
(UNIT_UNCHECKED) rather than read as scale 0.
"""

from __future__ import annotations

from typing import Iterator

from guard.checks.units.fits import profile_calls, profile_finding
from guard.checks.units.hypotheses import batch_finding
from guard.checks.units.rescales import its_own, rescaled_without_unit, same_rows_converted
from guard.context import GuardContext
from guard.contract import ColumnContract
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.policy import DEFAULT as POLICY
from guard.registry import register
from guard.units import UNITS
from guard.variation import (
    Natural,
    core,
    sketched,
)
from profiles.profile import ColumnProfile
from profiles.reference import Reference

__all__ = ["check_units", "judge_units"]


_NUMERIC = ("number", "integer")


@register("units")
def check_units(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot and ctx.reference_profile is not None
    for column in ctx.contract.columns:
        yield from judge_units(ctx, column)


def judge_units(ctx: GuardContext, column: ColumnContract) -> Iterator[Finding | ClosestCall]:
    """The units check's finding for one column, if any, and against a batch reference its closest calls."""
    assert ctx.snapshot is not None and ctx.reference_profile is not None
    observed = ctx.snapshot.profile.columns.get(column.name)
    if observed is None or observed.logical_type not in _NUMERIC or not observed.values:
        return
    if column.unit is None:
        calls: list[ClosestCall] = []
        yield from _present(rescaled_without_unit(ctx, column, observed, calls))
        yield from calls
        return
    if column.unit not in UNITS:
        raise ValueError(
            f"column {column.name!r} declares unit {column.unit!r}, which the guard cannot read: "
            "write it in pint's spelling (m, km, mile, degC, degF, mph, hPa, percent, USD...)"
        )
    reference = ctx.reference_profile.columns.get(column.name)
    if reference is None or not reference.quantiles:
        yield make_finding(
            FindingKind.REFERENCE_MISSING,
            ctx.dataset_urn,
            column.name,
            observed=None,
            expected="reference quantiles",
            message=f"no reference profile for {column.name!r}",
        )
        return
    if isinstance(ctx.reference, Reference) and its_own(ctx.reference, ctx.snapshot.batch):
        converted = same_rows_converted(ctx.dataset_urn, column, reference, observed)
        if converted is not None:
            yield converted
            return
    if isinstance(ctx.reference, Reference) and sketched(reference) and sketched(observed):
        yield from _batch_judged(ctx, column, ctx.reference, reference, observed)
        return
    assert ctx.contract is not None
    yield from profile_calls(column.name, reference, observed, strict=column.name != ctx.contract.label_column)
    yield from _present(
        profile_finding(
            ctx.dataset_urn,
            column.name,
            column.unit,
            reference,
            observed,
            strict=column.name != ctx.contract.label_column,
        )
    )


def _present(finding: Finding | None) -> Iterator[Finding]:
    if finding is not None:
        yield finding


def _batch_judged(
    ctx: GuardContext, column: ColumnContract, reference: Reference, ref: ColumnProfile, observed: ColumnProfile
) -> Iterator[Finding | ClosestCall]:
    """A column with a unit against natural variation: its closest calls (its distance as it came against `far` and
    `unexplained`), then its finding, if any."""
    assert ctx.snapshot is not None and observed.sketch is not None
    natural = Natural.of(reference, ref, column.unit, reference.shorter_by(ctx.snapshot.batch))
    as_is = core(observed.sketch, natural.atom)
    measured = natural.measure(as_is)
    grid_calls: list[ClosestCall] = []
    finding = batch_finding(
        ctx.dataset_urn, column, natural, ref, observed, as_is, measured, ctx.spans_batches, grid_calls
    )
    if measured[0] is not None:
        named = finding is not None and finding.kind is FindingKind.UNIT_MISMATCH
        kept = natural.keeps_shape(as_is)[0]
        yield from _closest_calls(column, measured[0], kept, ctx.spans_batches, named)
        yield from _cadences_call(ctx, column, measured[0], kept, named)
    yield from grid_calls
    yield from _present(finding)


def _closest_calls(
    column: ColumnContract, d0: float, shape_kept: bool, multi: bool, named: bool
) -> Iterator[ClosestCall]:
    """d0 against `far` (crossing it blocks where the shape was kept: SCALE_SHIFT) and against `unexplained`
    (crossing it blocks either way: a blocking DRIFT, or the SCALE_SHIFT first). Neither decides for a named
    conversion or a whole table of several batches, nor `unexplained` for a column its contract makes drift-blocking."""
    free = not multi and not named
    yield ClosestCall("far", column.name, d0, POLICY.far, decides=free and shape_kept)
    yield ClosestCall("unexplained", column.name, d0, POLICY.unexplained, decides=free and not column.drift_blocking)


def _cadences_call(
    ctx: GuardContext, column: ColumnContract, d0: float, shape_kept: bool, named: bool
) -> Iterator[ClosestCall]:
    """The cadences the snapshot spans against `policy.multi_batch_cadences` (fewer: one batch): deciding where, no
    unit named, the distance would block one batch (beyond `far` with its shape kept, or beyond `unexplained`)."""
    spanned = ctx.cadences_spanned
    if spanned is None:
        return
    blocks = (d0 > POLICY.far and shape_kept) or (d0 > POLICY.unexplained and not column.drift_blocking)
    decides = not named and blocks
    yield ClosestCall("multi_batch_cadences", column.name, spanned, POLICY.multi_batch_cadences, False, decides)
