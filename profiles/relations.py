"""Relationships between columns, learned from each batch's rows and merged into the reference.

What one column owes to another, kept as mergeable sufficient statistics (every one adds up, batch by
batch, without rereading a row) and plain JSON:

- `diurnal`: per timestamp column T and numeric column X, the count, sum and sum of squares of X per UTC
  hour of T (24 bins): the hour-of-day profile of what the data measures (irradiance is zero at night,
  temperatures peak after noon, deliveries are slow at rush hours), which moves with T when T is shifted;
- `hour_of`: per timestamp T and integer column H, how many rows have (H - hour(T)) mod 24 = 0..23, and
  how many have an H that is not an hour (the 25th bin): `hour_local` is `hour(time) - 8` in winter;
- `lags`: per pair of timestamps (a, b), a KLL sketch of b - a in ms: a label follows its event by a
  typical lag;
- `pairs`: per pair of numeric columns, co-moments (n, means, m2s, co-m2, merged with Chan's formula) and
  how many rows have a <= b, and a == b: correlation, orders such as temp_min <= temp_max, and whether the
  data reaches an order's bound (the dew point meets the air temperature at saturation);
- `groups`: per low-cardinality string column C and numeric column X, the moments of X per value of C:
  the correlation ratio (eta) of a category and a number;
- `spread`: per association (numeric pair "r:a|b", group "eta:c|x"), the lowest and the highest value any
  one merged batch showed: how much an association varies from batch to batch; and per numeric pair ("k:a|b")
  the same of log(sd b / sd a), the scale of one column against the other (stable where they move together, even
  where each one's own level is not; a rescaling of one moves it by the factor's log);
- `identities`: exact arithmetic relations c = a + b and c = a * b (differences and ratios are the same
  relations read the other way), as (rows where it holds, rows tested); a relation is kept only while
  every merged batch held it (merging keeps the relations both sides have);
- `periods`: per timestamp T and low-cardinality string or integer column C ("T|C"), the coarsest calendar period of T
  (`year`, `month`, `day`) within which C holds one value on every row, tested on two rows of one period at
  least (`ANY_PERIOD` where C holds one value on every row): C names the period its row falls in (a month's
  name), so a batch cut finer than that period holds one or two of its values, and a new period brings a new one.
  Merged, the finer period of two batches stands (a batch holding one value says nothing against a period).
- `calendar`: per timestamp T, integer column C and calendar part P ("T|C|P": a weekday, a day of the month, a month,
  a year), the offset C - P(T) most rows hold and on how many (`profiles.calendar`): C is the time's part.

Learned from the batch's seeded row sample (every row when the batch has at most `sample_rows` rows), so
the cost stays bounded whatever the batch size; merged by adding, a batch weighs by its sampled rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Mapping

import numpy as np
import pandas as pd

from profiles.calendar import CalendarPart, learn_calendar, merge_calendar
from profiles.sketches import Moments, QuantileSketch

__all__ = [
    "Relations",
    "Diurnal",
    "PairMoments",
    "GroupMoments",
    "learn_relations",
    "epoch_ms_of",
    "hour_offsets",
    "utc_hours",
    "hour_offset_counts",
    "order_broken",
    "pair_key",
    "HOURS",
    "MAX_GROUPS",
    "IDENTITY_SCREEN_ROWS",
]

HOURS = 24
_DAY_MS = 86_400_000
MAX_GROUPS = 30  # string columns with more distinct values in the sample are not grouped by
BOUND_HELD = 0.999  # share of rows an order must hold on to be a bound...
BOUND_REACHED = 0.005  # ...and share of rows on it (a == b)
BOUND_REACHED_ROWS = 3
IDENTITY_SCREEN_ROWS = 64  # complete rows a candidate identity must hold on before it is counted
PERIODS = ("year", "month", "day")  # calendar periods a column may name, coarsest first
ANY_PERIOD = "any"  # a column holding one value on every row: consistent with naming any period
_MAX_PAIR_COLUMNS = 40  # numeric columns beyond this many are left out of pairs (780 pairs at most)
_MAX_IDENTITY_COLUMNS = 20
_HOUR_MS = 3_600_000
_NUMERIC = ("integer", "number")


def pair_key(a: str, b: str) -> str:
    """The key of an unordered pair: names sorted, joined by '|'."""
    return "|".join(sorted((a, b)))


@dataclass(frozen=True)
class Diurnal:
    """One numeric column per UTC hour of one timestamp column: count, sum, sum of squares."""

    counts: tuple[float, ...]
    sums: tuple[float, ...]
    squares: tuple[float, ...]

    def merge(self, other: Diurnal) -> Diurnal:
        return Diurnal(
            *(
                tuple(x + y for x, y in zip(a, b))
                for a, b in ((self.counts, other.counts), (self.sums, other.sums), (self.squares, other.squares))
            )
        )

    def means(self) -> np.ndarray:
        counts = np.asarray(self.counts, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(counts > 0, np.asarray(self.sums) / counts, np.nan)

    def within_variance(self) -> float:
        """The pooled variance of the values within an hour."""
        counts, sums, squares = (np.asarray(v, dtype=float) for v in (self.counts, self.sums, self.squares))
        present = counts > 0
        deviations = squares[present] - sums[present] ** 2 / counts[present]
        freedom = float((counts[present] - 1).sum())
        return float(max(deviations.sum(), 0.0) / freedom) if freedom > 0 else math.nan


@dataclass(frozen=True)
class PairMoments:
    """Two numeric columns over the rows holding both: co-moments and the rows where a <= b."""

    n: int
    mean_a: float
    mean_b: float
    m2_a: float
    m2_b: float
    co_m2: float
    a_le_b: int
    a_eq_b: int = 0

    def merge(self, other: PairMoments) -> PairMoments:
        if not other.n:
            return self
        if not self.n:
            return other
        n = self.n + other.n
        da, db = other.mean_a - self.mean_a, other.mean_b - self.mean_b
        weight = self.n * other.n / n
        return PairMoments(
            n,
            self.mean_a + da * other.n / n,
            self.mean_b + db * other.n / n,
            self.m2_a + other.m2_a + da * da * weight,
            self.m2_b + other.m2_b + db * db * weight,
            self.co_m2 + other.co_m2 + da * db * weight,
            self.a_le_b + other.a_le_b,
            self.a_eq_b + other.a_eq_b,
        )

    @property
    def correlation(self) -> float | None:
        scale = math.sqrt(max(self.m2_a, 0.0) * max(self.m2_b, 0.0))
        return self.co_m2 / scale if scale > 0 else None

    @property
    def log_scale(self) -> float | None:
        """log(sd b / sd a): the scale of b against a (None where either column is constant)."""
        return 0.5 * math.log(self.m2_b / self.m2_a) if self.m2_a > 0 and self.m2_b > 0 else None

    @property
    def b_le_a(self) -> int:
        """Rows with b <= a: every row but those with a < b (a tie holds both orders)."""
        return self.n - self.a_le_b + self.a_eq_b

    def order(self, a: str, b: str) -> tuple[str, str] | None:
        """(low, high) of the pair (a, b) when low <= high held on BOUND_HELD of the rows, met or not."""
        if self.a_le_b >= BOUND_HELD * self.n:
            return a, b
        return (b, a) if self.b_le_a >= BOUND_HELD * self.n else None

    def bound(self, a: str, b: str) -> tuple[str, str] | None:
        """The order of the pair when low == high on at least BOUND_REACHED of the rows (and BOUND_REACHED_ROWS)
        too: an order the data meets, a physical bound (the dew point reaches the air temperature at saturation),
        not two series that happened not to cross."""
        if self.a_eq_b < max(BOUND_REACHED_ROWS, BOUND_REACHED * self.n):
            return None
        return self.order(a, b)


@dataclass(frozen=True)
class GroupMoments:
    """A numeric column's moments per value of a category."""

    groups: Mapping[str, Moments]

    def merge(self, other: GroupMoments) -> GroupMoments:
        merged = dict(self.groups)
        for value, moments in other.groups.items():
            merged[value] = merged[value].merge(moments) if value in merged else moments
        return GroupMoments(dict(sorted(merged.items())))

    @property
    def n(self) -> int:
        return sum(m.count for m in self.groups.values())

    @property
    def eta(self) -> float | None:
        """The correlation ratio: sqrt(between-group sum of squares / total sum of squares)."""
        total = Moments()
        for moments in self.groups.values():
            total = total.merge(moments)
        within = sum(m.m2 for m in self.groups.values())
        return math.sqrt(max(0.0, 1.0 - within / total.m2)) if total.m2 > 0 else None


