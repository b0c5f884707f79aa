"""Cut one table into batches by a calendar cadence, profiling every batch in one pass over the files.

An initial table seeds a reference of several batches: `split_batches` reads the time column once to
count each batch's rows (so each batch's seeded sample is drawn over its own rows exactly as
`read_snapshot` would draw it), then reads the table once, row group by row group, routing each row to
its batch's profile. Windows are calendar periods in UTC, as (after_ms, through_ms]: a month from its
first millisecond to its last, a week from Monday 00:00, a day from 00:00. Rows with no time belong to
no batch: the split refuses them (fail closed) rather than drop them unseen.

`iter_batches` hands the batches over one at a time, oldest first, each as soon as its rows and every older
batch's are all seen: a batch's builder is made when its first rows arrive and finished (its profile, its sample)
when its last ones have, so a table stored in time order holds about one batch's state beside the row group being
read, whatever the number of batches. `split_batches` is the list of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from profiles.profile import TimeWindow
from profiles.profiler import ProfileBuilder, epoch_ms
from profiles.snapshot import DEFAULT_SAMPLE_ROWS, Snapshot, SnapshotError, open_files, profiled_snapshot

__all__ = ["split_batches", "iter_batches", "cadence_windows", "period_starts", "infer_cadence", "CADENCES"]

CADENCES = ("month", "week", "day")
_DAY_MS = 86_400_000


def infer_cadence(span_ms: float) -> str:
    """The cadence that cuts the span into about 8 to 60 batches: month from 8 months, week from 8 weeks."""
    days = span_ms / _DAY_MS
    return "month" if days >= 240 else "week" if days >= 56 else "day"


def period_starts(cadence: str, stamps: np.ndarray) -> np.ndarray:
    """Each time's period start, in epoch ms."""
    days = np.floor_divide(stamps, _DAY_MS)
    if cadence == "day":
        return days * _DAY_MS
    if cadence == "week":
        return (days - (days + 3) % 7) * _DAY_MS  # back to Monday (1970-01-01 was a Thursday)
    months = stamps.astype("datetime64[ms]").astype("datetime64[M]")
    return months.astype("datetime64[ms]").astype(np.int64)


def _period_end(cadence: str, start_ms: int) -> int:
    if cadence == "month":
        month = np.datetime64(start_ms, "ms").astype("datetime64[M]") + 1
        return int(month.astype("datetime64[ms]").astype(np.int64))
    return start_ms + (_DAY_MS if cadence == "day" else 7 * _DAY_MS)


def _label(cadence: str, start_ms: int) -> str:
    stamp = pd.Timestamp(start_ms, unit="ms", tz="UTC")
    if cadence == "month":
        return stamp.strftime("%Y-%m")
    return stamp.strftime("%Y-%m-%d") if cadence == "day" else f"week-{stamp:%Y-%m-%d}"


def cadence_windows(time_column: str, cadence: str, starts_ms: Sequence[int]) -> list[tuple[str, TimeWindow]]:
    """(batch id, window) for each period start."""
    if cadence not in CADENCES:
        raise ValueError(f"cadence {cadence!r} is not one of {', '.join(CADENCES)} (or 'auto')")
    return [(_label(cadence, s), TimeWindow(time_column, s - 1, _period_end(cadence, s) - 1)) for s in starts_ms]


def split_batches(
    paths: str | Path | Sequence[str | Path],
    *,
    time_column: str,
    cadence: str = "auto",
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    seed: int = 0,
) -> list[Snapshot]:
    """One snapshot (profile, sample, batch identity) per non-empty period of the table, oldest first."""
    return list(iter_batches(paths, time_column=time_column, cadence=cadence, sample_rows=sample_rows, seed=seed))


def iter_batches(
    paths: str | Path | Sequence[str | Path],
    *,
    time_column: str,
    cadence: str = "auto",
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    seed: int = 0,
) -> Iterator[Snapshot]:
    """`split_batches`' snapshots one at a time, oldest first, each as soon as it and every older one are read."""
    files = (str(paths),) if isinstance(paths, (str, Path)) else tuple(str(p) for p in paths)
    try:
        sources, schema = open_files(files)
        if time_column not in schema.names:
            raise ValueError(f"no time column {time_column!r} in the table: name the event-time column")
        counts, span = _count_periods(sources, time_column)
        chosen = infer_cadence(span) if cadence == "auto" else cadence
        split = _Split(files, schema, _regroup(counts, chosen), time_column, chosen, sample_rows, seed)
        for source in sources:
            for group in range(source.num_row_groups):
                yield from split.route(source.read_row_group(group))
        if split.pending:
            raise ValueError(f"{len(split.pending)} batches were announced and never read whole: read them again")
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SnapshotError(f"cannot split {', '.join(files)} into batches: {exc}") from exc


