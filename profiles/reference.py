"""The reference a batch is judged against: the last N clean batches, merged, and how they varied.

`build_reference` merges the batches' profiles (sketches merged, never a row reread) and keeps, per
batch, the few numbers that describe natural variation from one batch to the next: per column the
median, the interquartile range, the null share, the zero share and the share of the most frequent
value, and the quantiles of its core and its share on the reference's point mass (`guard.variation`);
per batch its rows and time span, from which the cadence and the expected batch size follow.
Pure and deterministic: the same batches in the same order give the same reference, byte for byte.
`reference_of` builds the same reference from batches read one at a time (twice), so a reference of many wide
batches never holds more than one of them.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator, Mapping, Sequence

from profiles.cores import atom_of, core, sketched
from profiles.profile import BatchProfile, ColumnProfile, DatasetProfile, canonical_json, json_number, parse_number

__all__ = ["Reference", "BatchSummary", "ColumnSummary", "build_reference", "reference_of", "REFERENCE_FORMAT"]

REFERENCE_FORMAT = "kintsugi.reference/2"

CADENCE_BATCHES = 3  # the newest batches whose spans say how long a batch is now (a median: one odd batch is outvoted)


@dataclass(frozen=True)
class ColumnSummary:
    """One column in one batch: where it sat and how it spread (None where it does not apply)."""

    median: float | None
    iqr: float | None  # 75th minus 25th percentile
    null_share: float
    zero_share: float | None
    point_share: float | None  # share of the most frequent value (numbers and times; text where its values are counted)
    mean: float | None
    stdev: float | None
    # the core (values off the reference's point mass, `guard.variation`): where and how wide it sat
    core_q10: float | None = None
    core_q25: float | None = None
    core_median: float | None = None
    core_q75: float | None = None
    core_q90: float | None = None
    atom_share: float | None = None  # share of values on the reference's point mass (None: it has none)
    core_count: float | None = None  # values in the core, and all values: the sizes behind the statistics
    values: float | None = None
    # counted text: the share of its values no earlier kept batch held (None: the first batch, or values not counted
    # in it or in an earlier one)
    unseen_share: float | None = None

    @classmethod
    def of(cls, column: ColumnProfile, atom: float | None = None) -> ColumnSummary:
        """The summary; `atom` is the merged reference's point mass, kept out of the core."""
        sketch = column.sketch
        median = q25 = q75 = None
        if sketch is not None and sketch.n:
            q25, median, q75 = sketch.quantiles((0.25, 0.5, 0.75))
        elif column.quantiles:
            q25, median, q75 = column.quantile(0.25), column.quantile(0.5), column.quantile(0.75)
        mass = column.point_mass
        return cls(
            median=median,
            iqr=None if q25 is None or q75 is None else q75 - q25,
            null_share=column.null_fraction,
            zero_share=column.zero_share,
            point_share=mass[1] if mass else _top_share(column),
            mean=column.mean,
            stdev=column.stdev,
            **_core_fields(column, atom),
        )


def _top_share(column: ColumnProfile) -> float | None:
    """The most frequent value's share of the values, of a column whose values are counted (text)."""
    if not column.value_counts or column.values <= 0:
        return None
    return max(count for _, count in column.value_counts) / column.values


def _core_fields(column: ColumnProfile, atom: float | None) -> dict[str, float | None]:
    if column.logical_type not in ("integer", "number") or not sketched(column):
        return {}
    assert column.sketch is not None
    found = core(column.sketch, atom)
    levels = found.quantiles or (None,) * 5
    return {
        "core_q10": levels[0],
        "core_q25": levels[1],
        "core_median": levels[2],
        "core_q75": levels[3],
        "core_q90": levels[4],
        "atom_share": found.atom_share,
        "core_count": found.count,
        "values": found.total,
    }