@dataclass(frozen=True)
class Relations:
    diurnal: Mapping[str, Mapping[str, Diurnal]] = field(default_factory=dict)
    hour_of: Mapping[str, Mapping[str, tuple[int, ...]]] = field(default_factory=dict)
    lags: Mapping[str, QuantileSketch] = field(default_factory=dict)
    pairs: Mapping[str, PairMoments] = field(default_factory=dict)
    groups: Mapping[str, GroupMoments] = field(default_factory=dict)
    spread: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    identities: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    periods: Mapping[str, str] = field(default_factory=dict)
    calendar: Mapping[str, CalendarPart] = field(default_factory=dict)

    def period_named(self, time: str, column: str) -> str | None:
        """The calendar period of `time` that `column` names (`PERIODS`), where the rows showed one; else None."""
        found = self.periods.get(f"{time}|{column}")
        return found if found in PERIODS else None

    def association(self, feature: str, label: str) -> tuple[str, float, int] | None:
        """(key, association in [0, 1], rows) of a feature with the label: |correlation| of two numbers, the
        correlation ratio of a category and a number; None when this profile does not hold it."""
        key = pair_key(feature, label)
        if key in self.pairs:
            value = self.pairs[key].correlation
            return None if value is None else (f"r:{key}", abs(value), self.pairs[key].n)
        for group_key in (f"{feature}|{label}", f"{label}|{feature}"):
            if group_key in self.groups:
                eta = self.groups[group_key].eta
                return None if eta is None else (f"eta:{group_key}", eta, self.groups[group_key].n)
        return None

    def highest_association(self, feature: str, label: str) -> float | None:
        """The highest association of the feature with the label any one batch showed (`spread`; the merged one
        where no batch's is kept); None when this profile does not hold it."""
        known = self.association(feature, label)
        if known is None:
            return None
        key, merged, _ = known
        return self.spread.get(key, (merged, merged))[1]

    def merge(self, other: Relations) -> Relations:
        return Relations(
            diurnal=_nested(self.diurnal, other.diurnal, Diurnal.merge),
            hour_of=_nested(self.hour_of, other.hour_of, _add_counts),
            lags=_common(self.lags, other.lags, QuantileSketch.merge),
            pairs=_common(self.pairs, other.pairs, PairMoments.merge),
            groups=_common(self.groups, other.groups, GroupMoments.merge),
            spread=_common(self.spread, other.spread, lambda a, b: (min(a[0], b[0]), max(a[1], b[1]))),
            identities=_common(self.identities, other.identities, _add_counts),
            periods=_common(self.periods, other.periods, _finer_period),
            calendar=merge_calendar(self.calendar, other.calendar),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "diurnal": {
                t: {x: [list(d.counts), list(d.sums), list(d.squares)] for x, d in sorted(cols.items())}
                for t, cols in sorted(self.diurnal.items())
            },
            "hour_of": {t: {h: list(c) for h, c in sorted(cols.items())} for t, cols in sorted(self.hour_of.items())},
            "lags": {k: s.to_base64() for k, s in sorted(self.lags.items())},
            "pairs": {
                k: [p.n, p.mean_a, p.mean_b, p.m2_a, p.m2_b, p.co_m2, p.a_le_b, p.a_eq_b]
                for k, p in sorted(self.pairs.items())
            },
            "groups": {
                k: {v: [m.count, m.total, m.m2] for v, m in g.groups.items()} for k, g in sorted(self.groups.items())
            },
            "spread": {k: list(v) for k, v in sorted(self.spread.items())},
            "identities": {k: list(v) for k, v in sorted(self.identities.items())},
            "periods": dict(sorted(self.periods.items())),
            "calendar": {k: part.to_list() for k, part in sorted(self.calendar.items())},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Relations:
        return cls(
            diurnal={
                t: {x: Diurnal(*(tuple(float(v) for v in part) for part in d)) for x, d in cols.items()}
                for t, cols in data.get("diurnal", {}).items()
            },
            hour_of={
                t: {h: tuple(int(n) for n in c) for h, c in cols.items()} for t, cols in data.get("hour_of", {}).items()
            },
            lags={k: QuantileSketch.from_base64(v) for k, v in data.get("lags", {}).items()},
            pairs={
                k: PairMoments(
                    int(v[0]),
                    float(v[1]),
                    float(v[2]),
                    float(v[3]),
                    float(v[4]),
                    float(v[5]),
                    int(v[6]),
                    int(v[7]) if len(v) > 7 else 0,
                )
                for k, v in data.get("pairs", {}).items()  # a profile written before a_eq_b was kept: 0
            },
            groups={
                k: GroupMoments({v: Moments(int(m[0]), float(m[1]), float(m[2])) for v, m in g.items()})
                for k, g in data.get("groups", {}).items()
            },
            spread={k: (float(v[0]), float(v[1])) for k, v in data.get("spread", {}).items()},
            identities={k: (int(v[0]), int(v[1])) for k, v in data.get("identities", {}).items()},
            periods={k: str(v) for k, v in data.get("periods", {}).items()},  # none before periods were kept
            calendar={k: CalendarPart.from_list(v) for k, v in data.get("calendar", {}).items()},  # nor parts
        )


def _finer_period(a: str, b: str) -> str:
    """Of two batches' readings of a period, the finer (one value on every row is consistent with any period)."""
    if a == ANY_PERIOD:
        return b
    if b == ANY_PERIOD:
        return a
    return max(a, b, key=lambda period: PERIODS.index(period) if period in PERIODS else len(PERIODS))


def _add_counts(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b))


