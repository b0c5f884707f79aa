"""Table shapes, not datasets: a periodic panel is counted in periods, and a value constant within every batch by
construction (a period's month or flag) is the period's value, not a placeholder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind, Severity
from guard.runner import run_guard
from profiles.batches import split_batches
from profiles.reference import build_reference

URN = "urn:li:dataset:(urn:li:dataPlatform:file,panel,PROD)"
ENTITIES = 40


def _panel(periods: int, *, last_rows: int = ENTITIES, seed: int = 5) -> pd.DataFrame:
    """One row per entity and period, every row of a period stamped with its first instant."""
    rng = np.random.default_rng(seed)
    frames = []
    for i in range(periods):
        rows = ENTITIES if i < periods - 1 else last_rows
        frames.append(
            pd.DataFrame(
                {
                    "period": pd.Timestamp(f"{2001 + i}-01-01", tz="UTC"),
                    "entity": [f"e{j:02d}" for j in range(rows)],
                    "level": rng.normal(50 + i, 5, rows).round(2),
                    "flag": int(i >= periods - 1),  # switches on with the newest period
                }
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    frame["period"] = frame["period"].astype("datetime64[ms, UTC]")
    return frame


def _guard(tmp_path: Path, frame: pd.DataFrame, kept: int):
    path = tmp_path / "panel.parquet"
    frame.to_parquet(path, index=False)
    snapshots = split_batches(path, time_column="period", cadence="month")
    contract = Contract(
        URN,
        (
            ColumnContract("period", "timestamp", primary_key=True),
            ColumnContract("entity", "string", primary_key=True),
            ColumnContract("level", "number"),
            ColumnContract("flag", "integer"),
        ),
        event_timestamp_column="period",
    )
    reference = build_reference([s.batch for s in snapshots[:kept]])  # type: ignore[misc]
    assert reference.periodic
    newest = snapshots[kept]
    return run_guard(GuardContext(URN, contract, newest, reference, (), now_ms=newest.batch.end_ms + 3_600_000))  # type: ignore[union-attr]


def _kinds(report) -> set[FindingKind]:
    return {f.kind for f in report.findings if f.severity is Severity.BLOCK}


def test_a_panel_batch_of_every_entity_at_one_instant_has_the_volume_of_one_period(tmp_path: Path) -> None:
    report = _guard(tmp_path, _panel(7), kept=6)
    assert not {FindingKind.VOLUME_DROP, FindingKind.VOLUME_SPIKE} & {f.kind for f in report.findings}


def test_a_panel_period_missing_most_of_its_entities_is_a_volume_drop(tmp_path: Path) -> None:
    report = _guard(tmp_path, _panel(7, last_rows=ENTITIES // 4), kept=6)
    (drop,) = [f for f in report.findings if f.kind is FindingKind.VOLUME_DROP]
    assert drop.severity is Severity.BLOCK and "a period" in drop.params["basis"]


def test_a_flag_constant_in_every_batch_switching_on_is_no_placeholder(tmp_path: Path) -> None:
    report = _guard(tmp_path, _panel(7), kept=6)
    assert not [
        f for f in report.findings if f.column == "flag" and f.kind in (FindingKind.SENTINEL, FindingKind.DRIFT)
    ]
    assert not _kinds(report)  # a value beyond the reference's range is news (a warning), not a failure


def test_a_placeholder_written_into_part_of_a_period_column_is_still_a_sentinel(tmp_path: Path) -> None:
    frame = _panel(7)
    newest = frame.index[frame["period"] == frame["period"].max()]
    frame.loc[newest[: ENTITIES // 4], "level"] = -9999.0
    report = _guard(tmp_path, frame, kept=6)
    assert any(f.kind is FindingKind.SENTINEL and f.column == "level" for f in report.findings)


def test_a_placeholder_on_two_rows_of_an_unbounded_column_is_a_sentinel(tmp_path: Path) -> None:
    frame = _panel(7)  # `level` is a signed quantity: the contract bounds it nowhere
    newest = frame.index[frame["period"] == frame["period"].max()]
    frame.loc[newest[:2], "level"] = -9999.0  # far below anything its history held, however few rows
    report = _guard(tmp_path, frame, kept=6)
    (found,) = [f for f in report.findings if f.kind is FindingKind.SENTINEL and f.column == "level"]
    assert found.severity is Severity.BLOCK and found.params["value"] == -9999