@dataclass(frozen=True)
class BatchSummary:
    batch_id: str
    rows: int
    start_ms: int | None
    end_ms: int | None
    after_ms: int | None  # the window the batch was cut by, when it was
    through_ms: int | None
    columns: Mapping[str, ColumnSummary]
    instants: float | None = None  # distinct times of the batch's rows (an estimate; None: not known)

    @property
    def span_ms(self) -> int | None:
        """The window's length when the batch was cut by one, else the time between its first and last rows."""
        if self.after_ms is not None and self.through_ms is not None:
            return self.through_ms - self.after_ms
        return self.end_ms - self.start_ms if self.start_ms is not None and self.end_ms is not None else None


@dataclass(frozen=True)
class Reference:
    """The merged profile of the reference batches and their batch-to-batch variation."""

    profile: DatasetProfile
    batches: tuple[BatchSummary, ...]
    time_column: str | None = None

    # what the checks read from a DatasetProfile, so code written for one reads a Reference alike
    @property
    def columns(self) -> Mapping[str, ColumnProfile]:
        return self.profile.columns

    @property
    def row_count(self) -> int:
        return self.profile.row_count

    @property
    def expected_rows(self) -> float:
        """The median batch's rows: what one more batch is expected to hold."""
        return float(statistics.median(b.rows for b in self.batches))

    @property
    def cadence_ms(self) -> float | None:
        """How long a batch is now: the median span of the newest `CADENCE_BATCHES` batches (a window's length, or
        the time between consecutive batches' ends). The newest, because the kept batches mix cadences: those
        `kintsugi init` split the history in, the batches landed since, and the same season a year before."""
        newest = sorted(self.batches, key=lambda b: b.end_ms if b.end_ms is not None else -1)
        spans = [b.through_ms - b.after_ms for b in newest if b.after_ms is not None and b.through_ms is not None]
        if not spans:
            ends = [b.end_ms for b in newest if b.end_ms is not None]
            spans = [later - earlier for earlier, later in zip(ends, ends[1:])]
        return float(statistics.median(spans[-CADENCE_BATCHES:])) if spans else None

    @property
    def span_ms(self) -> int | None:
        """From the first reference batch's first time to the last one's last (None: no times known)."""
        starts = [b.start_ms for b in self.batches if b.start_ms is not None]
        ends = [b.end_ms for b in self.batches if b.end_ms is not None]
        return max(ends) - min(starts) if starts and ends else None

    @property
    def watermark_ms(self) -> int | None:
        """The newest time the reference has seen: a next batch starts after it."""
        ends = [b.through_ms if b.through_ms is not None else b.end_ms for b in self.batches]
        known = [e for e in ends if e is not None]
        return max(known) if known else None

    @property
    def periodic(self) -> bool:
        """Every row of a batch shares its period's time (a panel, a periodic aggregate, a snapshot): the kept
        batches each hold one instant, of several rows. Its volume is rows per period, not rows per unit of time."""
        counts = [b.instants for b in self.batches]
        if not counts or any(c is None for c in counts):
            return False
        return all(round(c) == 1 for c in counts if c is not None) and self.expected_rows >= 2

    def shorter_by(self, batch: BatchProfile | None) -> float:
        """How many times shorter `batch` is than a reference batch, in time and in rows alike (>= 1): the
        lesser of the two ratios, so a batch of the usual rows at one timestamp, or of fewer rows over the
        usual span, is not read as short. Its first-to-last-row span counts one row interval more (a
        week of hourly rows spans 168 hours). 1 when either is unknown."""
        cadence = self.cadence_ms
        if batch is None or batch.start_ms is None or batch.end_ms is None or not cadence or batch.row_count <= 0:
            return 1.0
        expected = self.expected_rows
        span = batch.end_ms - batch.start_ms + cadence / max(expected, 1.0)
        return max(1.0, min(cadence / span, expected / batch.row_count))

    def held_per_batch(self, column: str) -> bool:
        """Every kept batch held one value of the column on all its rows (a period's month, year or flag: constant
        within a batch by construction), and at least two batches are kept; or the column names a calendar period
        of the time the batches are cut on (`Relations.period_named`: a month's name in batches cut by the week,
        which hold one or two of its values)."""
        shares = [s.point_share for s in self.variation(column)]
        if len(shares) >= 2 and all(share == 1.0 for share in shares):
            return True
        relations = self.profile.relations
        return bool(self.time_column and relations and relations.period_named(self.time_column, column))

    def holds_the_periods_value(self, column: str, observed: ColumnProfile | None) -> bool:
        """The batch holds one value of a column every kept batch held on one value: the period's value."""
        if observed is None or not self.held_per_batch(column):
            return False
        if observed.value_counts is not None:  # text: one value counted
            return len(observed.value_counts) == 1
        return observed.minimum is not None and observed.minimum == observed.maximum

    def unseen_values(self, column: str) -> tuple[int, int] | None:
        """(values no earlier kept batch held, values counted) of a counted text column over the kept batches after
        the first that holds it: how often the column brings a new value; None where one of them did not count its
        values, or no batch follows the first."""
        held = [(b.columns[column], b.rows) for b in self.batches if column in b.columns][1:]
        if not held or any(summary.unseen_share is None for summary, _ in held):
            return None
        values = [rows * (1.0 - summary.null_share) for summary, rows in held]
        unseen = sum((summary.unseen_share or 0.0) * n for (summary, _), n in zip(held, values))
        return round(unseen), round(sum(values))

    def variation(self, column: str) -> list[ColumnSummary]:
        """The column's summary in each batch that has it, oldest first."""
        return [b.columns[column] for b in self.batches if column in b.columns]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": REFERENCE_FORMAT,
            "time_column": self.time_column,
            "profile": self.profile.to_dict(),
            "batches": [_batch_to_dict(b) for b in self.batches],
        }

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Reference:
        if data.get("format") != REFERENCE_FORMAT:
            raise ValueError(
                f"expected a {REFERENCE_FORMAT} document, got format {data.get('format')!r}: "
                "build the reference again with this version of the guard"
            )
        return cls(
            profile=DatasetProfile.from_dict(data["profile"]),
            batches=tuple(_batch_from_dict(b) for b in data["batches"]),
            time_column=data.get("time_column"),
        )

    @classmethod
    def from_json(cls, text: str) -> Reference:
        return cls.from_dict(json.loads(text))


