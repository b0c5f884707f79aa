"""Volume: the snapshot's row count must not collapse against the rows the reference expects of it.

Against a `Reference` that is the median reference batch (a batch is compared with a batch, not with
the reference's history); against a bare whole-table profile, that profile's row count.
"""
from __future__ import annotations

import math
from typing import Iterator

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register

__all__ = ["check_volume", "MIN_ROW_FRACTION"]

MIN_ROW_FRACTION = 0.5  # fewer rows than this share of the expected rows is a collapse


@register("volume", per_column=False, needs_reference=True)
def check_volume(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot and ctx.expected_rows is not None
    observed, reference = ctx.snapshot.profile.row_count, ctx.expected_rows
    if observed >= reference * MIN_ROW_FRACTION:
        return
    minimum = math.ceil(reference * MIN_ROW_FRACTION)
    shown = int(reference) if float(reference).is_integer() else round(reference, 1)
    yield make_finding(
        FindingKind.VOLUME_DROP, ctx.dataset_urn, None, observed=observed, expected=minimum,
        reference_rows=shown, fraction=round(observed / reference, 6),
        message=f"the snapshot has {observed} rows, {observed / reference:.1%} of the {shown} expected; "
                f"at least {minimum} ({MIN_ROW_FRACTION:.0%}) are expected: look for a partial load upstream")
