"""guard/checks/volume.py: rows against the reference's median batch, scaled by the batch's time, counted in periods
for panels."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from guard.checks.volume import check_volume
from guard.kinds import FindingKind, Severity
from guard.kinds import FindingKind as K
from profiles.profile import DatasetProfile

import deliveries_support
from deliveries_support import context, eta_frame, findings, kinds_and_columns, snapshot_of
from panel_support import ENTITIES, _guard, _panel
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


def test_a_panel_period_missing_most_of_its_entities_is_a_volume_drop(tmp_path: Path) -> None:
    report = _guard(tmp_path, _panel(7, last_rows=ENTITIES // 4), kept=6)
    (drop,) = [f for f in report.findings if f.kind is FindingKind.VOLUME_DROP]
    assert drop.severity is Severity.BLOCK and "a period" in drop.params["basis"]