def build_reference(batch_profiles: Sequence[BatchProfile]) -> Reference:
    """Merge the batches (in the order given: oldest first) into one reference."""
    return reference_of(lambda: iter(batch_profiles))


def reference_of(read: Callable[[], Iterator[BatchProfile]]) -> Reference:
    """`build_reference` of batches read one at a time, twice: each call of `read` gives them again, oldest first
    (from where they are kept). The first reading merges them; the second summarises each against the merge (its
    point masses). Held at once: the merge, the summaries and the batch being read, whatever the number of batches.
    The same batches give the same reference, byte for byte, as `build_reference` of them in a list."""
    merged, ids, clock = _merged(read())
    atoms = {name: atom_of(column) if sketched(column) else None for name, column in merged.columns.items()}
    summaries = []
    seen: dict[str, set[str] | None] = {}
    for position, batch in enumerate(read()):
        if position >= len(ids) or batch.batch_id != ids[position]:
            raise ValueError(_CHANGED)
        summaries.append(_with_unseen(_summary(batch, atoms), batch, seen))
    if len(summaries) != len(ids):
        raise ValueError(_CHANGED)
    return Reference(profile=merged, batches=tuple(summaries), time_column=clock)


_CHANGED = "the batches changed while the reference was built from them: build it again"


def _merged(batches: Iterator[BatchProfile]) -> tuple[DatasetProfile, list[str], str | None]:
    """The batches' merged profile, their ids in order and their time column, checked as `build_reference` does."""
    merged: DatasetProfile | None = None
    ids: list[str] = []
    clocks: set[str] = set()
    for batch in batches:
        if batch.outlined:
            raise ValueError(f"batch {batch.batch_id} is an outline (no sketches): build a reference of whole profiles")
        ids.append(batch.batch_id)
        if batch.time_column is not None:
            clocks.add(batch.time_column)
        merged = batch.profile if merged is None else merged.merge(batch.profile)
    if merged is None:
        raise ValueError(
            "a reference needs at least one clean batch: profile one with read_snapshot or split_batches first"
        )
    if len(clocks) > 1:
        raise ValueError(
            f"the batches were cut on different time columns ({', '.join(sorted(clocks))}): "
            "build a reference from batches of one table"
        )
    if len(set(ids)) != len(ids):
        raise ValueError(
            f"batch ids repeat ({', '.join(sorted({i for i in ids if ids.count(i) > 1}))}): "
            "a batch counted twice would weigh twice; pass each batch once"
        )
    return merged, ids, clocks.pop() if clocks else None


