"""Table injectors: pure, seeded corruptions of a feature table, each returning the ground truth it corrupted.

Each factory binds an injector's fixed parameters (a target unit, a new name, a sentinel...) and returns
a `TableInjector`: `(frame, target) -> Injected`. The magnitude and the rows come from the `Target`.
Nothing here reads or writes files; `chaos.gameday.corrupt` and `chaos.drill.demo` do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from chaos.errors import InjectionError
from chaos.failures.registry import Injected, TableInjector, Target
from guard.units import UNITS, conversion

__all__ = [
    "unit_change",
    "rescale",
    "rename",
    "swap_with",
    "as_strings",
    "nulls",
    "sentinel",
    "label_lag",
    "label_missing",
    "duplicate_rows",
    "drop_rows",
    "recase",
    "new_category",
    "broken_characters",
    "gaussian_noise",
    "shift",
    "timestamp_shift",
    "timezone_shift",
    "target_leakage",
    "REPLACEMENT_CHAR",
]

REPLACEMENT_CHAR = "\ufffd"
_HOUR = pd.Timedelta(hours=1)


def unit_change(to_unit: str) -> TableInjector:
    """The producer writes the column in `to_unit` instead of its contracted unit (affine conversions too)."""

    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        column = _column(frame, t)
        declared = _declared_unit(t, column)
        try:
            scale, offset = conversion(declared, to_unit)
        except (KeyError, ValueError) as exc:
            raise InjectionError(
                f"cannot convert {column!r} from {declared} to {to_unit}: {exc}",
                f"choose a unit of the same dimension among {', '.join(sorted(UNITS))}",
            ) from exc
        rows = t.rows(frame)
        return _numbers(frame, column, rows, _floats(frame, column) * scale + offset)

    return inject


def rescale(frame: pd.DataFrame, t: Target) -> Injected:
    """Multiply the column by the magnitude: a scale change no unit explains."""
    column = _column(frame, t)
    return _numbers(frame, column, t.rows(frame), _floats(frame, column) * t.magnitude)


def rename(new_name: str) -> TableInjector:
    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        column = _column(frame, t)
        if new_name in frame.columns:
            raise InjectionError(
                f"cannot rename {column!r} to {new_name!r}: the table already has it", "choose another name"
            )
        return Injected(frame.rename(columns={column: new_name}), {column: frame[column].notna().to_numpy()})

    return inject


def swap_with(other: str) -> TableInjector:
    """Two columns written into each other's place (on the selected rows)."""

    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        column = _column(frame, t)
        _require(frame, other)
        rows = t.rows(frame)
        out = frame.copy()
        first, second = frame[column].to_numpy(), frame[other].to_numpy()
        out[column] = np.where(rows, second, first)
        out[other] = np.where(rows, first, second)
        return Injected(out, {column: rows & (first != second), other: rows & (first != second)})

    return inject


def as_strings(frame: pd.DataFrame, t: Target) -> Injected:
    """Numbers arrive as text; the selected share of them in a locale format ('12,5') that does not parse."""
    column = _column(frame, t)
    values = _floats(frame, column)
    locale = t.rows(frame)
    text = [
        None if np.isnan(v) else (repr(float(v)).replace(".", ",") if odd else repr(float(v)))
        for v, odd in zip(values, locale)
    ]
    out = frame.copy()
    out[column] = pd.Series(text, index=frame.index, dtype="object")
    return Injected(out, {column: ~np.isnan(values)})


def nulls(frame: pd.DataFrame, t: Target) -> Injected:
    """The selected rows lose their value."""
    column = _column(frame, t)
    rows = t.rows(frame) & frame[column].notna().to_numpy()
    out = frame.copy()
    values = out[column]
    if pd.api.types.is_integer_dtype(values.dtype):
        values = values.astype("Int64")
    out[column] = values.mask(rows)
    return Injected(out, {column: rows})


def sentinel(value: float) -> TableInjector:
    """'Unknown' written as a number (-1, 0...) on the selected rows."""

    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        column = _column(frame, t)
        rows = t.rows(frame) & (frame[column] != value).to_numpy()
        out = frame.copy()
        out[column] = frame[column].mask(rows, frame[column].dtype.type(value))
        return Injected(out, {column: rows})

    return inject


