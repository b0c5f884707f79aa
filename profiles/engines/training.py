"""A seeded, time-stratified sample of the labelled rows, drawn through an engine, for training at scale.

When the labelled rows exceed the spec's row budget, training reads `training_sample(...)` instead of the
whole table. Two passes through the engine:

1. the time and label columns only: labelled rows per stratum (a calendar period of `time_column` in UTC:
   month, week from Monday, or day; "auto" picks the cadence as `profiles.batches.infer_cadence` does);
2. every column: the content hash of the whole table (`profiles.engines.content`, the same in both engines)
   and, per stratum, the labelled rows of smallest score, the score being splitmix64(hash of the row's
   key ^ seed) (of the canonical row without keys), as the guard's sample by hash.

Allocation is proportional: stratum s of N_s labelled rows gets round(rows x N_s / N) rows, the rounding
by largest remainder so the sample has exactly `rows` rows (all labelled rows when N <= rows). The rows
chosen do not depend on the engine, the partitioning or the row order; the frame is sorted by stratum,
then score. Rows with no time form their own stratum ("none").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from profiles.batches import infer_cadence, period_starts
from profiles.engines.content import ContentDigest, canonical_row_hashes
from profiles.profiler import epoch_ms, frame_of, sample_scores
from tables import readonce

__all__ = ["TrainingSample", "training_sample", "allocate", "SAMPLE_FORMAT"]

SAMPLE_FORMAT = "kintsugi.training-sample/1"
_NO_TIME = np.iinfo(np.int64).min  # the stratum of rows without a time


@dataclass(frozen=True)
class TrainingSample:
    frame: pd.DataFrame
    description: dict[str, Any]  # format, engine, seed, rows, labelled_rows, table_rows, cadence, strata,
    #                               table_hash, time_column, label_column, keys, method


def allocate(counts: dict[int, int], rows: int) -> dict[int, int]:
    """Rows per stratum, proportional to its labelled rows, summing to min(rows, total) (largest remainder)."""
    total = sum(counts.values())
    if total <= rows:
        return dict(counts)
    shares = {s: rows * n / total for s, n in counts.items()}
    chosen = {s: int(math.floor(v)) for s, v in shares.items()}
    left = rows - sum(chosen.values())
    for s in sorted(shares, key=lambda s: (-(shares[s] - chosen[s]), s))[:left]:
        chosen[s] += 1
    return chosen


def _periods(table: pa.Table, time_column: str, cadence: str) -> np.ndarray:
    column = table.column(time_column)
    periods = np.full(table.num_rows, _NO_TIME, dtype=np.int64)
    valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
    periods[valid] = period_starts(cadence, epoch_ms(column))
    return periods


def _labelled(table: pa.Table, label_column: str) -> np.ndarray:
    return pc.is_valid(table.column(label_column)).to_numpy(zero_copy_only=False)


@dataclass
class _Counts:
    """Pass 1: labelled rows per day (regrouped into the cadence afterwards) and the time span."""

    days: dict[int, int] = field(default_factory=dict)
    low: float = math.inf
    high: float = -math.inf

    def add(self, table: pa.Table, time_column: str, label_column: str) -> None:
        labelled = table.filter(pa.array(_labelled(table, label_column)))
        periods = _periods(labelled, time_column, "day")
        known = periods[periods != _NO_TIME]
        if len(known):
            self.low, self.high = min(self.low, int(known.min())), max(self.high, int(known.max()))
        values, tallies = np.unique(periods, return_counts=True)
        for value, tally in zip(values.tolist(), tallies.tolist()):
            self.days[value] = self.days.get(value, 0) + tally

    def merge(self, other: _Counts) -> None:
        for day, count in other.days.items():
            self.days[day] = self.days.get(day, 0) + count
        self.low, self.high = min(self.low, other.low), max(self.high, other.high)

    def strata(self, cadence: str) -> tuple[str, dict[int, int]]:
        chosen = infer_cadence(self.high - self.low if self.high >= self.low else 0) if cadence == "auto" else cadence
        counts: dict[int, int] = {}
        for day, count in self.days.items():
            start = day if day == _NO_TIME else int(period_starts(chosen, np.array([day]))[0])
            counts[start] = counts.get(start, 0) + count
        return chosen, counts


@dataclass
class _Picker:
    """Pass 2: the content digest of every row, and each stratum's candidate rows (score under a ceiling)."""

    time_column: str
    label_column: str
    cadence: str
    keys: tuple[str, ...]
    seed: int
    ceilings: dict[int, int]  # stratum -> keep scores <= this (2^64-1: all)
    digest: ContentDigest = field(default_factory=ContentDigest)
    pieces: list[pa.Table] = field(default_factory=list)
    scores: list[np.ndarray] = field(default_factory=list)
    strata: list[np.ndarray] = field(default_factory=list)

    def add(self, table: pa.Table) -> None:
        self.digest = self.digest.merge(ContentDigest.of(table))
        labelled = table.filter(pa.array(_labelled(table, self.label_column)))
        if not labelled.num_rows:
            return
        periods = _periods(labelled, self.time_column, self.cadence)
        scores, _ = sample_scores(labelled, self.keys, self.seed)
        ceilings = np.array([self.ceilings.get(p, 0) for p in periods.tolist()], dtype=np.uint64)
        keep = np.flatnonzero(scores <= ceilings)
        self.pieces.append(labelled.take(pa.array(keep)))
        self.scores.append(scores[keep])
        self.strata.append(periods[keep])

    def merge(self, other: _Picker) -> None:
        self.digest = self.digest.merge(other.digest)
        self.pieces += other.pieces
        self.scores += other.scores
        self.strata += other.strata

    def finish(self, allocation: dict[int, int], schema: pa.Schema) -> pa.Table:
        if not self.pieces:
            return schema.empty_table()
        table = pa.concat_tables([p.cast(schema) for p in self.pieces])
        scores, strata = np.concatenate(self.scores), np.concatenate(self.strata)
        order = np.lexsort((canonical_row_hashes(table), scores, strata))
        taken: list[int] = []
        for stratum in sorted(allocation):
            rows = order[strata[order] == stratum][: allocation[stratum]]
            if len(rows) < allocation[stratum]:
                raise ValueError(
                    f"stratum {stratum} kept {len(rows)} candidate rows for {allocation[stratum]}: "
                    "draw again with another seed"
                )
            taken.extend(rows.tolist())
        return table.take(pa.array(taken, type=pa.int64()))


