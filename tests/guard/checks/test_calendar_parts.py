"""guard/checks/relations.py with profiles/calendar.py: a column the reference always held as a part of the event
time (a weekday numbered from Sunday, a month, a year) is the time read again. Missing where the time is not, or
another value, it is named; a new month's value that agrees with the time is data, and a part that never moved in
the reference teaches nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from guard.checks.relations import check_relations
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.findings import Finding
from guard.kinds import FindingKind
from profiles.calendar import CalendarPart, calendar_part, learn_calendar, merge_calendar
from profiles.reference import Reference, build_reference
from profiles.relations import epoch_ms_of
from profiles.snapshot import read_snapshot

URN = "urn:li:dataset:(urn:li:dataPlatform:file,calendar,PROD)"
CONTRACT = Contract(
    URN,
    (
        ColumnContract("date", "timestamp"),
        ColumnContract("weekday", "integer", required=False),
        ColumnContract("month", "integer", required=False),
        ColumnContract("year", "integer", required=False),
        ColumnContract("visits", "integer", required=False),
    ),
    event_timestamp_column="date",
)


def _days(first: str, last: str, seed: int = 0) -> pd.DataFrame:
    """One row a day: the weekday numbered 1 (Sunday) to 7, the month and the year of the date, and a count."""
    date = pd.Series(pd.date_range(first, last, freq="D", tz="UTC"))
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "date": date,
            "weekday": ((date.dt.weekday + 1) % 7 + 1).astype(np.int64),
            "month": date.dt.month.astype(np.int64),
            "year": date.dt.year.astype(np.int64),
            "visits": rng.poisson(200, len(date)).astype(np.int64),
        }
    )


def _snap(tmp_path: Path, frame: pd.DataFrame, name: str):  # type: ignore[no-untyped-def]
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path, index=False)
    return read_snapshot(path, time_column="date", batch_id=name)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    tmp = tmp_path_factory.mktemp("calendar")
    months = pd.period_range("2023-01", "2023-12", freq="M")
    return build_reference(
        [
            _snap(tmp, _days(str(m.start_time.date()), str(m.end_time.date()), i), f"m{i}").batch
            for i, m in enumerate(months)
        ]
    )


def _found(tmp_path: Path, frame: pd.DataFrame, reference: Reference) -> list[Finding]:
    judged = check_relations(GuardContext(URN, CONTRACT, _snap(tmp_path, frame, "batch"), reference, (), now_ms=0))
    return [f for f in judged if isinstance(f, Finding)]


def _january() -> pd.DataFrame:
    return _days("2024-01-01", "2024-01-31", seed=9)


def test_the_parts_are_the_dates_own() -> None:
    stamps = pd.Series(pd.to_datetime(["1969-12-31", "2024-02-29 23:59", "2024-03-04"], utc=True, format="ISO8601"))
    ms, _ = epoch_ms_of(stamps)
    assert calendar_part(ms, "weekday").tolist() == list(stamps.dt.weekday)
    assert calendar_part(ms, "day").tolist() == [31, 29, 4]
    assert calendar_part(ms, "month").tolist() == [12, 2, 3]
    assert calendar_part(ms, "year").tolist() == [1969, 2024, 2024]


def test_a_new_month_and_year_that_agree_with_the_time_are_data(tmp_path: Path, reference: Reference) -> None:
    """January 2024 after the twelve months of 2023: a year the reference never held, and January again, each the
    date's own."""
    relations = reference.profile.relations
    assert relations is not None
    assert relations.calendar["date|weekday|weekday"].offset == 2  # Sunday = 1: (weekday + 2) mod 7
    assert relations.calendar["date|month|month"].offset == 0
    assert _found(tmp_path, _january(), reference) == []


def test_a_derived_part_missing_where_the_time_is_not_is_named_as_new_nulls(
    tmp_path: Path, reference: Reference
) -> None:
    """Three days of a month without their weekday: too few by the nulls' own chance in 31 rows, but a part of the
    date cannot be missing where the date is there."""
    frame = _january().astype({"weekday": "Int64"})
    frame.loc[[3, 11, 20], "weekday"] = pd.NA
    found = _found(tmp_path, frame, reference)
    assert [(f.kind, f.column, f.params["null_rows"]) for f in found] == [(FindingKind.NULL_SPIKE, "weekday", 3)]


def test_a_part_written_as_another_value_breaks_the_relation(tmp_path: Path, reference: Reference) -> None:
    frame = _january()
    frame.loc[[2, 5, 9, 14, 22], "weekday"] = 0
    found = _found(tmp_path, frame, reference)
    assert [(f.kind, f.column, f.params["broken_rows"]) for f in found] == [(FindingKind.RELATION_BROKEN, "weekday", 5)]


