"""Real-data fixtures load offline and fast, in time order, and the false-alarm walk measures the guard.

The walk's numbers are a baseline, not a target yet (`make bench-realdata` prints them all): this test
holds the machinery to account — batches cover every row once in time order, the guard's view of each
batch (one pass over the table file) matches the batch's rows, the walk is deterministic, and a failure
today's guard already names is reported as detected.
"""
from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from chaos.falsealarms import INJECTIONS, GuardJudge, inject, load_batches, true_cause, walk
from chaos.realdata import DATASETS, GUARD_UNITS
from guard.contract import LOGICAL_TYPES

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("name", sorted(DATASETS))
def test_each_dataset_loads_offline_fast_tidy_and_in_time_order(name: str) -> None:
    dataset = DATASETS[name]
    started = time.perf_counter()
    frame = dataset.frame()
    assert time.perf_counter() - started < 2.0
    stamps = frame[dataset.time_column]
    assert str(stamps.dtype) == "datetime64[ms, UTC]" and stamps.notna().all()
    assert stamps.is_monotonic_increasing and stamps.is_unique  # the time is the key where none is declared
    assert len(frame) >= 1_000 and stamps.max() - stamps.min() >= pd.Timedelta(days=360)
    contract = dataset.contract()
    assert contract.label_column in frame and contract.event_timestamp_column == dataset.time_column
    assert all(c.logical_type in LOGICAL_TYPES for c in contract.columns)
    assert all(c.unit is None or c.unit in GUARD_UNITS.values() for c in contract.columns)
    batches = dataset.batches()
    assert sum(len(rows) for _, rows in batches) == len(frame)
    assert all(a[1][dataset.time_column].max() < b[1][dataset.time_column].min() for a, b in zip(batches, batches[1:]))
    assert len(batches) > dataset.reference_batches + 5


def test_seattle_weather_has_the_shapes_the_guard_must_survive() -> None:
    frame = DATASETS["seattle_weather"].frame()
    assert 0.5 < (frame["precipitation"] == 0).mean() < 0.65  # zero-inflated
    tmy = DATASETS["greensboro_tmy"].frame()
    assert (tmy["ceiling_height"] == 77_777).mean() > 0.4  # a sentinel point mass
    assert (tmy["ghi"] == 0).mean() > 0.4 and tmy["time"].dt.hour.nunique() == 24  # hourly, dark at night


def test_the_walk_reads_each_batch_once_and_is_deterministic(tmp_path: Path) -> None:
    dataset = DATASETS["seattle_weather"]
    batches = load_batches(dataset, tmp_path)
    for batch in batches[:12]:
        assert batch.snapshot.profile.row_count == len(batch.frame)
        assert batch.snapshot.profile.columns["precipitation"].zero_count == int((batch.frame.precipitation == 0).sum())
    first = walk(dataset, batches, GuardJudge(dataset.contract()), limit=6)
    second = walk(dataset, batches, GuardJudge(dataset.contract()), limit=6)
    assert first.batches == 6 and first.false_blocks == second.false_blocks
    assert len(first.window) == dataset.reference_batches
    for batch_id, reasons in first.false_blocks:
        assert reasons, f"{batch_id} blocked without a blocking finding"


def test_an_injected_label_copy_is_caught_by_todays_guard(tmp_path: Path) -> None:
    dataset = DATASETS["seattle_weather"]
    batches = load_batches(dataset, tmp_path)
    copy = next(i for i in INJECTIONS if i.name == "label copy")
    candidate = inject(batches[-1].frame, dataset, copy, tmp_path, "copy")
    assert "weather_observed" in candidate.snapshot.profile.columns
    outcome = GuardJudge(dataset.contract()).judge(batches[-7:-1], candidate)
    kind, columns = true_cause(dataset, "label copy")
    assert outcome.blocked and f"{kind}:{columns[0]}" in outcome.reasons