def _common(a: Mapping[str, Any], b: Mapping[str, Any], combine: Any) -> dict[str, Any]:
    """The keys both sides hold, combined: a relation one batch did not show is not kept."""
    return {key: combine(a[key], b[key]) for key in sorted(a) if key in b}


def _nested(a: Mapping[str, Mapping[str, Any]], b: Mapping[str, Mapping[str, Any]], combine: Any) -> dict[str, Any]:
    return {key: _common(a[key], b[key], combine) for key in sorted(a) if key in b}


# --- learning from one batch's rows ---------------------------------------------------------------


def epoch_ms_of(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(UTC epoch ms as int64, present mask) of a timestamp column; naive times read as UTC."""
    present = values.notna().to_numpy().copy()
    stamps = np.zeros(len(values), dtype=np.int64)
    if present.any():
        times = pd.to_datetime(values[present])
        if getattr(times.dt, "tz", None) is not None:
            times = times.dt.tz_convert("UTC").dt.tz_localize(None)
        stamps[present] = times.dt.as_unit("ms").astype("int64").to_numpy()
    return stamps, present


def _floats(values: pd.Series) -> np.ndarray:
    """Numbers as float64; missing and infinite values as NaN (left out of every relation)."""
    floats = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan, copy=True)
    floats[~np.isfinite(floats)] = np.nan
    return floats


def learn_relations(sample: pd.DataFrame, types: Mapping[str, str]) -> Relations:
    """The relations one batch's rows show (see the module's docstring)."""
    times = {c: epoch_ms_of(sample[c]) for c, t in types.items() if t == "timestamp" and c in sample}
    numbers = {c: _floats(sample[c]) for c, t in types.items() if t in _NUMERIC and c in sample}
    integers = [c for c, t in types.items() if t == "integer" and c in sample]
    categories = _categories(sample, types)
    pairs = _pairs(numbers)
    groups = _groups(sample, categories, numbers)
    return Relations(
        diurnal=_diurnal(times, numbers),
        hour_of=_hour_of(times, numbers, integers),
        lags=_lags(times),
        pairs=pairs,
        groups=groups,
        spread=_spread(pairs, groups),
        identities=_identities(numbers),
        periods=_periods(times, {**categories, **_whole_numbers(sample, integers)}),
        calendar=learn_calendar(times, numbers, integers),
    )


def _periods(times: Mapping[str, tuple[np.ndarray, np.ndarray]], categories: Mapping[str, pd.Series]) -> dict[str, str]:
    """ "T|C" -> the coarsest calendar period of T within which C holds one value (see the module's docstring)."""
    found: dict[str, str] = {}
    for time, (stamps, present) in times.items():
        if present.sum() < 2:
            continue
        moments = pd.to_datetime(stamps[present], unit="ms")
        keys = {"year": moments.year, "month": moments.year * 12 + moments.month, "day": stamps[present] // _DAY_MS}
        for column, values in categories.items():
            labels = values[present].reset_index(drop=True)
            if labels.isna().any():
                continue
            if labels.nunique() == 1:
                found[f"{time}|{column}"] = ANY_PERIOD
                continue
            for period in PERIODS:
                groups = pd.Series(np.asarray(keys[period]))
                by_period = labels.groupby(groups)
                if by_period.size().max() >= 2 and (by_period.nunique() == 1).all():
                    found[f"{time}|{column}"] = period
                    break
    return found


def _whole_numbers(sample: pd.DataFrame, integers: list[str]) -> dict[str, pd.Series]:
    """Integer columns of few values, as labels: a month, a quarter, a week or a year number names its period as a
    month's name does."""
    return _labels(sample, integers)


def _categories(sample: pd.DataFrame, types: Mapping[str, str]) -> dict[str, pd.Series]:
    return _labels(sample, [c for c, kind in types.items() if kind in ("string", "boolean") and c in sample])


def _labels(sample: pd.DataFrame, columns: list[str]) -> dict[str, pd.Series]:
    """The columns of at most MAX_GROUPS distinct values in the sample, as text labels (nulls kept)."""
    found = {}
    for column in columns:
        values = sample[column].astype("object")
        if values.nunique(dropna=True) <= MAX_GROUPS:
            found[column] = values.where(values.isna(), values.astype(str))
    return found


def _diurnal(
    times: Mapping[str, tuple[np.ndarray, np.ndarray]], numbers: Mapping[str, np.ndarray]
) -> dict[str, dict[str, Diurnal]]:
    result: dict[str, dict[str, Diurnal]] = {}
    for column, (stamps, present) in times.items():
        hours = utc_hours(stamps)
        by_column = {}
        for name, values in numbers.items():
            rows = present & ~np.isnan(values)
            x, h = values[rows], hours[rows]
            by_column[name] = Diurnal(
                *(
                    tuple(float(v) for v in np.bincount(h, weights=w, minlength=HOURS))
                    for w in (np.ones(len(x)), x, x * x)
                )
            )
        result[column] = by_column
    return result


def _hour_of(
    times: Mapping[str, tuple[np.ndarray, np.ndarray]], numbers: Mapping[str, np.ndarray], integers: list[str]
) -> dict[str, dict[str, tuple[int, ...]]]:
    result: dict[str, dict[str, tuple[int, ...]]] = {}
    for column, (stamps, present) in times.items():
        by_column = {}
        for name in integers:
            values = numbers[name]
            rows = present & ~np.isnan(values)
            by_column[name] = hour_offset_counts(hour_offsets(stamps[rows], values[rows]))
        result[column] = by_column
    return result


def utc_hours(stamps: np.ndarray) -> np.ndarray:
    """The UTC hour of the day (0..23) of each epoch-ms timestamp."""
    return np.floor_divide(stamps, _HOUR_MS) % HOURS


def hour_offsets(stamps: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row, (H - hour(T)) mod 24 for an hour column's values H and a timestamp's UTC epoch ms T (both
    present); -1 where H is not an hour of the day."""
    is_hour = (values >= 0) & (values <= HOURS - 1) & (np.mod(values, 1) == 0)
    hours = utc_hours(stamps)
    offsets = np.full(len(values), -1, dtype=np.int64)
    offsets[is_hour] = (values[is_hour].astype(np.int64) - hours[is_hour]) % HOURS
    return offsets


def hour_offset_counts(offsets: np.ndarray) -> tuple[int, ...]:
    """The `hour_of` relation of one batch: rows per offset 0..23, then the rows whose H is not an hour."""
    counts = np.bincount(offsets[offsets >= 0], minlength=HOURS)
    return tuple(int(n) for n in counts) + (int((offsets < 0).sum()),)


def _lags(times: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, QuantileSketch]:
    result = {}
    for a, b in combinations(sorted(times), 2):
        (sa, pa_), (sb, pb) = times[a], times[b]
        sketch = QuantileSketch()
        sketch.update((sb[pa_ & pb] - sa[pa_ & pb]).astype(np.float64))
        result[f"{a}|{b}"] = sketch
    return result


def _pairs(numbers: Mapping[str, np.ndarray]) -> dict[str, PairMoments]:
    names = sorted(numbers)[:_MAX_PAIR_COLUMNS]
    result = {}
    for a, b in combinations(names, 2):
        x, y = numbers[a], numbers[b]
        rows = ~np.isnan(x) & ~np.isnan(y)
        x, y = x[rows], y[rows]
        if not len(x):
            result[f"{a}|{b}"] = PairMoments(0, 0.0, 0.0, 0.0, 0.0, 0.0, 0)
            continue
        dx, dy = x - x.mean(), y - y.mean()
        result[f"{a}|{b}"] = PairMoments(
            len(x),
            float(x.mean()),
            float(y.mean()),
            float((dx * dx).sum()),
            float((dy * dy).sum()),
            float((dx * dy).sum()),
            int((x <= y).sum()),
            int((x == y).sum()),
        )
    return result


def _groups(
    sample: pd.DataFrame, categories: Mapping[str, pd.Series], numbers: Mapping[str, np.ndarray]
) -> dict[str, GroupMoments]:
    result = {}
    for column, values in categories.items():
        codes, labels = pd.factorize(values, sort=True)  # -1 for a missing category
        for name, x in numbers.items():
            rows = (codes >= 0) & ~np.isnan(x)
            result[f"{column}|{name}"] = GroupMoments(_moments_by(codes[rows], x[rows], [str(v) for v in labels]))
    return result


def _moments_by(codes: np.ndarray, x: np.ndarray, labels: list[str]) -> dict[str, Moments]:
    """Count, sum and m2 of x per code, in one pass of bincounts (deviations from the overall mean: no
    cancellation for values far from zero)."""
    if not len(x):
        return {}
    groups = len(labels)
    centre = float(x.mean())
    counts = np.bincount(codes, minlength=groups)
    totals = np.bincount(codes, weights=x, minlength=groups)
    shifted = x - centre
    sums, squares = (
        np.bincount(codes, weights=shifted, minlength=groups),
        np.bincount(codes, weights=shifted**2, minlength=groups),
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        m2 = np.where(counts > 0, squares - sums**2 / counts, 0.0)
    return {
        labels[g]: Moments(int(counts[g]), float(totals[g]), float(max(m2[g], 0.0))) for g in range(groups) if counts[g]
    }


def _spread(pairs: Mapping[str, PairMoments], groups: Mapping[str, GroupMoments]) -> dict[str, tuple[float, float]]:
    spread = {}
    for key, moments in pairs.items():
        if moments.correlation is not None:
            spread[f"r:{key}"] = (abs(moments.correlation),) * 2
        if moments.log_scale is not None:
            spread[f"k:{key}"] = (moments.log_scale,) * 2
    for key, grouped in groups.items():
        if grouped.eta is not None:
            spread[f"eta:{key}"] = (grouped.eta,) * 2
    return spread


# --- identities: c = a + b, c = a * b ---------------------------------------------------------------


def identity_holds(c: np.ndarray, a: np.ndarray, b: np.ndarray, op: str, tolerance: float) -> np.ndarray:
    """Per row: does c equal a (op) b within the tolerance (and the float error of the operation)?"""
    value = a + b if op == "+" else a * b
    return np.abs(c - value) <= tolerance + 1e-9 * np.maximum(np.abs(c), np.abs(value))


def order_broken(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Per row: low > high by more than half their finest decimal step and the float error (a conversion and
    its inverse leave 5.000000000000001 where the dew point met an air temperature of 5.0); False where missing."""
    tolerance = min(resolution(low), resolution(high)) + 1e-9 * np.maximum(np.abs(low), np.abs(high))
    with np.errstate(invalid="ignore"):
        return np.nan_to_num(low - high, nan=-np.inf) > tolerance


def resolution(values: np.ndarray) -> float:
    """Half the finest decimal step every value is a multiple of (0 for values with more than 6 decimals)."""
    present = values[~np.isnan(values)]
    for decimals in range(7):
        scaled = present * 10.0**decimals
        if np.allclose(scaled, np.round(scaled), rtol=0.0, atol=1e-6):
            return 0.5 * 10.0**-decimals
    return 0.0


def informative_rows(c: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rows holding all three values, not all zero (a night of zero irradiance satisfies every identity)."""
    return ~np.isnan(a) & ~np.isnan(b) & ~np.isnan(c) & ~((a == 0) & (b == 0) & (c == 0))


def _identities(numbers: Mapping[str, np.ndarray]) -> dict[str, tuple[int, int]]:
    names = [n for n in sorted(numbers) if _varies(numbers[n])][:_MAX_IDENTITY_COLUMNS]
    if len(names) < 3:
        return {}
    head = np.column_stack([numbers[n][: 4 * IDENTITY_SCREEN_ROWS] for n in names])  # screened on the first rows
    found = {}
    for k, c in enumerate(names):
        tolerance = resolution(numbers[c])
        for op in ("+", "*"):
            for i, j in _screened(head, k, op, tolerance):
                a, b = names[i], names[j]
                rows = informative_rows(numbers[c], numbers[a], numbers[b])
                holds = identity_holds(numbers[c][rows], numbers[a][rows], numbers[b][rows], op, tolerance)
                found[f"{c}={a}{op}{b}"] = (int(holds.sum()), int(rows.sum()))
    return found


def _varies(values: np.ndarray) -> bool:
    """Whether a column's present values differ; one with none present does not (and asks numpy for no spread)."""
    present = values[~np.isnan(values)]
    return present.size > 0 and bool(present.std() > 0)


def _screened(head: np.ndarray, k: int, op: str, tolerance: float) -> list[tuple[int, int]]:
    """(i, j), i < j, neither k: the pairs whose (a op b) equals column k on at least IDENTITY_SCREEN_ROWS
    informative rows of the head and on every informative row of it."""
    c = head[:, k][:, None, None]
    a, b = head[:, :, None], head[:, None, :]
    with np.errstate(invalid="ignore", over="ignore"):
        informative = ~np.isnan(a) & ~np.isnan(b) & ~np.isnan(c) & ~((a == 0) & (b == 0) & (c == 0))
        holds = identity_holds(c, a, b, op, tolerance)
    count, broken = informative.sum(axis=0), (informative & ~holds).sum(axis=0)
    ok = (count >= IDENTITY_SCREEN_ROWS) & (broken == 0)
    return [(i, j) for i, j in zip(*np.nonzero(np.triu(ok, 1))) if k not in (i, j)]