def test_a_batch_stamped_a_month_late_moves_its_month_as_a_whole(tmp_path: Path, reference: Reference) -> None:
    """Every date of January written a month later, its other columns as they were: the month column and the date
    disagree on every row by one month (the weekday too, by the days February moves them)."""
    frame = _january()
    late = frame.assign(date=frame["date"] + pd.DateOffset(months=1))
    found = {f.column: f for f in _found(tmp_path, late, reference)}
    assert found["month"].kind is FindingKind.RELATION_BROKEN
    assert found["month"].params["broken_rows"] == len(frame)
    assert "every one moved by -1" in found["month"].message


def test_a_part_that_never_moved_in_the_reference_teaches_nothing(tmp_path: Path) -> None:
    """A reference of one month holds its month number on every row, and a code of 3 as 'the month + 2': neither
    moved, so neither is the date's part; the next month's 3 is no break."""
    december = _days("2023-12-01", "2023-12-31").assign(code=3)
    contract = Contract(URN, (*CONTRACT.columns, ColumnContract("code", "integer")), event_timestamp_column="date")
    reference = build_reference([_snap(tmp_path, december, "only").batch])
    judged = check_relations(
        GuardContext(URN, contract, _snap(tmp_path, _january().assign(code=3), "batch"), reference, (), now_ms=0)
    )
    assert [f for f in judged if isinstance(f, Finding)] == []


def test_two_batches_on_different_offsets_keep_no_relation() -> None:
    """A constant column reads as 'the month plus k' in each month's rows, with another k each month: merged, it is
    no relation. Batches on one offset add up. A day of the year is one offset from the weekday modulo 7, but no
    weekday."""

    def learned(first: str, last: str) -> dict[str, CalendarPart]:
        frame = _days(first, last).assign(code=3, day_of_year=lambda f: f["date"].dt.dayofyear)
        ms, present = epoch_ms_of(frame["date"])
        numbers = {
            c: frame[c].to_numpy(dtype=float) for c in ("weekday", "month", "year", "visits", "code", "day_of_year")
        }
        return learn_calendar({"date": (ms, present)}, numbers, list(numbers))

    november, december = learned("2023-11-01", "2023-11-30"), learned("2023-12-01", "2023-12-31")
    assert "date|code|month" in november and "date|code|month" in december
    assert "date|day_of_year|weekday" not in november  # steps with the weekday, over more than a week's values
    merged = merge_calendar(november, december)
    assert "date|code|month" not in merged
    assert merged["date|month|month"] == CalendarPart(0, 61, 61, 0, 11, 12, 11, 12, seen=(1 << 11) | (1 << 12))


def test_a_year_number_or_a_flag_that_matches_a_few_weekdays_by_chance_is_no_weekday(tmp_path: Path) -> None:
    """Yearly rows stamped on each year's first day: 2017 to 2019 fall on Sunday, Monday and Tuesday (the least and
    the most weekday, a span of the whole week, yet three days of it), which the year number (one a year, as the
    weekday of the first day moves outside leap years) matches modulo 7. The weekday never took every value there:
    the relation is kept as the rows show it but is no evidence, and a later year breaks none. Nor is a flag of the
    second of two years their year, though it is the year less the first on both."""

    def year(first: str, n: int) -> pd.DataFrame:
        date = pd.Series(pd.to_datetime([first] * n, utc=True))
        number = date.dt.year.astype(np.int64)
        return pd.DataFrame({"date": date, "year": number, "flag": (number == 2017).astype(np.int64)})

    years = [year(f"{y}-01-01", 40) for y in (2017, 2018, 2019)]
    contract = Contract(
        URN,
        (ColumnContract("date", "timestamp"), ColumnContract("year", "integer"), ColumnContract("flag", "integer")),
        event_timestamp_column="date",
    )
    reference = build_reference([_snap(tmp_path, frame, f"y{i}").batch for i, frame in enumerate(years)])
    assert reference.profile.relations is not None
    assert "date|year|weekday" in reference.profile.relations.calendar  # kept as the rows show it...
    judged = check_relations(
        GuardContext(URN, contract, _snap(tmp_path, year("2021-01-01", 40), "batch"), reference, (), now_ms=0)
    )
    assert [f for f in judged if isinstance(f, Finding)] == []  # ...but no evidence of a weekday
    two = build_reference([_snap(tmp_path, frame.assign(flag=i), f"t{i}").batch for i, frame in enumerate(years[:2])])
    assert two.profile.relations is not None and "date|flag|year" in two.profile.relations.calendar  # year - 2017
    judged = check_relations(GuardContext(URN, contract, _snap(tmp_path, years[2], "third"), two, (), now_ms=0))
    assert [f for f in judged if isinstance(f, Finding)] == []  # two years are no evidence of a year
