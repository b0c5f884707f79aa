"""What a line of evidence of `guard.checks.swaps` says once it names two columns swapped: the finding, with both
columns and what to swap back (every row, or the rows of a broken order).
"""

from __future__ import annotations

from typing import Mapping

from guard.context import GuardContext
from guard.findings import Finding, make_finding, window_rows
from guard.kinds import FindingKind

NUMERIC_TYPES = ("number", "integer")


def natural_swapped_back(ctx: GuardContext, low: str, high: str) -> bool:
    """Each column's values read as the other's sit within that one's natural variation: swapping back restores
    them (a rescaled column does not become its partner's natural values)."""
    back = (ctx.natural_distance(low, values_of=high), ctx.natural_distance(high, values_of=low))
    return all(d is not None and d <= 1 for d in back)


def swapped_on_every_row(
    ctx: GuardContext, a: str, b: str, evidence: Mapping[str, object], medians: dict[str, float], message: str
) -> Finding:
    """A swap of every row of the batch."""
    assert ctx.snapshot is not None
    return swapped_finding(ctx, a, b, "all", None, int(ctx.snapshot.profile.row_count), evidence, medians, message)


def swapped_finding(
    ctx: GuardContext,
    a: str,
    b: str,
    scope: str,
    order: list[str] | None,
    rows: int,
    evidence: Mapping[str, object],
    medians: dict[str, float],
    message: str,
) -> Finding:
    return make_finding(
        FindingKind.COLUMNS_SWAPPED,
        ctx.dataset_urn,
        a,
        observed={"swapped_with": b, "scope": scope, "rows": rows},
        expected={"swapped_with": None},
        playbook="swap_columns",
        columns=[a, b],
        scope=scope,
        order=order,
        rows_swapped=rows,
        observed_medians=medians,
        evidence=evidence,
        rows=window_rows(ctx),
        message=message,
    )
