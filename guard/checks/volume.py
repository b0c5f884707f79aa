"""Volume: the snapshot's row count must not collapse against the reference's."""
from __future__ import annotations

import math
from typing import Iterator

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register

__all__ = ["check_volume", "MIN_ROW_FRACTION"]

MIN_ROW_FRACTION = 0.5  # fewer rows than this share of the reference's is a collapse


@register("volume", per_column=False, needs_reference=True)
def check_volume(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot and ctx.reference is not None
    observed, reference = ctx.snapshot.profile.row_count, ctx.reference.row_count
    if observed >= reference * MIN_ROW_FRACTION:
        return
    minimum = math.ceil(reference * MIN_ROW_FRACTION)
    yield make_finding(
        FindingKind.VOLUME_DROP, ctx.dataset_urn, None, observed=observed, expected=minimum,
        reference_rows=reference, fraction=round(observed / reference, 6),
        message=f"the snapshot has {observed} rows, {observed / reference:.1%} of the reference's {reference}; "
                f"at least {minimum} ({MIN_ROW_FRACTION:.0%}) are expected: look for a partial load upstream")
