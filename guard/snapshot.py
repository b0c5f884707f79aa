"""Read a parquet snapshot column by column, row group by row group, into a profile.

Exact from the footer where it can be (row count, null counts, min, max); the
distribution (quantiles, mean, stdev) and the row sample come from a seeded
uniform sample of at most `sample_rows` rows, so memory stays bounded by one row
group plus the sample whatever the table's size.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from guard.profile import QUANTILES, ColumnProfile, DatasetProfile

__all__ = ["Snapshot", "SnapshotError", "read_snapshot", "logical_type", "MAX_CATEGORIES"]

MAX_CATEGORIES = 200
_PROBE_ROWS = 10_000  # rows looked at before counting a column's values in a row group
DEFAULT_SAMPLE_ROWS = 50_000


class SnapshotError(Exception):
    """The snapshot could not be read; the guard turns this into a blocking finding."""


@dataclass(frozen=True)
class Snapshot:
    path: str
    profile: DatasetProfile
    sample: pd.DataFrame
    arrow_types: dict[str, str]


def logical_type(arrow_type: pa.DataType) -> str:
    if pa.types.is_dictionary(arrow_type):
        return logical_type(arrow_type.value_type)
    if pa.types.is_integer(arrow_type):
        return "integer"
    if pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type):
        return "number"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "string"
    if pa.types.is_boolean(arrow_type):
        return "boolean"
    if pa.types.is_timestamp(arrow_type):
        return "timestamp"
    if pa.types.is_date(arrow_type):
        return "date"
    return str(arrow_type)


def read_snapshot(path: str | Path, *, sample_rows: int = DEFAULT_SAMPLE_ROWS, seed: int = 0) -> Snapshot:
    try:
        parquet = pq.ParquetFile(str(path))
        schema = parquet.schema_arrow
        scan = _Scan(schema, parquet.metadata.num_rows, sample_rows, seed)
        for index in range(parquet.num_row_groups):
            scan.add(parquet.read_row_group(index))
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SnapshotError(f"cannot read parquet snapshot {path}: {exc}") from exc
    sample = scan.sample()
    return Snapshot(str(path), scan.profile(sample), sample, {f.name: str(f.type) for f in schema})


class _Scan:
    """Accumulates exact counts and a seeded sample over row groups."""

    def __init__(self, schema: pa.Schema, total_rows: int, sample_rows: int, seed: int) -> None:
        self.schema = schema
        self.total_rows = total_rows
        rng = np.random.default_rng(seed)  # the sampled rows, drawn once: exactly min(sample_rows, total_rows)
        self.picks = np.sort(rng.choice(total_rows, size=min(sample_rows, total_rows), replace=False))
        self.offset = 0  # row number of the next group's first row
        self.pieces: list[pa.Table] = []
        self.nulls = {f.name: 0 for f in schema}
        self.mins: dict[str, object] = {}
        self.maxs: dict[str, object] = {}
        self.counts: dict[str, dict[str, int] | None] = {
            f.name: {} for f in schema if logical_type(f.type) in ("string", "boolean")
        }

    def add(self, group: pa.Table) -> None:
        for name in group.column_names:
            column = group.column(name)
            self.nulls[name] += column.null_count
            kind = logical_type(column.type)
            if kind in ("integer", "number", "timestamp", "date"):
                self._min_max(name, column)
            if name in self.counts and self.counts[name] is not None:
                self._count_values(name, column)
        low, high = np.searchsorted(self.picks, [self.offset, self.offset + group.num_rows])
        if high > low:
            self.pieces.append(group.take(pa.array(self.picks[low:high] - self.offset)))
        self.offset += group.num_rows

    def _min_max(self, name: str, column: pa.ChunkedArray) -> None:
        bounds = pc.min_max(column)  # skips nulls, and NaN unless every value is NaN
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or low != low:  # no value, or only NaN
            return
        self.mins[name] = low if name not in self.mins else min(self.mins[name], low)
        self.maxs[name] = high if name not in self.maxs else max(self.maxs[name], high)

    def _count_values(self, name: str, column: pa.ChunkedArray) -> None:
        counts = self.counts[name]
        assert counts is not None
        if len(pc.unique(column.slice(0, _PROBE_ROWS))) > MAX_CATEGORIES:
            self.counts[name] = None  # an identifier or free text: stop before counting a million values
            return
        found = pc.value_counts(column.drop_null())
        if len(found) > MAX_CATEGORIES:
            self.counts[name] = None
            return
        for value, count in zip(found.field("values").to_pylist(), found.field("counts").to_pylist()):
            counts[str(value)] = counts.get(str(value), 0) + count
        if len(counts) > MAX_CATEGORIES:
            self.counts[name] = None

    def sample(self) -> pd.DataFrame:
        table = pa.concat_tables(self.pieces) if self.pieces else self.schema.empty_table()
        return table.to_pandas()

    def profile(self, sample: pd.DataFrame) -> DatasetProfile:
        columns = {f.name: self._column_profile(f, sample[f.name]) for f in self.schema}
        return DatasetProfile(row_count=self.total_rows, columns=columns)

    def _column_profile(self, field: pa.Field, values: pd.Series) -> ColumnProfile:
        kind = logical_type(field.type)
        counts = self.counts.get(field.name)
        profile = ColumnProfile(
            name=field.name,
            logical_type=kind,
            row_count=self.total_rows,
            null_count=self.nulls[field.name],
            minimum=_as_number(self.mins.get(field.name)),
            maximum=_as_number(self.maxs.get(field.name)),
            value_counts=tuple(sorted(counts.items())) if counts is not None else None,
        )
        if kind not in ("integer", "number"):
            return profile
        numeric = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)
        if not len(numeric):
            return profile
        quantiles = tuple((q, float(v)) for q, v in zip(QUANTILES, np.quantile(numeric, QUANTILES)))
        return ColumnProfile(
            **{**profile.__dict__, "mean": float(numeric.mean()), "stdev": float(numeric.std()), "quantiles": quantiles}
        )


def _as_number(value: object) -> float | None:
    """Numbers as floats; timestamps and dates as epoch milliseconds."""
    if value is None:
        return None
    if isinstance(value, pd.Timestamp) or hasattr(value, "timestamp"):
        stamp = pd.Timestamp(value)
        if stamp.tzinfo is None:
            stamp = stamp.tz_localize("UTC")
        return float(stamp.value // 1_000_000)
    if hasattr(value, "toordinal"):
        return float(pd.Timestamp(value).tz_localize("UTC").value // 1_000_000)
    return float(value)  # type: ignore[arg-type]