def label_lag(frame: pd.DataFrame, t: Target) -> Injected:
    """Labels of the last `magnitude` hours have not arrived: label and label timestamp are null."""
    label, stamp, event = _label_columns(frame, t)
    end = frame[event].max()
    rows = (frame[event] > end - t.magnitude * _HOUR).to_numpy() & frame[label].notna().to_numpy()
    return _unlabel(frame, rows, label, stamp)


def label_missing(frame: pd.DataFrame, t: Target) -> Injected:
    """The selected rows lost their label (a join that dropped them)."""
    label, stamp, _ = _label_columns(frame, t)
    return _unlabel(frame, t.rows(frame) & frame[label].notna().to_numpy(), label, stamp)


def duplicate_rows(frame: pd.DataFrame, t: Target) -> Injected:
    """The selected rows are loaded twice (appended again, same keys)."""
    rows = t.rows(frame)
    out = pd.concat([frame, frame.loc[rows]], ignore_index=True)
    return Injected(out, {}, rows_added=int(rows.sum()))


def drop_rows(frame: pd.DataFrame, t: Target) -> Injected:
    """The selected rows never arrive (a partial load)."""
    rows = t.rows(frame)
    return Injected(frame.loc[~rows].reset_index(drop=True), {}, removed=rows)


def recase(style: str) -> TableInjector:
    """A category spelled in another case ('upper' or 'title') on the selected rows."""
    if style not in ("upper", "title"):
        raise ValueError(f"recase style {style!r}: use 'upper' or 'title'")

    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        column = _column(frame, t)
        texts = frame[column].astype("object")
        changed = texts.str.upper() if style == "upper" else texts.str.title()
        return _strings(frame, column, t.rows(frame), changed)

    return inject


def new_category(value: str) -> TableInjector:
    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        column = _column(frame, t)
        return _strings(frame, column, t.rows(frame), pd.Series(value, index=frame.index, dtype="object"))

    return inject


