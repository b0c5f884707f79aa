"""Per-column profiles: of a snapshot now, of one batch, or of the reference the data is compared with.

A `ColumnProfile` carries what the checks read (counts, exact min/max, mean/stdev, profiled quantiles,
category counts) and the mergeable state behind them (moments, a KLL quantile sketch, a HyperLogLog,
exact zero and NaN counts, hour-of-day and day-of-week histograms of timestamps). Profiles of batches
merge into the profile of their union without rereading a row (`merge`); every profile round-trips
through plain JSON (`to_dict` / `from_dict`), byte for byte (`canonical_json`). A profile's JSON names the
hash format of its distinct sketches (`hash_format`, `profiles.hashing.HASH_FORMAT`; absent: 1). Read from
format 1, a string column's sketch is dropped (its strings hashed by their neighbours' lengths: merged with
fresh sketches it would count values twice; the rows are not at hand to hash again), so its distinct count
is unknown until that batch leaves the reference; numbers, times and booleans hash alike in both formats and
keep theirs. A format this version does not know is refused (`HashFormatError`).

A `BatchProfile` is one batch's identity (id, files, the time window it was cut by, the first and last
time seen) and its `DatasetProfile`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from profiles.hashing import HASH_FORMAT, HashFormatError
from profiles.records import Record
from profiles.relations import Relations
from profiles.sketches import DistinctSketch, Moments, QuantileSketch

__all__ = [
    "ColumnProfile",
    "DatasetProfile",
    "BatchProfile",
    "TimeWindow",
    "QUANTILES",
    "MAX_CATEGORIES",
    "PROFILE_FORMAT",
    "BATCH_FORMAT",
    "canonical_json",
    "json_number",
    "parse_number",
    "expect_format",
    "check_hash_format",
]

QUANTILES: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)
MAX_CATEGORIES = 200  # exact value counts up to this many distinct values; beyond, "too many" (None)
PROFILE_FORMAT = "kintsugi.dataset-profile/1"
BATCH_FORMAT = "kintsugi.batch-profile/1"
_HASHED_BY_BYTES = ("string",)  # logical types whose value hashes changed from hash format 1 to 2


def canonical_json(data: Mapping[str, Any]) -> str:
    """Sorted keys, no spaces, floats as repr: the same profile always serialises to the same bytes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    logical_type: str
    row_count: int
    null_count: int
    minimum: float | None = None
    maximum: float | None = None
    mean: float | None = None
    stdev: float | None = None
    quantiles: tuple[tuple[float, float], ...] = ()
    value_counts: tuple[tuple[str, int], ...] | None = None
    # the mergeable state (None where the profile came from somewhere that does not keep it, e.g. DataHub)
    nan_count: int = 0
    moments: Moments | None = None
    zero_count: int | None = None
    sketch: QuantileSketch | None = field(default=None, compare=False, repr=False)
    distinct: DistinctSketch | None = field(default=None, compare=False, repr=False)
    hours: tuple[int, ...] | None = None  # timestamps: rows per UTC hour of day, 0..23
    weekdays: tuple[int, ...] | None = None  # timestamps and dates: rows per UTC weekday, Monday = 0

    @property
    def null_fraction(self) -> float:
        return self.null_count / self.row_count if self.row_count else 0.0

    def quantile(self, q: float) -> float | None:
        return dict(self.quantiles).get(q)

    @property
    def values(self) -> int:
        """Non-null, non-NaN values."""
        return self.row_count - self.null_count - self.nan_count

    @property
    def distinct_count(self) -> float | None:
        """Distinct non-null values: exact when counted, else the HyperLogLog's estimate (±1.6%)."""
        if self.value_counts is not None:
            return float(len(self.value_counts))
        return self.distinct.estimate() if self.distinct is not None else None

    @property
    def zero_share(self) -> float | None:
        return self.zero_count / self.values if self.zero_count is not None and self.values else None

    @property
    def point_mass(self) -> tuple[float, float] | None:
        """(the most frequent value, its share of the values), from the quantile sketch (±1.65%)."""
        return self.sketch.mode() if self.sketch is not None else None

    def merge(self, other: ColumnProfile) -> ColumnProfile:
        """The profile of both columns' rows, from their mergeable state only."""
        return merge_columns(self, other)

    def to_dict(self) -> dict[str, Any]:
        return _column_to_dict(self)

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> ColumnProfile:
        return _column_from_dict(name, data)