class _Split:
    """The batches of one table being cut: a builder per batch whose rows have begun to arrive, each finished and
    handed over (oldest first) once it and every older batch hold all their rows."""

    def __init__(
        self,
        files: tuple[str, ...],
        schema: pa.Schema,
        counts: dict[int, int],
        time_column: str,
        cadence: str,
        sample_rows: int,
        seed: int,
    ) -> None:
        self.files, self.schema, self.counts = files, schema, counts
        self.time_column, self.cadence, self.sample_rows, self.seed = time_column, cadence, sample_rows, seed
        self.pending = list(zip(cadence_windows(time_column, cadence, sorted(counts)), sorted(counts)))
        self.builders: dict[int, ProfileBuilder] = {}

    def route(self, table: pa.Table) -> Iterator[Snapshot]:
        """Each row of `table` to its batch's builder; the batches it completes, oldest first. No builder or finished
        batch is held in a local across a `yield`: once handed over, a batch is the caller's alone."""
        starts = period_starts(self.cadence, _stamps(table.column(self.time_column), self.time_column))
        for start in np.unique(starts).tolist():
            self._builder(start).add(table.filter(pa.array(starts == start)))
            yield from self._ready()

    def _builder(self, start: int) -> ProfileBuilder:
        if start not in self.counts:
            raise ValueError(
                "rows arrived in a period the time column did not count: the files changed while they were read; "
                "read them again"
            )
        if start not in self.builders:
            self.builders[start] = ProfileBuilder(
                self.schema, self.counts[start], sample_rows=self.sample_rows, seed=self.seed
            )
        return self.builders[start]

    def _ready(self) -> Iterator[Snapshot]:
        while self.pending and self._complete(self.pending[0][1]):
            (batch_id, window), start = self.pending.pop(0)
            yield self._finish(self.builders.pop(start), batch_id, window)

    def _complete(self, start: int) -> bool:
        return start in self.builders and self.builders[start].offset >= self.counts[start]

    def _finish(self, builder: ProfileBuilder, batch_id: str, window: TimeWindow) -> Snapshot:
        profile, sample = builder.finish()
        return profiled_snapshot(self.files, self.schema, profile, sample, self.time_column, window, batch_id)


def _stamps(column: pa.ChunkedArray, time_column: str) -> np.ndarray:
    if column.null_count:
        raise ValueError(
            f"{column.null_count} rows have no {time_column!r}: they belong to no batch; fill or "
            "drop them upstream first"
        )
    return np.concatenate([epoch_ms(chunk) for chunk in column.chunks]) if column.num_chunks else np.empty(0, np.int64)


def _count_periods(sources: list[pq.ParquetFile], time_column: str) -> tuple[dict[int, int], float]:
    """Rows per day, and the time span: one read of the time column."""
    counts: dict[int, int] = {}
    low, high = np.inf, -np.inf
    for source in sources:
        for group in range(source.num_row_groups):
            stamps = _stamps(source.read_row_group(group, columns=[time_column]).column(0), time_column)
            if len(stamps):
                low, high = min(low, int(stamps.min())), max(high, int(stamps.max()))
            _tally(counts, period_starts("day", stamps))
    return counts, (high - low) if high >= low else 0.0


def _regroup(days: dict[int, int], cadence: str) -> dict[int, int]:
    """Rows per period, from rows per day (every period is a whole number of days)."""
    starts = period_starts(cadence, np.array(sorted(days), dtype=np.int64))
    counts: dict[int, int] = {}
    for start, day in zip(starts.tolist(), sorted(days)):
        counts[start] = counts.get(start, 0) + days[day]
    return counts


def _tally(counts: dict[int, int], starts: np.ndarray) -> None:
    values, tallies = np.unique(starts, return_counts=True)
    for value, tally in zip(values.tolist(), tallies.tolist()):
        counts[value] = counts.get(value, 0) + tally