def broken_characters(frame: pd.DataFrame, t: Target) -> Injected:
    """A character of each selected string replaced by U+FFFD, as a botched decode leaves it."""
    column = _column(frame, t)
    texts = frame[column].astype("object")
    broken = texts.map(
        lambda s: s if not isinstance(s, str) or not s else s[: len(s) // 2] + REPLACEMENT_CHAR + s[len(s) // 2 + 1 :]
    )
    return _strings(frame, column, t.rows(frame), broken)


def gaussian_noise(frame: pd.DataFrame, t: Target) -> Injected:
    """Add N(0, (magnitude x the column's sd)^2) noise, kept inside the contract's limits (a noisier sensor)."""
    column = _column(frame, t)
    values = _floats(frame, column)
    noise = t.rng.normal(0.0, t.magnitude * float(np.nanstd(values)), len(values))
    return _numbers(frame, column, t.rows(frame), _clipped(t, column, values + noise))


def shift(frame: pd.DataFrame, t: Target) -> Injected:
    """Move the column by `magnitude` of its sd (a distribution shift), kept inside the contract's limits."""
    column = _column(frame, t)
    values = _floats(frame, column)
    return _numbers(frame, column, t.rows(frame), _clipped(t, column, values + t.magnitude * float(np.nanstd(values))))


def timestamp_shift(frame: pd.DataFrame, t: Target) -> Injected:
    """Event and label timestamps written `magnitude` hours early (a clock or date bug)."""
    _, stamp, event = _label_columns(frame, t)
    return _moved_times(frame, t.rows(frame), -t.magnitude, (event, stamp))


def timezone_shift(hour_column: str) -> TableInjector:
    """Local wall time (UTC+magnitude h) written as UTC: event and label timestamps and the hour feature move."""

    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        _, stamp, event = _label_columns(frame, t)
        _require(frame, hour_column)
        rows = t.rows(frame)
        out = _moved_times(frame, rows, t.magnitude, (event, stamp))
        hours = frame[hour_column]
        moved = (hours + round(t.magnitude)) % 24
        out.frame[hour_column] = hours.mask(rows, moved).astype(hours.dtype)
        out.cells[hour_column] = rows & (moved != hours).to_numpy()
        return out

    return inject


def target_leakage(frame: pd.DataFrame, t: Target) -> Injected:
    """The feature is recomputed from the outcome: on the selected rows its own values are re-dealt in the
    label's order, so its distribution is unchanged but it ranks the label perfectly."""
    column = _column(frame, t)
    label, _, _ = _label_columns(frame, t)
    rows = t.rows(frame) & frame[label].notna().to_numpy() & frame[column].notna().to_numpy()
    positions = np.flatnonzero(rows)
    values = frame[column].to_numpy()
    by_label = positions[np.argsort(frame[label].to_numpy()[positions], kind="stable")]
    leaked = values.copy()
    leaked[by_label] = np.sort(values[positions], kind="stable")
    out = frame.copy()
    out[column] = pd.Series(leaked, index=frame.index).astype(frame[column].dtype)
    return Injected(out, {column: rows & (leaked != values)})


def _column(frame: pd.DataFrame, t: Target) -> str:
    if t.column is None:
        raise InjectionError("this injector needs a column", "declare the scenario's column")
    _require(frame, t.column)
    return t.column


def _require(frame: pd.DataFrame, column: str) -> None:
    if column not in frame.columns:
        raise InjectionError(
            f"the table has no column {column!r} to corrupt",
            f"pick a scenario for its columns ({', '.join(map(str, frame.columns))}); see `kintsugi chaos list`",
        )


def _declared_unit(t: Target, column: str) -> str:
    contracted = t.contract.column(column)
    if contracted is None or contracted.unit is None:
        raise InjectionError(f"column {column!r} declares no unit in its contract", "pick a column with a unit")
    return contracted.unit


def _label_columns(frame: pd.DataFrame, t: Target) -> tuple[str, str, str]:
    contract = t.contract
    names = (contract.label_column, contract.label_timestamp_column, contract.event_timestamp_column)
    if any(name is None for name in names):
        raise InjectionError(
            f"the contract of {contract.dataset_urn} declares no label, label timestamp or event timestamp column",
            "declare their roles in the contract",
        )
    for name in names:
        _require(frame, str(name))
    return str(names[0]), str(names[1]), str(names[2])


def _floats(frame: pd.DataFrame, column: str) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(frame[column].dtype):
        raise InjectionError(f"column {column!r} is {frame[column].dtype}, not a number", "pick a numeric column")
    return frame[column].to_numpy(dtype=float, na_value=np.nan)


def _numbers(frame: pd.DataFrame, column: str, rows: np.ndarray, changed: np.ndarray) -> Injected:
    """`column` with `changed` on the selected rows; integer columns stay integers (rounded)."""
    original = frame[column]
    rows = rows & original.notna().to_numpy()
    out = frame.copy()
    if pd.api.types.is_integer_dtype(original.dtype):
        changed = np.round(changed)
    merged = pd.Series(np.where(rows, changed, original.to_numpy(dtype=float, na_value=np.nan)), index=frame.index)
    out[column] = merged.astype(original.dtype) if pd.api.types.is_integer_dtype(original.dtype) else merged
    return Injected(out, {column: rows & (merged.to_numpy() != original.to_numpy(dtype=float, na_value=np.nan))})


def _strings(frame: pd.DataFrame, column: str, rows: np.ndarray, changed: pd.Series) -> Injected:
    original = frame[column].astype("object")
    rows = rows & original.notna().to_numpy() & (changed != original).to_numpy()
    out = frame.copy()
    out[column] = original.mask(rows, changed)
    return Injected(out, {column: rows})


def _clipped(t: Target, column: str, values: np.ndarray) -> np.ndarray:
    contracted = t.contract.column(column)
    low = contracted.minimum if contracted is not None and contracted.minimum is not None else -np.inf
    high = contracted.maximum if contracted is not None and contracted.maximum is not None else np.inf
    return np.clip(values, low, high)


def _moved_times(frame: pd.DataFrame, rows: np.ndarray, hours: float, columns: tuple[str, ...]) -> Injected:
    out = frame.copy()
    cells = {}
    for column in columns:
        out[column] = frame[column].mask(rows, frame[column] + hours * _HOUR)
        cells[column] = rows & frame[column].notna().to_numpy()
    return Injected(out, cells)


def _unlabel(frame: pd.DataFrame, rows: np.ndarray, label: str, stamp: str) -> Injected:
    out = frame.copy()
    out[label] = frame[label].mask(rows)
    out[stamp] = frame[stamp].mask(rows)
    return Injected(out, {label: rows, stamp: rows & frame[stamp].notna().to_numpy()})
