"""guard/checks/volume.py: rows against the reference's median batch, scaled by the batch's time, counted in periods
for panels."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guard.checks.volume import check_volume, grid_of
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind, Severity
from guard.kinds import FindingKind as K
from guard.runner import run_guard
from profiles.batches import split_batches
from profiles.profile import DatasetProfile
from profiles.reference import build_reference

import deliveries_support
from deliveries_support import context, eta_frame, findings, kinds_and_columns, snapshot_of
from panel_support import ENTITIES, URN, _guard, _panel
from readings_support import blocking, judge, week


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> DatasetProfile:
    return deliveries_support.reference(tmp_path_factory)


def test_volume_passes_a_table_as_large_as_the_reference(tmp_path: Path, reference: DatasetProfile) -> None:
    assert findings(check_volume, context(snapshot_of(tmp_path, eta_frame(1)), reference)) == []


def test_volume_reports_a_partial_load_missing_a_fifth_of_the_reference(
    tmp_path: Path, reference: DatasetProfile
) -> None:
    found = findings(check_volume, context(snapshot_of(tmp_path, eta_frame(1, rows=4_800)), reference))  # 40% lost
    assert kinds_and_columns(found) == [(FindingKind.VOLUME_DROP, None)]
    assert (found[0].observed, found[0].expected, found[0].playbook) == (4_800, 6_400, None)
    assert found[0].severity is Severity.BLOCK and found[0].params["reference_rows"] == 8_000


def test_volume_edges_empty_table_blocks_and_four_fifths_exactly_pass(
    tmp_path: Path, reference: DatasetProfile
) -> None:
    empty = findings(check_volume, context(snapshot_of(tmp_path, eta_frame(1).head(0), "empty"), reference))
    assert kinds_and_columns(empty) == [(FindingKind.VOLUME_DROP, None)] and empty[0].observed == 0
    half = snapshot_of(tmp_path, eta_frame(1, rows=6_400), "four-fifths")
    assert findings(check_volume, context(half, reference)) == []
    assert findings(check_volume, context(half, DatasetProfile(row_count=0, columns={}))) == []


def test_volume_spike_blocks_and_a_partial_week_is_scaled_by_its_time(tmp_path, table):
    batch = week(table, 9)
    spike = judge(tmp_path, table, pd.concat([batch] * 40, ignore_index=True))
    assert (K.VOLUME_SPIKE.value, None) in blocking(spike)
    partial = judge(tmp_path, table, batch.head(30))  # 30 hours of a week: expected ~30 rows, not 168
    assert not {f.kind for f in partial.findings} & {K.VOLUME_DROP, K.VOLUME_SPIKE}


def test_a_panel_batch_of_every_entity_at_one_instant_has_the_volume_of_one_period(tmp_path: Path) -> None:
    report = _guard(tmp_path, _panel(7), kept=6)
    assert not {FindingKind.VOLUME_DROP, FindingKind.VOLUME_SPIKE} & {f.kind for f in report.findings}


@pytest.mark.parametrize("last_rows", [ENTITIES // 4, ENTITIES - 2])
def test_a_panel_period_missing_any_of_its_entities_is_a_volume_drop(tmp_path: Path, last_rows: int) -> None:
    """Every kept period held the same entities: a full grid, so two entities missing are rows lost, not noise
    (one may be a reading missed once)."""
    report = _guard(tmp_path, _panel(7, last_rows=last_rows), kept=6)
    (drop,) = [f for f in report.findings if f.kind is FindingKind.VOLUME_DROP]
    assert drop.severity is Severity.BLOCK and "full grid" in drop.params["basis"]
    assert (drop.observed, drop.expected) == (last_rows, ENTITIES - 1)


def _series(tmp_path: Path, stamps: pd.DatetimeIndex, dropped: int, set_aside: int = 0) -> list:
    """One reading at each of `stamps`, cut into months; the newest month less `dropped` rows drawn at random, of
    which a heal set aside `set_aside` (the snapshot is its training view)."""
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"at": stamps.astype("datetime64[ms, UTC]"), "level": rng.normal(10, 2, len(stamps))})
    newest = frame.index[frame["at"] >= frame["at"].max().normalize().replace(day=1)]
    frame = frame.drop(rng.choice(newest[1:-1], dropped, replace=False))
    path = tmp_path / "series.parquet"
    frame.to_parquet(path, index=False)
    contract = Contract(URN, (ColumnContract("at", "timestamp"), ColumnContract("level", "number")), "at")
    snapshots = split_batches(path, time_column="at", cadence="month")
    reference = build_reference([s.batch for s in snapshots[:-1]])  # type: ignore[misc]
    newest_batch = snapshots[-1]
    assert newest_batch.batch is not None and newest_batch.batch.end_ms is not None
    context = GuardContext(URN, contract, newest_batch, reference, (), newest_batch.batch.end_ms + 1)
    report = run_guard(replace(context, rows_set_aside=set_aside))
    return [f for f in report.findings if f.kind in (K.VOLUME_DROP, K.VOLUME_SPIKE)]


@pytest.mark.parametrize("dropped", [0, 1, 2, 10])
def test_a_regular_series_is_a_full_grid_and_every_hole_in_it_is_rows_lost(tmp_path: Path, dropped: int) -> None:
    """An hourly series, months of 672 to 744 rows: 10 rows lost is 1.3% of a month, far inside any spread a rate
    could allow, but no kept month ever missed an hour; two missed are rows lost."""
    found = _series(tmp_path, pd.date_range("2020-01-01", "2020-07-31 23:00", freq="h", tz="UTC"), dropped)
    if dropped <= 1:  # one reading missed once is the grid's own
        assert found == []
    else:
        (drop,) = found
        assert drop.kind is K.VOLUME_DROP and drop.expected - drop.observed == dropped - 1, drop.message
        assert "every 1 hours" in drop.message


def test_rows_a_heal_set_aside_are_the_batchs_own_so_its_training_view_is_no_drop(tmp_path: Path) -> None:
    stamps = pd.date_range("2020-01-01", "2020-07-31 23:00", freq="h", tz="UTC")
    assert _series(tmp_path, stamps, 10, set_aside=10) == []
    (drop,) = _series(tmp_path, stamps, 10, set_aside=5)  # five more lost than were set aside
    assert drop.kind is K.VOLUME_DROP


def test_business_days_are_slots_of_no_one_length_so_no_grid_is_read_into_them(tmp_path: Path) -> None:
    stamps = pd.bdate_range("2020-01-01", "2020-07-31", tz="UTC")
    assert _series(tmp_path, stamps, 0) == []
    for cadence in ("month", "week"):  # a week of weekdays is a day a row from its first to its last, not its window
        snapshots = split_batches(_written(tmp_path, stamps), time_column="at", cadence=cadence)
        assert grid_of(build_reference([s.batch for s in snapshots]).batches) is None  # type: ignore[misc]


def _written(tmp_path: Path, stamps: pd.DatetimeIndex) -> Path:
    path = tmp_path / "days.parquet"
    pd.DataFrame({"at": stamps.astype("datetime64[ms, UTC]"), "level": 1.0}).to_parquet(path, index=False)
    return path
