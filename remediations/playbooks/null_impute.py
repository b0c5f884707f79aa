"""Null impute: fill a column's nulls from the reference profile.

Heals NULL_LIMIT and NULL_SPIKE. Numeric columns (number, integer) get the reference median
(``ColumnProfile.quantile(0.5)``, rounded half-to-even for integer columns); string and boolean
columns get the reference's most frequent value (ties go to the smallest value). The fill value
goes into the step's params.

Limit: refuses when the nulls to fill are more than ``MAX_FILL_FRACTION`` (30%) of the rows,
since the column would then mostly be invented. It never imputes the label column (unlabelled rows
are label_window's business) nor a key column (it would mint duplicate keys), nor timestamps and
dates. It plans from the nulls in the table now, so a filled column is left alone.
"""
from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pandas as pd

from guard.kinds import FindingKind
from guard.profile import ColumnProfile
from remediations.registry import HealInput, HealStep, PlaybookRefused, register

__all__ = ["null_impute", "MAX_FILL_FRACTION", "fill_value"]

MAX_FILL_FRACTION = 0.3


@register("null_impute", {FindingKind.NULL_LIMIT, FindingKind.NULL_SPIKE}, max_fraction_touched=MAX_FILL_FRACTION,
          description="fill nulls with the reference median (numeric) or mode (categorical); refuses over 30% of rows")
def null_impute(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    """Fill the finding's column's nulls with the reference's median or most frequent value."""
    finding, table, column = heal.finding, heal.table, heal.finding.column
    _check_column(heal)
    nulls = int(table[column].isna().sum())
    if nulls == 0:
        return table.copy(), HealStep("null_impute", finding.kind.value, column, {"nulls_filled": 0}, rows_touched=0)
    if nulls / len(table) > MAX_FILL_FRACTION:
        raise PlaybookRefused(
            f"null_impute would fill {nulls} of {len(table)} rows of {column!r} ({nulls / len(table):.1%}), "
            f"over its limit of {MAX_FILL_FRACTION:.0%} of rows (max_fraction_touched); "
            "find why the producer stopped sending values")
    reference = _reference_column(heal)
    kind = _logical_type(heal, reference)
    healed = table.copy()
    if kind in ("number", "integer") and len(reference.quantiles) >= 2:
        draws = reference_draws(reference, nulls, seed=zlib.crc32(f"{column}:{nulls}".encode()))
        value: Any = np.round(draws) if kind == "integer" else draws
        params: dict[str, Any] = {"nulls_filled": nulls, "logical_type": kind,
                                  "source": "seeded draws from the reference quantiles",
                                  "fill_median": float(np.median(value))}
        healed[column] = _filled_with(table[column], value, kind)
    else:  # categories (and numbers whose reference has no distribution): the mode (the median)
        value = fill_value(reference, kind)
        params = {"nulls_filled": nulls, "logical_type": kind, "fill_value": value,
                  "source": "reference median" if kind in ("number", "integer") else "reference mode"}
        healed[column] = _filled(table[column], value, kind)
    return healed, HealStep("null_impute", finding.kind.value, column, params, rows_touched=nulls)


def reference_draws(reference: ColumnProfile, count: int, *, seed: int) -> np.ndarray:
    """`count` seeded draws from the reference distribution (its quantile function, linear between the
    profiled quantiles and the minimum and maximum): a filled column keeps the reference's shape, where a
    constant median would pile a point mass that biases the model and reads as a scale shift."""
    points = [(0.0, reference.minimum), *reference.quantiles, (1.0, reference.maximum)]
    known = [(q, v) for q, v in points if v is not None and not np.isnan(v)]
    if len(known) < 2:
        raise PlaybookRefused(f"null_impute needs the reference quantiles of {reference.name!r}; "
                              "refresh the reference profile")
    levels, values = zip(*known)
    return np.interp(np.random.default_rng(seed).random(count), levels, values)


def _filled_with(values: pd.Series, draws: np.ndarray, kind: str) -> pd.Series:
    filled = values.astype("float64").copy()
    filled[values.isna().to_numpy()] = draws
    return filled.astype("int64") if kind == "integer" else filled


def fill_value(reference: ColumnProfile, kind: str) -> Any:
    """The reference median for numbers (an int for integers), else the reference's most frequent value."""
    if kind in ("number", "integer"):
        median = reference.quantile(0.5)
        if median is None or np.isnan(median):
            raise PlaybookRefused(f"null_impute needs the reference median of {reference.name!r}; "
                                  "refresh the reference profile")
        return round(median) if kind == "integer" else float(median)
    if not reference.value_counts:
        raise PlaybookRefused(f"null_impute needs the reference value counts of {reference.name!r} "
                              "(absent when it has too many distinct values); heal by hand")
    mode = min(reference.value_counts, key=lambda item: (-item[1], item[0]))[0]
    return mode == "True" if kind == "boolean" else mode


def _check_column(heal: HealInput) -> None:
    column, contract = heal.finding.column, heal.contract
    if column is None or column not in heal.table.columns:
        raise PlaybookRefused(f"null_impute found no column {column!r} in the table; re-run the guard")
    if column == contract.label_column:
        raise PlaybookRefused(f"null_impute never imputes the label column {column!r}; use label_window")
    if column in contract.key_columns:
        raise PlaybookRefused(f"null_impute never imputes key column {column!r}: it would mint duplicate keys")


def _reference_column(heal: HealInput) -> ColumnProfile:
    column = heal.finding.column or ""
    reference = heal.reference.columns.get(column) if heal.reference is not None else None
    if reference is None:
        raise PlaybookRefused(f"null_impute needs a reference profile of {column!r}; publish a reference profile")
    return reference


def _logical_type(heal: HealInput, reference: ColumnProfile) -> str:
    contracted = heal.contract.column(reference.name)
    kind = contracted.logical_type if contracted is not None else reference.logical_type
    if kind not in ("number", "integer", "string", "boolean"):
        raise PlaybookRefused(f"null_impute fills number, integer, string and boolean columns, not {kind} "
                              f"column {reference.name!r}; heal by hand")
    return kind


def _filled(values: pd.Series, value: Any, kind: str) -> pd.Series:
    """Nulls replaced by `value`; an integer column read as float because of its nulls becomes int64 again."""
    if isinstance(values.dtype, pd.CategoricalDtype) and value not in values.cat.categories:
        values = values.cat.add_categories([value])
    filled = values.fillna(value)
    if kind == "integer" and pd.api.types.is_float_dtype(filled.dtype) and bool((filled % 1 == 0).all()):
        return filled.astype("int64")
    if kind == "boolean" and filled.dtype == object:
        return filled.astype("bool")
    return filled
