"""chaos/corpus/realdata.py: the real datasets load offline and fast, in time order, with the shapes the guard must survive."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from chaos.corpus.realdata import DATASETS
from guard.contract import LOGICAL_TYPES
from guard.units import is_known

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
    assert all(c.unit is None or is_known(c.unit) for c in contract.columns)  # pint's spellings, all of them
    assert [c.unit for c in contract.columns] == [c.unit for c in dataset.columns]
    batches = dataset.batches()
    assert sum(len(rows) for _, rows in batches) == len(frame)
    assert all(a[1][dataset.time_column].max() < b[1][dataset.time_column].min() for a, b in zip(batches, batches[1:]))
    assert len(batches) > dataset.reference_batches + 5


def test_the_daily_table_has_the_shapes_the_guard_must_survive() -> None:
    frame = DATASETS["seattle_weather"].frame()
    assert 0.5 < (frame["precipitation"] == 0).mean() < 0.65  # zero-inflated
    tmy = DATASETS["greensboro_tmy"].frame()
    assert (tmy["ceiling_height"] == 77_777).mean() > 0.4  # a sentinel point mass
    assert (tmy["ghi"] == 0).mean() > 0.4 and tmy["time"].dt.hour.nunique() == 24  # hourly, dark at night
