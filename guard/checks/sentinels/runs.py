"""A value stuck in one run (the frozen rule of `guard.checks.sentinels.check`): the longest run of a value in
event-time order among the sampled values, and whether chance at the value's reference share makes a run that long.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.findings import Condition
from guard.policy import Policy
from guard.statistics import run_chance
from profiles.profile import ColumnProfile
from profiles.sketches import KLL_RANK_ERROR

__all__ = ["NO_RUN", "Run", "longest_run", "runs_of", "share_bound", "stuck", "time_order"]


def time_order(ctx: GuardContext) -> np.ndarray | None:
    """The sample's rows with an event time, in event-time order (ties as sampled); None without an event time."""
    assert ctx.contract is not None and ctx.snapshot is not None
    time, sample = ctx.contract.event_timestamp_column, ctx.snapshot.sample
    if time is None or time not in sample:
        return None
    timed = sample[time].notna().to_numpy()
    return np.flatnonzero(timed)[sample[time][timed].argsort(kind="stable").to_numpy()]


@dataclass(frozen=True)
class Run:
    """The longest run of one value: `rows` in a row, of the `of` sampled values in event-time order."""

    rows: int
    of: int

    @property
    def share(self) -> float:
        return self.rows / self.of if self.of else 0.0


NO_RUN = Run(0, 0)


def runs_of(ctx: GuardContext, name: str, wanted: list[float], order: np.ndarray | None) -> Mapping[float, Run]:
    """The `wanted` values' longest runs in event-time order (`order`, `time_order`) among the sampled values: what
    the frozen rule reads (`longest_run`), for those values at once. A run is a reading repeated: a value on one row
    between others has none (0 rows), whatever the batch's size, so a small batch's single row is not a run of a
    thirtieth of it."""
    assert ctx.snapshot is not None
    if order is None:
        return {}
    floats = pd.to_numeric(ctx.snapshot.sample[name], errors="coerce").to_numpy(dtype=float, na_value=np.nan)[order]
    ordered = floats[np.isfinite(floats)]
    if not len(ordered):
        return {}
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    lengths = np.diff(np.concatenate([starts, [len(ordered)]]))
    firsts = ordered[starts]
    kept = np.isin(firsts, wanted)  # a judged value's runs only: a continuous column has a run per row
    held, at = np.unique(firsts[kept], return_inverse=True)
    longest = np.zeros(len(held), dtype=np.int64)
    np.maximum.at(longest, at, lengths[kept])
    repeated = np.where(longest >= 2, longest, 0)  # one row alone repeats no reading: it is no run
    return {value: Run(int(rows), len(ordered)) for value, rows in zip(held.tolist(), repeated.tolist())}


def longest_run(ctx: GuardContext, name: str, value: float) -> Run:
    """The longest run of `value` in event-time order among the sampled values (none with no event time). A row
    sample keeps a stuck stretch in one run: every sampled row inside it holds the value."""
    return runs_of(ctx, name, [value], time_order(ctx)).get(value, NO_RUN)


def stuck(policy: Policy, share: float, run: Run, bound: float) -> tuple[Condition, Condition]:
    """A value stuck in one run: its run's share of the values (never more than the value's share of the batch)
    against `policy.frozen_run_share`, and the chance that a value at `bound`, its most by the reference's evidence,
    stands that many rows in a row by chance (`run_chance`) against `policy.frozen_run_chance`."""
    held = min(share, run.share)
    chance = run_chance(run.rows, run.of, bound)
    return (
        Condition("frozen_run_share", held, policy.frozen_run_share, held >= policy.frozen_run_share),
        Condition("frozen_run_chance", chance, policy.frozen_run_chance, chance < policy.frozen_run_chance, False),
    )


def share_bound(reference: ColumnProfile, was: float, exact: bool) -> float:
    """The most of the reference's values one value may hold by its evidence: the share it showed, plus the error
    of the two sketch ranks it was read between where it was not counted exactly, and never under the rule of
    three's 3 / N after N values without it."""
    least = 3.0 / reference.values if reference.values > 0 else 1.0
    return min(1.0, max(least, was + (0.0 if exact else 2 * KLL_RANK_ERROR)))
