"""Integer columns that are a calendar part of a timestamp: a weekday, a day of the month, a month, a year.

A producer often writes the parts of an event's date beside it (`weekday = date.weekday()`, `month`, `year`). Such a
column is the time read again, not a measurement: it can be neither missing where the time is present nor another
value than the time's part. Per timestamp T, integer column C and part P, one batch's rows give a `CalendarPart`:
the offset C - P(T) most rows hold (modulo the part's cycle, 7 days or 12 months, so a weekday numbered from Sunday
or from 1 holds one offset too; exact for a day of the month and a year, so a fiscal or replayed year holds one),
the rows holding it of the rows tested (both present), the rows where C is missing though T is not, the least
and the most P(T) the rows held it on (a part that never moved, one year's rows, is no evidence that C follows it),
and the least and the most C they held (a weekday written 1 to 7 holds its Saturday as 7, never as 0, which the
cycle alone would not tell apart). A part with a cycle is written within one cycle: a day of the year or a count of
days steps with the weekday, one offset modulo 7, but spans more than seven values, and is no weekday. And it is
evidence only once the part took every value of its cycle (`CalendarPart.shown`: the values seen, as bits), and any
other part three values at least: a few yearly rows' weekdays are matched modulo 7 by a year number by chance.

Merged batch by batch while every batch holds the same offset; two offsets are two different relations, and the
key is dropped (merging keeps what both sides hold). A C that is constant while P(T) is too (one month of rows)
holds an offset in each batch, a different one each month, so it is never kept past two batches of different parts.
All computed in UTC, as every timestamp is read (`epoch_ms_of`): a local date stored as local midnight in UTC may
fall on the day before, and then holds no one offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

__all__ = [
    "CYCLES",
    "CalendarPart",
    "calendar_part",
    "learn_calendar",
    "merge_calendar",
    "part_offsets",
    "whole_values",
]

CYCLES = {"weekday": 7, "day": 0, "month": 12, "year": 0}  # a part's cycle; 0: none (the offset is exact)
_DAY_MS = 86_400_000
_THURSDAY = 3  # 1970-01-01, Monday = 0


@dataclass(frozen=True)
class CalendarPart:
    """C = P(T) + `offset` on `holds` of `tested` rows (both present); C missing on `missing` rows with T present;
    P(T) from `low` to `high`, and C from `least` to `most`, on the rows it held; for a part with a cycle, `seen`
    has bit P set for each P(T) the rows held it on (every weekday: 0b1111111)."""

    offset: int
    holds: int
    tested: int
    missing: int
    low: int
    high: int
    least: int
    most: int
    seen: int = 0

    def merge(self, other: CalendarPart, cycle: int) -> CalendarPart | None:
        if other.offset != self.offset or not _one_cycle(
            min(self.least, other.least), max(self.most, other.most), cycle
        ):
            return None
        return CalendarPart(
            self.offset,
            self.holds + other.holds,
            self.tested + other.tested,
            self.missing + other.missing,
            min(self.low, other.low),
            max(self.high, other.high),
            min(self.least, other.least),
            max(self.most, other.most),
            self.seen | other.seen,
        )

    def shown(self, cycle: int) -> bool:
        """The rows are evidence that C follows the part: the part moved over three values at least, and, for a part
        with a cycle, took every value of it (every weekday, January to December). A flag of the second of two years
        is the year less the first on both; four years' first days fall on four weekdays, which a year number matches
        modulo 7 by chance; seven cannot."""
        if cycle:
            return bin(self.seen).count("1") == cycle
        return self.high - self.low >= 2

    def to_list(self) -> list[int]:
        return [
            *(self.offset, self.holds, self.tested, self.missing),
            *(self.low, self.high, self.least, self.most),
            self.seen,
        ]

    @classmethod
    def from_list(cls, values: list[Any]) -> CalendarPart:
        return cls(*(int(v) for v in values))


def calendar_part(stamps: np.ndarray, part: str) -> np.ndarray:
    """P(T) as int64 for UTC epoch-ms `stamps`: weekday 0 (Monday) to 6, day of the month 1-31, month 1-12, year."""
    moments = stamps.astype("datetime64[ms]")
    if part == "weekday":
        return (np.floor_divide(stamps, _DAY_MS) + _THURSDAY) % 7
    months = moments.astype("datetime64[M]")
    if part == "day":
        return (moments.astype("datetime64[D]") - months.astype("datetime64[D]")).astype(np.int64) + 1
    if part == "month":
        return months.astype(np.int64) % 12 + 1
    if part == "year":
        return moments.astype("datetime64[Y]").astype(np.int64) + 1970
    raise ValueError(f"no calendar part {part!r}: one of {', '.join(CYCLES)}")


def part_offsets(parts: np.ndarray, values: np.ndarray, part: str) -> np.ndarray:
    """Per row, C - P(T) for whole values C and the time's part P(T) (`calendar_part`), modulo the part's cycle."""
    offsets = values.astype(np.int64) - parts
    cycle = CYCLES[part]
    return offsets % cycle if cycle else offsets


def whole_values(values: np.ndarray) -> np.ndarray:
    """The rows whose value can be a calendar part: finite and whole (and within an int64's exact floats)."""
    finite = np.isfinite(values)
    whole = np.zeros(len(values), dtype=bool)
    whole[finite] = (np.mod(values[finite], 1) == 0) & (np.abs(values[finite]) < 2**53)
    return whole


def learn_calendar(
    times: Mapping[str, tuple[np.ndarray, np.ndarray]], numbers: Mapping[str, np.ndarray], integers: list[str]
) -> dict[str, CalendarPart]:
    """ "T|C|P" -> the part relation one batch's rows show, where most of its tested rows hold one offset."""
    found: dict[str, CalendarPart] = {}
    for time, (stamps, present) in times.items():
        if present.sum() < 2:
            continue
        parts = {part: calendar_part(stamps, part) for part in CYCLES}
        for name in integers:
            values = numbers[name]
            rows = present & whole_values(values)
            if rows.sum() < 2:
                continue
            missing = int((present & np.isnan(values)).sum())
            for part, of_time in parts.items():
                offsets = part_offsets(of_time[rows], values[rows], part)
                kept, counts = np.unique(offsets, return_counts=True)
                best = int(np.argmax(counts))
                if 2 * counts[best] <= len(offsets):
                    continue  # no offset holds most rows: not this part
                on = offsets == kept[best]
                held, written = of_time[rows][on], values[rows][on]
                if not _one_cycle(int(written.min()), int(written.max()), CYCLES[part]):
                    continue  # a count of days steps with the weekday, but is no weekday
                found[f"{time}|{name}|{part}"] = CalendarPart(
                    int(kept[best]),
                    int(counts[best]),
                    len(offsets),
                    missing,
                    int(held.min()),
                    int(held.max()),
                    int(written.min()),
                    int(written.max()),
                    _bits(held) if CYCLES[part] else 0,
                )
    return found


def _bits(parts: np.ndarray) -> int:
    """One bit per part value held (a weekday 0-6, a month 1-12)."""
    return sum(1 << int(value) for value in np.unique(parts))


def _one_cycle(least: int, most: int, cycle: int) -> bool:
    """Values from `least` to `most` can number a part with this cycle: no more apart than one cycle holds."""
    return not cycle or most - least <= cycle - 1


def merge_calendar(a: Mapping[str, CalendarPart], b: Mapping[str, CalendarPart]) -> dict[str, CalendarPart]:
    """The relations both sides hold on one offset (and, for a part with a cycle, within one cycle), added up."""
    merged = {}
    for key in sorted(a):
        if key in b and (both := a[key].merge(b[key], CYCLES[key.rsplit("|", 1)[1]])) is not None:
            merged[key] = both
    return merged