@dataclass(frozen=True)
class DatasetProfile:
    row_count: int
    columns: Mapping[str, ColumnProfile]
    # relationships between columns (profiles.relations); None where the profile came from somewhere that
    # does not keep them (e.g. DataHub's datasetProfile)
    relations: Relations | None = field(default=None, compare=False, repr=False)

    def merge(self, other: DatasetProfile) -> DatasetProfile:
        """The union of two profiles' rows. A column only one side has keeps that side's rows only."""
        columns = dict(self.columns)
        for name, column in other.columns.items():
            columns[name] = columns[name].merge(column) if name in columns else column
        return DatasetProfile(
            self.row_count + other.row_count, columns, _both(self.relations, other.relations, Relations.merge)
        )

    def to_dict(self) -> dict[str, Any]:
        data = {
            "format": PROFILE_FORMAT,
            "hash_format": HASH_FORMAT,
            "row_count": self.row_count,
            "columns": {name: column.to_dict() for name, column in self.columns.items()},
        }
        if self.relations is not None:
            data["relations"] = self.relations.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DatasetProfile:
        expect_format(data, PROFILE_FORMAT)
        columns = {name: ColumnProfile.from_dict(name, column) for name, column in data["columns"].items()}
        hashes = data.get("hash_format", 1)
        if hashes == 1:  # its strings' sketches cannot merge with fresh ones (see the module's docstring)
            columns = {
                name: replace(c, distinct=None) if c.logical_type in _HASHED_BY_BYTES else c
                for name, c in columns.items()
            }
        else:
            check_hash_format(hashes)
        relations = data.get("relations")
        return cls(int(data["row_count"]), columns, None if relations is None else Relations.from_dict(relations))


@dataclass(frozen=True)
class TimeWindow(Record):
    """Rows whose `column` lies in (after_ms, through_ms]: after a watermark, up to and including the next.

    Either bound may be None (unbounded). Times are UTC epoch milliseconds, floored.
    """

    column: str
    after_ms: int | None = None
    through_ms: int | None = None

    def contains_range(self, low_ms: float, high_ms: float) -> bool:
        """Every time in [low, high] falls inside the window."""
        return (self.after_ms is None or low_ms > self.after_ms) and (
            self.through_ms is None or high_ms <= self.through_ms
        )

    def misses_range(self, low_ms: float, high_ms: float) -> bool:
        """No time in [low, high] falls inside the window."""
        return (self.after_ms is not None and high_ms <= self.after_ms) or (
            self.through_ms is not None and low_ms > self.through_ms
        )


@dataclass(frozen=True)
class BatchProfile:
    """One batch: which rows (files, window), when (first and last time seen), and their profile."""

    batch_id: str
    files: tuple[str, ...]
    profile: DatasetProfile
    time_column: str | None = None
    window: TimeWindow | None = None
    start_ms: int | None = None
    end_ms: int | None = None
    outlined: bool = False  # `profiles.outline`: only its columns' counts and bounds; never stored, never merged

    @property
    def row_count(self) -> int:
        return self.profile.row_count

    def to_dict(self) -> dict[str, Any]:
        if self.outlined:
            raise ValueError(f"batch {self.batch_id} is an outline (no sketches): store the batch as it was profiled")
        return {
            "format": BATCH_FORMAT,
            "batch_id": self.batch_id,
            "files": list(self.files),
            "time_column": self.time_column,
            "window": self.window.to_dict() if self.window else None,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "row_count": self.row_count,
            "profile": self.profile.to_dict(),
        }

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BatchProfile:
        expect_format(data, BATCH_FORMAT)
        window = data.get("window")
        return cls(
            batch_id=data["batch_id"],
            files=tuple(data["files"]),
            profile=DatasetProfile.from_dict(data["profile"]),
            time_column=data.get("time_column"),
            window=TimeWindow.from_dict(window) if window else None,
            start_ms=data.get("start_ms"),
            end_ms=data.get("end_ms"),
        )

    @classmethod
    def from_json(cls, text: str) -> BatchProfile:
        return cls.from_dict(json.loads(text))


# --- merging --------------------------------------------------------------------------------------


def merge_columns(a: ColumnProfile, b: ColumnProfile) -> ColumnProfile:
    kind = _merged_type(a, b)
    moments = _both(a.moments, b.moments, Moments.merge)
    sketch = _both(a.sketch, b.sketch, QuantileSketch.merge)
    return ColumnProfile(
        name=a.name,
        logical_type=kind,
        row_count=a.row_count + b.row_count,
        null_count=a.null_count + b.null_count,
        minimum=_extreme(min, a.minimum, b.minimum),
        maximum=_extreme(max, a.maximum, b.maximum),
        mean=moments.mean if moments else None,
        stdev=moments.stdev if moments else None,
        quantiles=sketch_quantiles(sketch) if kind in ("integer", "number") else (),
        value_counts=_merge_counts(a.value_counts, b.value_counts),
        nan_count=a.nan_count + b.nan_count,
        moments=moments,
        zero_count=_both(a.zero_count, b.zero_count, int.__add__),
        sketch=sketch,
        distinct=_both(a.distinct, b.distinct, DistinctSketch.merge),
        hours=_both(a.hours, b.hours, _add_bins),
        weekdays=_both(a.weekdays, b.weekdays, _add_bins),
    )


def sketch_quantiles(sketch: QuantileSketch | None) -> tuple[tuple[float, float], ...]:
    if sketch is None or sketch.n == 0:
        return ()
    return tuple((q, float(v)) for q, v in zip(QUANTILES, sketch.quantiles(QUANTILES)) if v is not None)


