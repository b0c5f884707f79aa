"""benchmarks/policy_lodo.py: each threshold is chosen on the other domains' clean batches by one rule, and a held-out
domain's clean batches and failures are judged at the value chosen without it."""

from __future__ import annotations

import dataclasses
import math

import pytest

from benchmarks.policy_lodo import (
    MEASURED,
    UNMEASURED,
    Batch,
    Blocker,
    blocks_failure,
    chosen_limit,
    joint,
    leave_one_out,
)
from guard.findings import ClosestCall
from guard.policy import DEFAULT, Policy

FAR = next(m for m in MEASURED if m.field == "far")  # tightest 1 (the band's edge), shipped 2


def far(statistic: float, decides: bool = True, column: str = "x") -> ClosestCall:
    return ClosestCall("far", column, statistic, 2.0, decides=decides, check="units")


def clean(domain: str, *calls: ClosestCall) -> Batch:
    return Batch(f"table-{domain}", domain, "batch", True, calls)


def failure(domain: str, calls: tuple[ClosestCall, ...], blockers: tuple[Blocker, ...]) -> Batch:
    return Batch(f"table-{domain}", domain, "failure", False, calls, blockers, bool(blockers))


SHIFT = Blocker("units", "scale_shift", "x")
BATCHES = [
    clean("a", far(0.5), far(1.2, decides=False)),  # a call that does not decide never chooses nor blocks
    clean("b", far(1.4)),
    clean("c", far(0.8)),
    failure("a", (far(3.0),), (SHIFT,)),
    failure("b", (far(1.2),), ()),  # missed at the shipped value
    failure("c", (far(2.5),), (SHIFT,)),
]


def test_the_limit_is_the_clean_edge_moved_out_by_the_margin_and_held_between_the_tightest_and_the_shipped() -> None:
    assert chosen_limit([0.5, 1.4], True, 1.0, 2.0, false_alarm=1.0) == (1.75, 1.75)  # 1.4 x 1.25, no bound
    assert chosen_limit([0.6], True, 1.0, 2.0) == (0.75, 1.0)  # no nearer than the tightest the meaning allows
    assert chosen_limit([3.0], True, 1.0, 2.0) == (3.75, 2.0)  # never looser than shipped
    assert chosen_limit([-0.1], True, 0.0, 0.2) == (-0.08, 0.0)  # a signed edge moves outward too
    assert chosen_limit([1.0, 0.9], False, 1.0, 0.5, false_alarm=1.0) == (0.72, 0.72)  # from above: the lowest / 1.25
    assert chosen_limit([0.3], False, 1.0, 0.5) == (0.24, 0.5)
    assert chosen_limit([], True, 1.0, 2.0) == (None, 2.0)  # nothing to choose on: the shipped value stays


def test_the_limit_is_never_nearer_than_cantellis_bound_on_the_other_tables_statistics() -> None:
    rule, chosen = chosen_limit([0.5, 1.4], True, 1.0, 2.0)  # two statistics far apart: little is known of a third
    assert rule == pytest.approx(0.95 + math.sqrt(99) * 0.6364, rel=1e-3) and chosen == 2.0
    tight = [1.0, 1.0, 1.0, 1.01]  # statistics that agree: the clean edge x 1.25 is past the bound
    assert chosen_limit(tight, True, 1.0, 2.0) == (1.2625, 1.2625)
    assert chosen_limit([0.0, 0.0, 0.0], True, 0.0, 0.98) == (None, 0.98)  # never moved: nothing of its spread
    rule, chosen = chosen_limit([1.0, 0.9], False, 1.0, 0.5)  # from above: the mean less k sd
    assert rule == pytest.approx(0.95 - math.sqrt(99) * 0.07071, rel=1e-3) and chosen == 0.5


def test_each_domain_is_judged_at_the_value_chosen_on_the_others() -> None:
    rows = {row.domain: row for row in leave_one_out(BATCHES, FAR, false_alarm=1.0)}  # the edge rule alone
    assert {d: r.chosen for d, r in rows.items()} == {"a": 1.75, "b": 1.0, "c": 1.75}
    b = rows["b"]  # its clean edge (1.4) lies past what the others allow (0.8 x 1.25)
    assert (b.clean, b.false_blocks_chosen, b.false_blocks_shipped) == (1, 1, 0)
    assert (b.failures, b.blocked_chosen, b.blocked_shipped) == (1, 1, 0)  # tighter: the missed failure is caught
    assert all(
        r.false_blocks_chosen == 0 and r.blocked_chosen == r.blocked_shipped == 1 for r in (rows["a"], rows["c"])
    )
    figures = joint(
        BATCHES,
        list(rows.values())
        + [r for m in MEASURED if m.field != "far" for r in leave_one_out(BATCHES, m, false_alarm=1.0)],
    )
    assert (figures["clean_blocked_chosen"], figures["clean_blocked_shipped"], figures["model_disagrees"]) == (1, 0, 0)
    assert (figures["blocked_chosen"], figures["blocked_shipped"], figures["blocked_recorded"]) == (3, 2, 2)


def test_a_failure_stays_blocked_by_what_the_moved_threshold_does_not_govern() -> None:
    beyond = ClosestCall("unexplained", "x", 12.0, 10.0, check="units")  # crossing it blocks as a DRIFT
    shifted = failure("a", (far(2.5), beyond), (SHIFT,))
    assert blocks_failure(shifted, {"far": 3.0})  # the SCALE_SHIFT goes, the far-beyond drift is left
    alone = failure("a", (far(2.5),), (SHIFT,))
    assert not blocks_failure(alone, {"far": 3.0}) and blocks_failure(alone, {"far": 2.0})
    renamed = failure("a", (far(2.5),), (SHIFT, Blocker("schema", "column_renamed", "y")))
    assert blocks_failure(renamed, {"far": 3.0})


def test_every_policy_field_is_measured_or_says_why_not() -> None:
    measured = [m.field.partition("[")[0] for m in MEASURED]
    fields = {f.name for f in dataclasses.fields(Policy)}
    assert set(measured) | set(UNMEASURED) == fields and not set(measured) & set(UNMEASURED)
    assert len({m.field for m in MEASURED}) == len(MEASURED)
    gap = next(m for m in MEASURED if m.field == "swap_gap_ratio[1]")  # one end of a pair of limits
    assert gap.shipped == DEFAULT.swap_gap_ratio[1]
    for m in MEASURED:  # a field whose tightest value is its shipped one would leave nothing to choose
        assert m.tightest != m.shipped, m.field
