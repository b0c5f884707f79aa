"""Propose an ODCS v3 contract from a reference snapshot. Units are asked for, never guessed."""
from __future__ import annotations

import math
from typing import Any

import yaml

from guard.profile import ColumnProfile, DatasetProfile
from guard.snapshot import MAX_CATEGORIES

__all__ = ["propose_contract", "UNIT_UNANSWERED"]

UNIT_UNANSWERED = "?"
_NULL_MARGIN = 2.0  # allow twice the observed null share, at least 1%


def propose_contract(profile: DatasetProfile, *, dataset: str, name: str,
                     units: dict[str, str]) -> tuple[str, list[str]]:
    """(ODCS YAML, numeric columns whose unit still has to be answered)."""
    unanswered = [c.name for c in profile.columns.values()
                  if c.logical_type in ("number", "integer") and c.name not in units]
    document = {
        "apiVersion": "v3.0.2", "kind": "DataContract", "id": name, "name": name, "version": "0.1.0",
        "status": "draft",
        "description": {"purpose": f"Proposed by `kintsugi contract infer` from {profile.row_count} rows; review it."},
        "customProperties": [{"property": "datahubDataset", "value": dataset}],
        "schema": [{"name": name, "logicalType": "object", "physicalType": "table",
                    "properties": [_property(c, units.get(c.name)) for c in profile.columns.values()]}],
    }
    return yaml.safe_dump(document, sort_keys=False), unanswered


def _property(column: ColumnProfile, unit: str | None) -> dict[str, Any]:
    prop: dict[str, Any] = {"name": column.name, "logicalType": column.logical_type,
                            "required": column.null_count == 0}
    if column.logical_type in ("number", "integer"):
        if column.minimum is not None and column.maximum is not None:
            prop["logicalTypeOptions"] = {"minimum": _round_down(column.minimum), "maximum": _round_up(column.maximum)}
        prop["customProperties"] = [{"property": "unit", "value": unit or UNIT_UNANSWERED}]
    quality: list[dict[str, Any]] = [{"metric": "nullValues", "unit": "percent",
                                      "mustBeLessOrEqualTo": _null_limit_percent(column)}]
    if column.value_counts is not None and 0 < len(column.value_counts) <= min(MAX_CATEGORIES, 50):
        quality.append({"metric": "invalidValues", "mustBe": 0,
                        "arguments": {"validValues": [v for v, _ in column.value_counts]}})
    prop["quality"] = quality
    return prop


def _null_limit_percent(column: ColumnProfile) -> float:
    if column.null_count == 0:
        return 0.0 if column.row_count else 1.0
    return round(max(1.0, 100 * column.null_fraction * _NULL_MARGIN), 2)


def _round_down(value: float) -> float:
    return float(math.floor(value)) if value >= 0 else float(math.floor(value * 1.5))


def _round_up(value: float) -> float:
    return float(math.ceil(value * 1.5)) if value > 0 else float(math.ceil(value))
