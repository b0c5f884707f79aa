"""The contract a feature table is held to, as plain data (parsed from ODCS by the control plane)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

__all__ = ["ColumnContract", "Contract", "LOGICAL_TYPES"]

LOGICAL_TYPES = ("number", "integer", "string", "boolean", "timestamp", "date")


@dataclass(frozen=True)
class ColumnContract:
    name: str
    logical_type: str
    required: bool = False  # ODCS's `required`: a value on every row (none null) unless a null limit says otherwise
    unit: str | None = None
    max_null_fraction: float | None = None
    minimum: float | None = None
    maximum: float | None = None
    allowed_values: tuple[str, ...] | None = None
    drift_blocking: bool = False
    primary_key: bool = False
    at_least: str | None = None  # a column of the same unit this one is never below, on any row (max >= min)


@dataclass(frozen=True)
class Contract:
    dataset_urn: str
    columns: tuple[ColumnContract, ...]
    label_column: str | None = None
    label_timestamp_column: str | None = None
    event_timestamp_column: str | None = None
    label_freshness_hours: float | None = None
    max_immature_label_fraction: float = 0.05

    def column(self, name: str) -> ColumnContract | None:
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, ColumnContract]:
        """Each column by its name, the first where one repeats (a lookup per column per check is linear in them)."""
        found: dict[str, ColumnContract] = {}
        for c in self.columns:
            found.setdefault(c.name, c)
        return found

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def declared_orders(self) -> tuple[tuple[str, str], ...]:
        """(low, high) for each column declared at least another: low <= high on every row."""
        return tuple((c.at_least, c.name) for c in self.columns if c.at_least is not None)

    @property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.primary_key)

    @property
    def features(self) -> tuple[ColumnContract, ...]:
        """The model's inputs: every contracted column but the label, the keys and the timestamps."""
        roles = {self.label_column, self.label_timestamp_column, self.event_timestamp_column}
        return tuple(
            c
            for c in self.columns
            if c.name not in roles and not c.primary_key and c.logical_type not in ("timestamp", "date")
        )
