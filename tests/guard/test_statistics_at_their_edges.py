"""Every statistic the guard reads is defined at its edges: shares of 0 and 1, a column null on every row of a
batch, one distinct value, one row. Property-based (hypothesis): tables of daily batches whose columns switch
between such regimes from batch to batch go through the profiler, the kept reference and the whole guard, and
no check may raise (a `check_error` finding fails closed, but it is the guard's error, not the data's)."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind
from guard.runner import run_guard
from guard.statistics import natural_null_share, never_seen_chance, null_rate, run_chance
from profiles.batches import split_batches
from profiles.reference import build_reference

URN = "urn:li:dataset:(urn:li:dataPlatform:file,edges,PROD)"
REGIMES = ("varied", "all_null", "constant", "half_null", "zeros")
CONTRACT = Contract(
    URN,
    (
        ColumnContract("at", "timestamp"),
        ColumnContract("amount", "number", required=False),
        ColumnContract("count", "integer", required=False),
        ColumnContract("kind", "string", required=False),
        ColumnContract("target", "number", required=False),
    ),
    label_column="target",
    event_timestamp_column="at",
)


def _numbers(regime: str, rows: int, rng: np.random.Generator, integer: bool) -> pd.Series:
    values = rng.poisson(4, rows).astype(float) if integer else rng.normal(100, 15, rows)
    if regime == "all_null":
        values[:] = np.nan
    elif regime == "constant":
        values[:] = 7.0
    elif regime == "half_null":
        values[::2] = np.nan
    elif regime == "zeros":
        values[:] = 0.0
    return pd.Series(values).astype("Int64" if integer else "float64")


def _kinds(regime: str, rows: int, rng: np.random.Generator) -> pd.Series:
    if regime == "all_null":
        return pd.Series([None] * rows, dtype="string")
    if regime in ("constant", "zeros"):
        return pd.Series(["a"] * rows, dtype="string")
    values = pd.Series(rng.choice(["a", "b", "c"], rows), dtype="string")
    if regime == "half_null":
        values[::2] = None
    return values


def _batch(day: int, rows: int, regimes: tuple[str, str, str, str], seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed + day)
    start = pd.Timestamp("2020-01-01", tz="UTC") + pd.Timedelta(days=day)
    return pd.DataFrame(
        {
            "at": start + pd.to_timedelta(np.sort(rng.integers(0, 86_400, rows)), unit="s"),
            "amount": _numbers(regimes[0], rows, rng, integer=False),
            "count": _numbers(regimes[1], rows, rng, integer=True),
            "kind": _kinds(regimes[2], rows, rng),
            "target": _numbers(regimes[3], rows, rng, integer=False),
        }
    )


batch_plan = st.tuples(st.sampled_from((1, 2, 3, 40)), st.tuples(*(st.sampled_from(REGIMES) for _ in range(4))))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(plans=st.lists(batch_plan, min_size=3, max_size=6), seed=st.integers(0, 1000))
def test_no_check_raises_on_batches_at_the_edges_of_their_statistics(plans, seed):
    frame = pd.concat([_batch(day, rows, regimes, seed) for day, (rows, regimes) in enumerate(plans)])
    frame["at"] = frame["at"].astype("datetime64[ms, UTC]")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "edges.parquet"
        frame.to_parquet(path, index=False)
        snapshots = split_batches(path, time_column="at", cadence="day")
        assert len(snapshots) == len(plans)
        reference = build_reference([s.batch for s in snapshots[:-1]])  # type: ignore[misc]
        newest = snapshots[-1]
        now_ms = newest.batch.end_ms + 3_600_000  # type: ignore[union-attr]
        report = run_guard(with_repeats_counted(GuardContext(URN, CONTRACT, newest, reference, (), now_ms=now_ms)))
    errors = [f for f in report.findings if f.kind is FindingKind.CHECK_ERROR]
    assert not errors, [f.message for f in errors]


@pytest.mark.parametrize("shares", [(1.0,), (0.0, 1.0), (1.0, 0.0, 1.0), (0.0, 0.0), (0.9, 1.0)])
def test_the_natural_null_share_is_a_share_for_a_column_null_on_every_row_of_some_batch(tmp_path, shares):
    frames = [
        _batch(day, 20, ("all_null" if share == 1.0 else "varied",) + ("varied",) * 3, seed=1)
        for day, share in enumerate(shares)
    ]
    frame = pd.concat(frames)
    frame["at"] = frame["at"].astype("datetime64[ms, UTC]")
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    reference = build_reference(
        [s.batch for s in split_batches(tmp_path / "t.parquet", time_column="at", cadence="day")]
    )  # type: ignore[misc]
    for rows in (1, 20, 10_000):
        found = natural_null_share(reference, "amount", rows)
        assert 0.0 <= found <= 1.0 and math.isfinite(found)
        evidence = null_rate(reference, "amount", rows)
        assert 0.0 <= evidence.rate <= 1.0 and math.isfinite(evidence.spread) and evidence.spread >= 0.0
        assert all(0.0 <= evidence.tail(share) <= 1.0 for share in (0.0, 0.5, 1.0))


@given(
    st.integers(min_value=0, max_value=100_000),
    st.integers(min_value=0, max_value=100_000),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_the_chance_of_rows_with_new_nulls_is_a_chance_at_every_edge(seen: int, reference_rows: int, part: float):
    rows = int(round(seen * part))
    evidence = never_seen_chance(rows, seen, reference_rows)
    assert 0.0 <= evidence.rate <= 1.0 and 0.0 <= evidence.chance <= 1.0 and 0.0 <= evidence.share <= 1.0
    assert evidence.chance == 1.0 if rows == 0 else math.isfinite(evidence.chance)
    if rows and reference_rows and seen:
        assert never_seen_chance(rows, seen, reference_rows * 2).chance <= evidence.chance  # more evidence, rarer


@given(
    st.integers(min_value=-1, max_value=100_000),
    st.integers(min_value=0, max_value=100_000),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_the_chance_of_a_run_is_a_chance_at_every_edge(run: int, rows: int, share: float):
    """Defined for no run, a run of one row, a run longer than the rows, and shares of 0 and 1; a longer run of the
    same value is never likelier, nor is a rarer value's."""
    chance = run_chance(run, rows, share)
    assert 0.0 <= chance <= 1.0
    assert chance == 1.0 if run <= 1 else (chance == 0.0 if run > rows else math.isfinite(chance))
    assert run_chance(run + 1, rows, share) <= chance or run <= 0
    assert run_chance(run, rows, share / 2) <= chance