def _ceilings(allocation: dict[int, int], counts: dict[int, int]) -> dict[int, int]:
    """Per stratum, a score ceiling keeping about its allocation + 8 standard deviations of candidates."""
    top = 2**64 - 1
    out = {}
    for stratum, wanted in allocation.items():
        share = (wanted + 8 * math.sqrt(wanted) + 64) / counts[stratum] if counts[stratum] else 1.0
        out[stratum] = top if share >= 1 else int(share * top)
    return out


def training_sample(
    engine: str,
    source: str | Path | Sequence[str | Path],
    *,
    rows: int,
    time_column: str,
    label_column: str,
    seed: int = 0,
    cadence: str = "auto",
    keys: Sequence[str] = (),
    session: Any = None,
) -> TrainingSample:
    """`rows` labelled rows of `source`, stratified by period of `time_column`, drawn through `engine`."""
    if rows <= 0:
        raise ValueError(f"a training sample needs a positive row budget, not {rows}: set the spec's row budget")
    passes = _ArrowPasses(source) if engine == "arrow" else _SparkPasses(source, session) if engine == "spark" else None
    if passes is None:
        raise ValueError(f"unknown engine {engine!r}: use arrow or spark")
    counts = _Counts()
    for part in passes.run(lambda tables: _count(tables, time_column, label_column)):
        counts.merge(part)
    chosen, strata = counts.strata(cadence)
    allocation = allocate(strata, rows)
    picker = _Picker(time_column, label_column, chosen, tuple(keys), seed, _ceilings(allocation, strata))
    for part in passes.run(lambda tables: _pick(tables, picker)):  # each part starts from picker's settings
        picker.merge(part)
    sample = picker.finish(allocation, passes.schema())
    description = {
        "format": SAMPLE_FORMAT,
        "engine": engine,
        "seed": seed,
        "rows": sample.num_rows,
        "labelled_rows": sum(strata.values()),
        "table_rows": picker.digest.rows,
        "table_hash": picker.digest.hash,
        "time_column": time_column,
        "label_column": label_column,
        "keys": list(keys),
        "cadence": chosen,
        "strata": {_label(s): {"labelled_rows": strata[s], "sampled_rows": allocation[s]} for s in sorted(strata)},
        "method": "proportional allocation by period; within a period the rows of smallest splitmix64(key hash ^ seed)",
    }
    return TrainingSample(frame_of(sample), description)


def _label(stratum: int) -> str:
    if stratum == _NO_TIME:
        return "none"
    return pd.Timestamp(stratum, unit="ms", tz="UTC").isoformat()


def _count(tables: Iterable[pa.Table], time_column: str, label_column: str) -> _Counts:
    counts = _Counts()
    for table in tables:
        counts.add(table, time_column, label_column)
    return counts


def _pick(tables: Iterable[pa.Table], template: _Picker) -> _Picker:
    picker = _Picker(
        template.time_column, template.label_column, template.cadence, template.keys, template.seed, template.ceilings
    )
    for table in tables:
        picker.add(table)
    return picker


class _ArrowPasses:
    def __init__(self, source: str | Path | Sequence[str | Path]) -> None:
        self.files = [str(source)] if isinstance(source, (str, Path)) else [str(p) for p in source]

    def run(self, work: Any) -> list[Any]:
        return [work(self._tables())]

    def _tables(self) -> Iterable[pa.Table]:
        for file in self.files:
            parquet = readonce.open_parquet(file)
            for group in range(parquet.num_row_groups):
                yield parquet.read_row_group(group)

    def schema(self) -> pa.Schema:
        return readonce.open_parquet(self.files[0]).schema_arrow


class _SparkPasses:
    def __init__(self, source: str | Path | Sequence[str | Path], session: Any) -> None:
        from profiles.engines.spark import read_frame

        if session is None:
            raise ValueError("the spark engine needs a session: pass session=spark_session(...)")
        self.frame = read_frame(session, source)

    def run(self, work: Any) -> list[Any]:
        from profiles.engines.spark import map_partitions

        return map_partitions(self.frame, work)

    def schema(self) -> pa.Schema:
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(self.frame.schema, timezone="UTC")
