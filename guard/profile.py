"""Per-column profiles: of a snapshot now, or of the reference the data is compared with."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

__all__ = ["ColumnProfile", "DatasetProfile", "QUANTILES"]

QUANTILES: tuple[float, ...] = (0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99)


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

    @property
    def null_fraction(self) -> float:
        return self.null_count / self.row_count if self.row_count else 0.0

    def quantile(self, q: float) -> float | None:
        return dict(self.quantiles).get(q)


@dataclass(frozen=True)
class DatasetProfile:
    row_count: int
    columns: Mapping[str, ColumnProfile]
