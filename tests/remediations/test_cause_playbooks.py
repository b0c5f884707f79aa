"""The cause playbooks and the quarantine: exact, invertible corrections on exactly the rows a finding names,
idempotent, refusing what they cannot do exactly; rows that cannot be corrected are set aside, never filled;
and, on real data, a broken join's published table holds no invented cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from chaos.corpus.falsealarms import load_batches
from chaos.corpus.realdata import DATASETS
from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding, RowSelector, make_finding
from guard.kinds import FindingKind
from guard.runner import run_guard
from profiles.reference import build_reference
from profiles.snapshot import read_snapshot
from remediations.registry import HealInput, HealStep, PlaybookRefused, playbook_for
from remediations.rows import row_key
from remediations.sandbox import QUARANTINE_FILE, HealOutcome, heal_copy

URN = "urn:li:dataset:(urn:li:dataPlatform:file,test.heals,PROD)"
CONTRACT = Contract(
    URN,
    (
        ColumnContract("id", "integer", primary_key=True),
        ColumnContract("time", "timestamp"),
        ColumnContract("hour_utc", "integer"),
        ColumnContract("low", "number", unit="C"),
        ColumnContract("high", "number", unit="C"),
        ColumnContract("distance", "number", unit="km"),
        ColumnContract("label", "number"),
    ),
    label_column="label",
    event_timestamp_column="time",
)
MS = 1_000_000  # ns per ms


def rows(n: int = 12) -> pd.DataFrame:
    time = pd.date_range("2025-03-01", periods=n, freq="2h", tz="UTC").astype("datetime64[ms, UTC]")
    return pd.DataFrame(
        {
            "id": np.arange(n),
            "time": time,
            "hour_utc": time.hour.astype(np.int64),
            "low": np.arange(n, dtype=float),
            "high": np.arange(n, dtype=float) + 5,
            "distance": np.linspace(1, 12, n),
            "label": np.linspace(10, 40, n),
        }
    )


def finding(kind: FindingKind, column: str | None, playbook: str, rows: Any = None, **params: Any) -> Finding:
    selector = RowSelector.from_dict(rows) if rows is not None else None
    return make_finding(
        kind, URN, column, observed="seen", expected="reference", message="test", playbook=playbook, rows=selector,
        **params,
    )  # fmt: skip


def heal(table: pd.DataFrame, found: Finding) -> tuple[Any, HealStep]:
    playbook = playbook_for(found)
    assert playbook is not None
    result, step = playbook.apply(HealInput(table, found, CONTRACT, None))
    json.dumps(step.params)  # heal notes are plain JSON
    return result, step


def ms(stamp: pd.Timestamp) -> int:
    return int(stamp.value // MS)


def later(times: pd.Series, hours: int) -> pd.Series:
    """The times moved by whole hours, in their own resolution (a producer's bug keeps the column's type)."""
    return (times + pd.Timedelta(hours=hours)).astype(times.dtype)


# --- shift_timestamps -----------------------------------------------------------------------------------


def shift_finding(table: pd.DataFrame, hours: int, **params: Any) -> Finding:
    params = {
        "offset_hours": hours,
        "shifts_hours": {"time": hours},
        "hour_columns": {},
        "observed_min_ms": {"time": ms(table["time"].min())},
        **params,
    }
    return finding(FindingKind.TIMESTAMP_SHIFT, "time", "shift_timestamps", **params)


def test_shift_puts_the_clock_back_exactly_and_again_changes_nothing() -> None:
    clean = rows()
    shifted = clean.assign(time=later(clean["time"], -5))
    found = shift_finding(shifted, -5)
    healed, step = heal(shifted, found)
    pdt.assert_frame_equal(healed, clean)
    assert step.rows_touched == len(clean) and step.params["shifted_back_hours"] == {"time": -5}
    again, step = heal(healed, found)
    pdt.assert_frame_equal(again, clean)
    assert step.rows_touched == 0


def test_shift_moves_an_hour_column_with_its_clock_until_it_sits_on_its_learned_offset() -> None:
    clean = rows()
    local = clean.assign(time=later(clean["time"], 9), hour_utc=(clean["hour_utc"] + 9) % 24)
    found = shift_finding(
        local, 9, hour_columns={"hour_utc": 9}, hour_of={"hour_utc": {"timestamp": "time", "offsets": [0]}}
    )
    healed, _ = heal(local, found)
    pdt.assert_frame_equal(healed, clean)
    pdt.assert_frame_equal(heal(healed, found)[0], clean)


def test_shift_acts_on_the_findings_rows_only() -> None:
    clean = rows()
    late = clean["time"] > clean["time"].iloc[5]  # the newest batch: after the watermark at row 5
    shifted = clean.assign(time=clean["time"].mask(late, later(clean["time"], 5)))
    found = shift_finding(
        shifted[late], 5, rows={"column": "time", "after_ms": ms(clean["time"].iloc[5]), "through_ms": None}
    )
    healed, step = heal(shifted, found)
    pdt.assert_frame_equal(healed, clean)
    assert step.rows_touched == int(late.sum())


def test_shift_moves_the_rows_named_one_by_one_and_not_their_twins_in_time() -> None:
    """The newest batch moved 4 hours early: its first two rows land at the times of the two kept rows before the
    watermark. Named by time and key (`also`), exactly those go back with the batch, and the twins stay."""
    clean = rows()
    late = clean["time"] > clean["time"].iloc[5]
    shifted = clean.assign(time=clean["time"].mask(late, later(clean["time"], -4)))
    carried = late & (shifted["time"] <= clean["time"].iloc[5])
    also = [{"at_ms": ms(r["time"]), "key": row_key(r.to_dict())} for _, r in shifted[carried].iterrows()]
    window = {"column": "time", "after_ms": ms(clean["time"].iloc[5]), "through_ms": None, "also": also}
    found = shift_finding(shifted[carried], -4, rows=window)
    healed, step = heal(shifted, found)
    pdt.assert_frame_equal(healed, clean)
    assert step.rows_touched == int(late.sum()) and len(also) == 2
    again, step = heal(healed, found)
    pdt.assert_frame_equal(again, clean)
    assert step.rows_touched == 0


def test_a_row_key_is_one_for_equal_values_read_either_way() -> None:
    row = rows().iloc[3].to_dict()
    assert row_key(row) == row_key({**row, "low": int(row["low"])})  # 3.0 and 3 alike
    assert row_key(row) == row_key({**row, "time": row["time"].tz_convert("America/New_York")})  # one instant
    assert row_key(row) != row_key({**row, "high": row["high"] + 1e-9})
    assert row_key({**row, "label": np.nan}) == row_key({**row, "label": None})
    assert row_key({**row, "tags": np.array([1, 2])}) == row_key({**row, "tags": np.array([1, 2])})  # nested


def test_shift_refuses_a_table_that_changed_and_an_offset_known_modulo_24() -> None:
    clean = rows()
    with pytest.raises(PlaybookRefused, match="the table changed since"):
        heal(clean, shift_finding(clean.assign(time=later(clean["time"], 1)), -5))
    with pytest.raises(PlaybookRefused, match="sign of a 12-hour shift"):
        heal(clean, shift_finding(clean, 12, ambiguous=True))


# --- swap_columns ---------------------------------------------------------------------------------------


def swap_finding(scope: str, **params: Any) -> Finding:
    return finding(FindingKind.COLUMNS_SWAPPED, "low", "swap_columns", columns=["low", "high"], scope=scope, **params)


def test_swap_all_puts_both_columns_back_and_again_changes_nothing() -> None:
    clean = rows()
    swapped = clean.assign(low=clean["high"], high=clean["low"])
    found = swap_finding(
        "all", observed_medians={"low": float(swapped["low"].median()), "high": float(swapped["high"].median())}
    )
    healed, step = heal(swapped, found)
    pdt.assert_frame_equal(healed, clean)
    assert step.rows_touched == len(clean)
    pdt.assert_frame_equal(heal(healed, found)[0], clean)


def test_swap_by_order_swaps_exactly_the_rows_that_break_it() -> None:
    clean = rows()
    some = clean.index % 3 == 0
    swapped = clean.assign(
        low=np.where(some, clean["high"], clean["low"]), high=np.where(some, clean["low"], clean["high"])
    )
    healed, step = heal(swapped, swap_finding("order", order=["low", "high"]))
    pdt.assert_frame_equal(healed, clean)
    assert step.rows_touched == int(some.sum())


def hour_and_label_swapped(frame: pd.DataFrame) -> Finding:
    """The finding that names hour_utc and label swapped in every row, with the medians the batch shows."""
    observed = {c: float(frame[c].median()) for c in ("hour_utc", "label")}
    return finding(
        FindingKind.COLUMNS_SWAPPED,
        "hour_utc",
        "swap_columns",
        columns=["hour_utc", "label"],
        scope="all",
        observed_medians=observed,
    )


def test_a_whole_number_column_and_a_decimal_one_swapped_come_back_each_in_its_contracted_type() -> None:
    clean = rows()
    swapped = clean.assign(hour_utc=clean["label"], label=clean["hour_utc"])
    assert (swapped["hour_utc"].dtype, swapped["label"].dtype) == (np.float64, np.int64)
    found = hour_and_label_swapped(swapped)
    healed, step = heal(swapped, found)
    pdt.assert_frame_equal(healed, clean)
    assert step.rows_touched == len(clean)


def test_swap_refuses_to_leave_decimals_in_a_whole_number_column_and_a_missing_scope() -> None:
    clean = rows()
    found = hour_and_label_swapped(clean)
    with pytest.raises(PlaybookRefused, match="not integer, its contracted type"):
        heal(clean, found)
    with pytest.raises(PlaybookRefused, match="'all' or 'order'"):
        heal(rows(), swap_finding("some"))


# --- unit_rescale on the finding's rows only --------------------------------------------------------------


def unit_finding(**params: Any) -> Finding:
    return finding(
        FindingKind.UNIT_MISMATCH,
        "distance",
        "unit_rescale",
        declared_unit="km",
        actual_unit="m",
        scale=1000.0,
        offset=0.0,
        **params,
    )


def test_a_unit_changed_since_a_release_is_rescaled_on_those_rows_only() -> None:
    clean = rows()
    since = clean["time"] > clean["time"].iloc[7]
    metres = clean.assign(distance=clean["distance"].mask(since, clean["distance"] * 1000))
    window = {"column": "time", "after_ms": ms(clean["time"].iloc[7]), "through_ms": ms(clean["time"].iloc[-1])}
    healed, step = heal(metres, unit_finding(rows=window))
    pdt.assert_frame_equal(healed, clean)
    assert step.rows_touched == int(since.sum()) and step.params["rows"] == window


def test_without_rows_every_row_is_rescaled() -> None:
    clean = rows()
    healed, step = heal(clean.assign(distance=clean["distance"] * 1000), unit_finding())
    pdt.assert_frame_equal(healed, clean)
    assert step.rows_touched == len(clean)


@pytest.mark.parametrize(
    "selector,message",
    [
        ({"column": "nope", "after_ms": 0, "through_ms": None}, "which the table does not have"),
        ({"column": "distance", "after_ms": 0, "through_ms": None}, "not a timestamp"),
    ],
)
def test_a_rows_selector_that_cannot_be_applied_refuses_never_widens(selector: dict[str, Any], message: str) -> None:
    with pytest.raises(PlaybookRefused, match=message):
        heal(rows(), unit_finding(rows=selector))


@pytest.mark.parametrize(
    "selector,message",
    [
        ({"column": "time", "after": 0}, "not {'column'"),
        ({"column": "time", "after_ms": "2025-03-01", "through_ms": None}, "not epoch milliseconds"),
        ({"column": "time", "after_ms": 0, "also": [{"at_ms": "noon", "key": "k"}]}, "not \\[\\{'at_ms'"),
        ({"column": "time", "after_ms": 0, "also": {"at_ms": 0}}, "not \\[\\{'at_ms'"),
    ],
)
def test_a_rows_selector_that_cannot_be_read_back_is_refused(selector: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Finding.from_dict({**unit_finding().to_dict(), "rows": selector})


# --- the sandbox: corrections published, uncorrectable rows quarantined ------------------------------------


def test_heal_copy_publishes_corrections_lists_the_quarantine_and_trains_on_the_rest(tmp_path: Path) -> None:
    clean = rows()
    source = clean.assign(
        time=later(clean["time"], -5),
        distance=clean["distance"].mask(clean["id"] % 4 == 1),
        low=clean["low"].mask(clean["id"] == 6, -999.0),
    )
    path = tmp_path / "source.parquet"
    source.to_parquet(path, index=False)
    nulls = finding(FindingKind.NULL_SPIKE, "distance", "null_impute")  # the old name reaches the quarantine
    sentinel = finding(FindingKind.SENTINEL, "low", "quarantine_rows", value=-999)
    outcome = heal_copy(path, tmp_path / "sandbox", (nulls, shift_finding(source, -5), sentinel), CONTRACT, None)
    assert outcome.complete and [f.kind for f in outcome.corrected] == [FindingKind.TIMESTAMP_SHIFT]
    assert outcome.open_findings == (nulls, sentinel)
    published = pd.read_parquet(outcome.healed_path)
    pdt.assert_frame_equal(published, source.assign(time=clean["time"]))  # only the clock corrected
    listed = pd.read_parquet(outcome.quarantine.path)  # type: ignore[union-attr]
    assert listed["row"].tolist() == [1, 5, 9, 6] and listed["id"].tolist() == [1, 5, 9, 6]
    assert listed["finding"].tolist() == ["null_spike:distance"] * 3 + ["sentinel:low"]
    assert json.loads(listed["reason"].iloc[3]) == {"column": "low", "kind": "sentinel", "value": -999}
    assert outcome.quarantine.rows == 4 and outcome.quarantine.by_finding == {
        "null_spike:distance": 3,
        "sentinel:low": 1,
    }  # type: ignore[union-attr]
    assert "4 row(s) quarantined" in outcome.quarantine.note()  # type: ignore[union-attr]
    training = pd.read_parquet(outcome.training_view)
    assert training["id"].tolist() == [0, 2, 3, 4, 7, 8, 10, 11] and training["distance"].notna().all()
    assert HealOutcome.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome


def test_a_heal_with_nothing_to_set_aside_has_no_quarantine_and_trains_on_the_published_table(tmp_path: Path) -> None:
    clean = rows()
    path = tmp_path / "source.parquet"
    clean.assign(distance=clean["distance"] * 1000).to_parquet(path, index=False)
    outcome = heal_copy(path, tmp_path / "sandbox", (unit_finding(),), CONTRACT, None)
    assert outcome.quarantine is None and outcome.training_view == outcome.healed_path and not outcome.open_findings
    assert not (tmp_path / "sandbox" / QUARANTINE_FILE).exists()


def test_two_findings_of_one_conversion_over_the_same_rows_convert_each_row_once(tmp_path: Path) -> None:
    """The whole table in metres, named once for every row and once for the newest rows: the second correction
    would divide those rows again, so it is refused and the table comes back in kilometres exactly."""
    clean = rows()
    path = tmp_path / "source.parquet"
    clean.assign(distance=clean["distance"] * 1000).to_parquet(path, index=False)
    newest = {"column": "time", "after_ms": ms(clean["time"].iloc[7]), "through_ms": None}
    outcome = heal_copy(path, tmp_path / "sandbox", (unit_finding(), unit_finding(rows=newest)), CONTRACT, None)
    pdt.assert_frame_equal(pd.read_parquet(outcome.healed_path), clean)
    assert len(outcome.corrected) == 1 and "already corrected" in outcome.refused[0][1] and not outcome.complete


def test_a_quarantine_over_its_limit_is_refused_and_nothing_is_set_aside(tmp_path: Path) -> None:
    clean = rows()
    path = tmp_path / "source.parquet"
    clean.assign(distance=clean["distance"].mask(clean["id"] < 7)).to_parquet(path, index=False)
    outcome = heal_copy(
        path, tmp_path / "sandbox", (finding(FindingKind.NULL_LIMIT, "distance", "quarantine_rows"),), CONTRACT, None
    )
    assert not outcome.complete and outcome.quarantine is None and "over its limit of 50%" in outcome.refused[0][1]


# --- on real data: a broken join publishes no invented value -----------------------------------------------


def test_a_null_heavy_broken_join_publishes_every_cell_as_it_came_or_exactly_corrected(tmp_path: Path) -> None:
    """Seattle weather, 25% of rows losing every joined column, and the clock written five hours early: the
    published table equals the source cell for cell, but for the clock shifted back exactly; the null rows are
    quarantined, not filled; the training view holds none of them."""
    dataset = DATASETS["seattle_weather"]
    batches = load_batches(dataset, tmp_path)
    frame = pd.concat([b.frame for b in batches[6:]], ignore_index=True)
    joined = ["temp_min", "wind", "precipitation"]
    lost = np.random.default_rng(12).random(len(frame)) < 0.25
    source = frame.assign(**{c: frame[c].mask(lost) for c in joined}, date=frame["date"] - pd.Timedelta(hours=5))
    path = tmp_path / "broken.parquet"
    source.to_parquet(path, index=False)
    contract = dataset.contract()
    reference = build_reference([b.snapshot.batch for b in batches[:6]])
    report = run_guard(
        with_repeats_counted(
            GuardContext(
                contract.dataset_urn,
                contract,
                read_snapshot(path, time_column="date"),
                reference,
                (),
                now_ms=ms(frame["date"].max()),
            )
        )
    )
    causes = {(f.kind, f.column) for f in report.blocking}
    assert (FindingKind.TIMESTAMP_SHIFT, "date") in causes and {
        c for k, c in causes if k is FindingKind.NULL_SPIKE
    } == set(joined)
    outcome = heal_copy(path, tmp_path / "sandbox", report.blocking, contract, reference)
    published = pd.read_parquet(outcome.healed_path)
    assert list(published.columns) == list(source.columns) and len(published) == len(source)
    for column in source.columns:
        expected = frame[column] if column == "date" else source[column]  # the one exact correction: the clock
        same = (published[column] == expected) | (published[column].isna() & expected.isna())
        assert same.all(), f"{column}: {int((~same).sum())} published cells are neither the source nor its correction"
    assert int(published[joined].isna().any(axis=1).sum()) == int(lost.sum())  # nothing filled in
    listed = pd.read_parquet(outcome.quarantine.path)  # type: ignore[union-attr]
    assert set(listed["row"]) == set(np.flatnonzero(lost)) and outcome.quarantine.rows == int(lost.sum())  # type: ignore[union-attr]
    assert {f.column for f in outcome.open_findings} == set(joined)
    training = pd.read_parquet(outcome.training_view)
    assert len(training) == len(frame) - int(lost.sum()) and training[joined].notna().all().all()
