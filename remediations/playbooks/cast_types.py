"""Cast types: cast a retyped column back to its contracted logical type.

Heals TYPE_CHANGED. The target is the contract's logical type of the column (the finding's
``params["target_type"]`` only when the contract has no such column): number, integer, timestamp,
string or boolean. Values that do not parse become null and are counted; that count is the
step's ``rows_touched`` and, with the parsed count and a few examples, goes into the params.

Limit: refuses when more than ``MAX_UNPARSED_FRACTION`` (5%) of the column's non-null values do
not parse, since nulling them would hide a producer bug rather than undo a type change. Integers
are parsed exactly (no detour through float for large ids); timestamps are read as ISO 8601
strings, or as epoch numbers whose unit (s, ms, us, ns) is chosen by magnitude, and come out in UTC.
A column that already has a compatible type is left alone (``rows_touched == 0``).
"""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd
import pyarrow as pa

from guard.checks.schema import types_compatible
from guard.kinds import FindingKind
from profiles.snapshot import logical_type
from remediations.registry import HealInput, HealStep, PlaybookRefused, register, table_column

__all__ = ["cast_types", "MAX_UNPARSED_FRACTION", "cast_series", "logical_type_of"]

MAX_UNPARSED_FRACTION = 0.05
_EXACT_FLOAT_INT = 2**53
_TRUE = frozenset({"true", "t", "yes", "y", "1", "1.0"})
_FALSE = frozenset({"false", "f", "no", "n", "0", "0.0"})
_EXAMPLES = 5


@register(
    "cast_types",
    {FindingKind.TYPE_CHANGED},
    max_fraction_touched=MAX_UNPARSED_FRACTION,
    description="cast back to the contracted logical type; refuses when over 5% of non-null values do not parse",
    plan=("target_type",),
)
def cast_types(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    """Cast the finding's column to its contracted type, nulling (and counting) what does not parse."""
    finding, table = heal.finding, heal.table
    column = table_column(table.columns, finding.column, "cast_types")
    target = _target_type(heal)
    values = table[column]
    current = logical_type_of(values)
    params: dict[str, Any] = {"from_type": current, "target_type": target}
    if types_compatible(target, current):
        return table.copy(), HealStep("cast_types", finding.kind.value, column, params, rows_touched=0)
    cast, extra = cast_series(values, target)
    non_null = values.notna()
    failed = non_null & cast.isna()
    unparsed, total = int(failed.sum()), int(non_null.sum())
    params.update(extra, parsed=total - unparsed, unparsed=unparsed, unparsed_examples=_examples(values[failed]))
    if total and unparsed / total > MAX_UNPARSED_FRACTION:
        raise PlaybookRefused(
            f"cast_types would null {unparsed} of {total} non-null values of {column!r} "
            f"({unparsed / total:.1%}) that do not parse as {target}, e.g. {params['unparsed_examples']}; "
            f"over its limit of {MAX_UNPARSED_FRACTION:.0%} (max_fraction_touched); fix the producer or heal by hand"
        )
    healed = table.copy()
    healed[column] = cast
    return healed, HealStep("cast_types", finding.kind.value, column, params, rows_touched=unparsed)


def cast_series(values: pd.Series, target: str) -> tuple[pd.Series, dict[str, Any]]:
    """`values` as `target`, unparseable values null; plus any parameter the cast had to choose."""
    casts: dict[str, Callable[[pd.Series], tuple[pd.Series, dict[str, Any]]]] = {
        "number": _to_number,
        "integer": _to_integer,
        "timestamp": _to_timestamp,
        "string": _to_string,
        "boolean": _to_boolean,
    }
    if target not in casts:
        raise PlaybookRefused(f"cast_types can cast to {', '.join(casts)}, not {target!r}; heal by hand")
    return casts[target](values)


def _target_type(heal: HealInput) -> str:
    contracted = heal.contract.column(heal.finding.column or "")
    target = contracted.logical_type if contracted is not None else heal.finding.params.get("target_type")
    if not target:
        raise PlaybookRefused(
            f"cast_types found no contracted type for {heal.finding.column!r}; add the column to the contract"
        )
    return str(target)


def logical_type_of(values: pd.Series) -> str:
    """The logical type the guard will see once this column is written to parquet."""
    try:
        return logical_type(pa.array(values, from_pandas=True).type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return "mixed"


def _text(values: pd.Series) -> pd.Series:
    return values.astype("str").str.strip()


def _is_numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype)


def _to_number(values: pd.Series) -> tuple[pd.Series, dict[str, Any]]:
    source = values.astype("float64") if pd.api.types.is_bool_dtype(values.dtype) else values
    numbers = pd.to_numeric(source if _is_numeric(values) else _text(values), errors="coerce")
    return numbers.astype("float64"), {}


def _to_integer(values: pd.Series) -> tuple[pd.Series, dict[str, Any]]:
    source = values.astype("Int64") if pd.api.types.is_bool_dtype(values.dtype) else values
    numbers = pd.to_numeric(
        source if _is_numeric(values) else _text(values), errors="coerce", dtype_backend="numpy_nullable"
    )
    if pd.api.types.is_integer_dtype(numbers.dtype) and numbers.dtype.name in ("Int64", "int64"):
        return numbers.astype("Int64"), {}
    floats = numbers.astype("Float64")
    exact = (floats % 1 == 0) & (floats.abs() <= _EXACT_FLOAT_INT)
    return floats.where(exact.fillna(False)).astype("Int64"), {}


def _to_timestamp(values: pd.Series) -> tuple[pd.Series, dict[str, Any]]:
    if _is_numeric(values) and not pd.api.types.is_bool_dtype(values.dtype):
        unit = _epoch_unit(values)
        stamps = pd.to_datetime(values.astype("float64"), unit=unit, utc=True, errors="coerce")
        return stamps, {"epoch_unit": unit}
    stamps = pd.to_datetime(_text(values), errors="coerce", utc=True, format="ISO8601")
    return stamps, {"format": "ISO8601", "timezone": "UTC"}


def _epoch_unit(values: pd.Series) -> str:
    """Seconds, milliseconds, micro- or nanoseconds since 1970, by the magnitude of the largest value."""
    largest = float(values.abs().max()) if values.notna().any() else 0.0
    for unit, bound in (("s", 1e11), ("ms", 1e14), ("us", 1e17)):
        if largest < bound:
            return unit
    return "ns"


def _to_string(values: pd.Series) -> tuple[pd.Series, dict[str, Any]]:
    return values.astype("str"), {}


def _to_boolean(values: pd.Series) -> tuple[pd.Series, dict[str, Any]]:
    text = _text(values).str.lower()
    flags = pd.Series(pd.NA, index=values.index, dtype="boolean")
    flags[text.isin(_TRUE)] = True
    flags[text.isin(_FALSE)] = False
    return flags, {}


def _examples(values: pd.Series) -> list[str]:
    return [str(v) for v in pd.unique(values.astype("str"))[:_EXAMPLES]]