def _merged_type(a: ColumnProfile, b: ColumnProfile) -> str:
    if a.logical_type == b.logical_type:
        return a.logical_type
    if {a.logical_type, b.logical_type} == {"integer", "number"}:
        return "number"
    raise ValueError(
        f"column {a.name!r} is {a.logical_type} in one batch and {b.logical_type} in another: "
        "build the reference from batches of one schema (or cast the column first)"
    )


def _both(a: Any, b: Any, combine: Any) -> Any:
    """Combined when both sides keep the state; None when either lacks it (an unknown stays unknown)."""
    return None if a is None or b is None else combine(a, b)


def _extreme(pick: Any, a: float | None, b: float | None) -> float | None:
    known = [v for v in (a, b) if v is not None]
    return pick(known) if known else None


def _merge_counts(
    a: Iterable[tuple[str, int]] | None, b: Iterable[tuple[str, int]] | None
) -> tuple[tuple[str, int], ...] | None:
    if a is None or b is None:
        return None
    counts = dict(a)
    for value, count in b:
        counts[value] = counts.get(value, 0) + count
    return tuple(sorted(counts.items())) if len(counts) <= MAX_CATEGORIES else None


def _add_bins(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b))


# --- JSON -----------------------------------------------------------------------------------------


def _column_to_dict(c: ColumnProfile) -> dict[str, Any]:
    data: dict[str, Any] = {
        "logical_type": c.logical_type,
        "rows": c.row_count,
        "nulls": c.null_count,
        "nans": c.nan_count,
        "min": json_number(c.minimum),
        "max": json_number(c.maximum),
        "mean": json_number(c.mean),
        "stdev": json_number(c.stdev),
        "quantiles": [[q, json_number(v)] for q, v in c.quantiles],
        "values": None if c.value_counts is None else {v: n for v, n in c.value_counts},
        "zeros": c.zero_count,
        "hours": None if c.hours is None else list(c.hours),
        "weekdays": None if c.weekdays is None else list(c.weekdays),
        "moments": None
        if c.moments is None
        else {"count": c.moments.count, "sum": json_number(c.moments.total), "m2": json_number(c.moments.m2)},
        "kll": None if c.sketch is None else c.sketch.to_base64(),
        "hll": None if c.distinct is None else c.distinct.to_base64(),
    }
    mass = c.point_mass  # derived, written for readers of the JSON (DataHub, people), not read back
    data["point_mass"] = None if mass is None else {"value": json_number(mass[0]), "share": mass[1]}
    data["distinct"] = None if c.distinct_count is None else round(c.distinct_count, 3)
    return data


def _column_from_dict(name: str, d: Mapping[str, Any]) -> ColumnProfile:
    moments = d.get("moments")
    values = d.get("values")
    return ColumnProfile(
        name=name,
        logical_type=d["logical_type"],
        row_count=int(d["rows"]),
        null_count=int(d["nulls"]),
        minimum=parse_number(d.get("min")),
        maximum=parse_number(d.get("max")),
        mean=parse_number(d.get("mean")),
        stdev=parse_number(d.get("stdev")),
        quantiles=tuple((float(q), float(v)) for q, v in d.get("quantiles") or ()),
        value_counts=None if values is None else tuple(sorted((str(v), int(n)) for v, n in values.items())),
        nan_count=int(d.get("nans") or 0),
        moments=None
        if moments is None
        else Moments(int(moments["count"]), float(moments["sum"]), float(moments["m2"])),
        zero_count=d.get("zeros"),
        sketch=QuantileSketch.from_base64(d["kll"]) if d.get("kll") else None,
        distinct=DistinctSketch.from_base64(d["hll"]) if d.get("hll") else None,
        hours=None if d.get("hours") is None else tuple(int(n) for n in d["hours"]),
        weekdays=None if d.get("weekdays") is None else tuple(int(n) for n in d["weekdays"]),
    )


def json_number(value: float | None) -> float | str | None:
    """A number for JSON: infinities and NaN as the strings "inf", "-inf", "nan" (JSON has no such numbers)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else repr(value)


def parse_number(value: float | str | None) -> float | None:
    return None if value is None else float(value)


def expect_format(data: Mapping[str, Any], expected: str) -> None:
    if data.get("format") != expected:
        raise ValueError(
            f"expected a {expected} document, got format {data.get('format')!r}: "
            "profile the batch again with this version of the guard"
        )


def check_hash_format(hashes: object) -> None:
    """Refuse distinct sketches of a hash format this version does not know (1, read without them, and this one)."""
    if hashes not in (1, HASH_FORMAT):
        raise HashFormatError(
            f"the profile's distinct sketches are of hash format {hashes!r}; this version hashes with {HASH_FORMAT}",
            "profile the batch again with this version of the guard, or run the version that wrote it",
        )