def _summary(batch: BatchProfile, atoms: Mapping[str, float | None]) -> BatchSummary:
    window = batch.window
    return BatchSummary(
        batch_id=batch.batch_id,
        rows=batch.row_count,
        start_ms=batch.start_ms,
        end_ms=batch.end_ms,
        after_ms=window.after_ms if window else None,
        through_ms=window.through_ms if window else None,
        columns={name: ColumnSummary.of(column, atoms.get(name)) for name, column in batch.profile.columns.items()},
        instants=_instants(batch),
    )


def _with_unseen(summary: BatchSummary, batch: BatchProfile, seen: dict[str, set[str] | None]) -> BatchSummary:
    """The summary with each counted text column's share of values no earlier batch held (`seen`: the values the
    batches before held, per column; None where one of them did not count its values), and `seen` grown by it."""
    columns = dict(summary.columns)
    for name, column in batch.profile.columns.items():
        counts = column.value_counts if column.logical_type == "string" else None
        earlier = seen.get(name)
        if counts is not None and earlier is not None and column.values > 0:
            unseen = sum(count for value, count in counts if value not in earlier)
            columns[name] = replace(columns[name], unseen_share=unseen / column.values)
        if counts is None:
            seen[name] = None
        elif name not in seen:
            seen[name] = {value for value, _ in counts}
        elif (held := seen[name]) is not None:
            held.update(value for value, _ in counts)
    return replace(summary, columns=columns)


def _instants(batch: BatchProfile) -> float | None:
    """The batch's distinct times: exactly 1 when its first and last rows share one, else the time column's
    distinct-count estimate."""
    if batch.start_ms is not None and batch.start_ms == batch.end_ms and batch.row_count:
        return 1.0
    clock = batch.profile.columns.get(batch.time_column) if batch.time_column is not None else None
    count = clock.distinct_count if clock is not None else None
    return None if count is None else round(count, 3)


def _batch_to_dict(batch: BatchSummary) -> dict[str, Any]:
    return {
        "batch_id": batch.batch_id,
        "rows": batch.rows,
        "start_ms": batch.start_ms,
        "end_ms": batch.end_ms,
        "after_ms": batch.after_ms,
        "through_ms": batch.through_ms,
        "instants": batch.instants,
        "columns": {
            name: {
                key: value if isinstance(value, (int, type(None))) else json_number(value)
                for key, value in column.__dict__.items()
            }
            for name, column in batch.columns.items()
        },
    }


def _batch_from_dict(data: Mapping[str, Any]) -> BatchSummary:
    return BatchSummary(
        batch_id=data["batch_id"],
        rows=int(data["rows"]),
        start_ms=data.get("start_ms"),
        end_ms=data.get("end_ms"),
        after_ms=data.get("after_ms"),
        through_ms=data.get("through_ms"),
        columns={name: _summary_from_dict(column) for name, column in data["columns"].items()},
        instants=data.get("instants"),
    )


def _summary_from_dict(data: Mapping[str, Any]) -> ColumnSummary:
    fields = {key: parse_number(value) for key, value in data.items()}
    null_share = fields.pop("null_share", None)
    if null_share is None:
        raise ValueError("a reference batch summary has no null_share: profile the batch again")
    return ColumnSummary(null_share=null_share, **fields)
