"""Sums and ratios the reference always held: `relation_broken`.

An identity c = a + b or c = a * b (a difference or a ratio, read the other way) that held on at least
HELD of at least MIN_ROWS informative reference rows (`guard.relations`) is evaluated on the batch's row
sample with the same tolerance (half the finest decimal step of c); broken on at least MIN_BROKEN rows and
BROKEN_SHARE of them, it is a finding on c. The cause may be elsewhere (a unit change in a or b, a swap):
a finding that names it explains this one (`guard.causes`).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register
from guard.relations import identity_holds, informative_rows, resolution

__all__ = ["check_relations", "parse_identity", "HELD", "MIN_ROWS", "MIN_BROKEN", "BROKEN_SHARE"]

HELD = 0.999
MIN_ROWS = 50
MIN_BROKEN = 3
BROKEN_SHARE = 0.01


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
    if reference is None or reference.relations is None:
        return
    sample = ctx.snapshot.sample
    for key, (holds, tested) in reference.relations.identities.items():
        c, a, op, b = parse_identity(key)
        if tested < MIN_ROWS or holds / tested < HELD or not {a, b, c} <= set(sample.columns):
            continue
        finding = _judge(ctx, key, _floats(sample[c]), _floats(sample[a]), _floats(sample[b]), op, c)
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
    if broken < MIN_BROKEN or share < BROKEN_SHARE:
        return None
    return make_finding(
        FindingKind.RELATION_BROKEN,
        ctx.dataset_urn,
        target,
        observed={"relation": key, "broken_share": round(share, 6)},
        expected={"relation": key, "broken_share": 0.0},
        relation=key,
        broken_rows=broken,
        tested_rows=int(rows.sum()),
        message=f"{key} held on every reference row; it is broken on {broken} of {int(rows.sum())} sampled rows "
        f"({share:.1%}): one of its columns changed",
    )
