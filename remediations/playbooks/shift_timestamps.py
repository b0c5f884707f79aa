"""Shift timestamps back: undo a timezone written as UTC, exactly.

Heals TIMESTAMP_SHIFT, whose finding carries `params["shifts_hours"] = {timestamp column: hours it moved}`
and `params["hour_columns"] = {hour-of-day column: hours it moved}` (an integer 0..23 column derived from a
timestamp, moved with it; `params["hour_of"][column] = {"timestamp": T, "offsets": [...]}` the offsets
(H - hour(T)) mod 24 the reference learned). Each timestamp goes back by its hours (value - hours); each hour column to
(value - hours) mod 24. Both are exact and invertible (shifting forward undoes them), nothing is invented.

Level-based: the finding also carries the earliest time the guard saw per timestamp column
(`observed_min_ms`, over the finding's rows). The playbook shifts a column whose earliest time is still
that one, leaves alone a column whose earliest time is already shifted back (applied to its own output it
changes nothing), and refuses a column that is neither (the table changed since the guard ran). An hour
column is shifted while it sits `hours` off its learned offsets against its (healed) timestamp, left
alone on them.
Refuses an ambiguous offset (+-12 h: known modulo 24 only) and a finding without shifts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from guard.kinds import FindingKind
from profiles.relations import epoch_ms_of
from remediations.registry import HealInput, HealStep, PlaybookRefused, register, table_column
from remediations.rows import describe_rows, selected_rows

__all__ = ["shift_timestamps"]

_HOUR_MS = 3_600_000
_HOLDS = 0.9  # share of rows on the learned offsets for an hour column to be read as on (or off) them


@register(
    "shift_timestamps",
    {FindingKind.TIMESTAMP_SHIFT},
    description="shift timestamps (and hour-of-day columns derived from them) back by whole hours",
    plan=("ambiguous", "shifts_hours", "hour_columns", "hour_of"),
)
def shift_timestamps(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    finding, table = heal.finding, heal.table
    shifts, hours = _plan_params(heal)
    rows = selected_rows(table, finding)
    healed = table.copy()
    shifted: dict[str, int] = {}
    for column, moved in sorted(shifts.items()):
        if _still_shifted(table, rows, column, moved, finding.params.get("observed_min_ms", {}).get(column)):
            back = (table[column] - pd.Timedelta(hours=moved)).astype(table[column].dtype)  # whole hours: exact
            healed[column] = table[column].mask(rows, back)
            shifted[column] = moved
    for column, moved in sorted(hours.items()):
        if _hour_still_shifted(healed, rows, column, moved, finding.params.get("hour_of", {}).get(column)):
            healed[column] = _hours_back(table[column], rows, moved)
            shifted[column] = moved
    touched = int(rows.sum()) if shifted else 0
    params: dict[str, Any] = {
        "shifted_back_hours": shifted,
        "offset_hours": finding.params.get("offset_hours"),
        "rows": describe_rows(finding),
    }
    return healed, HealStep("shift_timestamps", finding.kind.value, finding.column, params, rows_touched=touched)


def _plan_params(heal: HealInput) -> tuple[dict[str, int], dict[str, int]]:
    params = heal.finding.params
    if params.get("ambiguous"):
        raise PlaybookRefused(
            "shift_timestamps will not guess the sign of a 12-hour shift (known modulo 24 h); shift by hand"
        )
    shifts = {str(c): int(h) for c, h in (params.get("shifts_hours") or {}).items()}
    hours = {str(c): int(h) for c, h in (params.get("hour_columns") or {}).items()}
    if not shifts and not hours:
        raise PlaybookRefused(
            "shift_timestamps needs params['shifts_hours'] or params['hour_columns'] in the finding; re-run the guard"
        )
    for column in (*shifts, *hours):
        table_column(heal.table.columns, column, "shift_timestamps")
    for column in shifts:
        if not pd.api.types.is_datetime64_any_dtype(heal.table[column].dtype):
            raise PlaybookRefused(
                f"shift_timestamps: {column!r} is {heal.table[column].dtype}, not a timestamp; cast it first"
            )
    return shifts, hours


def _still_shifted(table: pd.DataFrame, rows: np.ndarray, column: str, moved: int, observed: Any) -> bool:
    """True when the column is as the guard saw it; False when already shifted back; refuses otherwise."""
    stamps, present = epoch_ms_of(table[column])
    present &= rows
    if not present.any():
        return False
    earliest = int(stamps[present].min())
    if observed is None or earliest == int(observed):
        return True
    if earliest == int(observed) - moved * _HOUR_MS:
        return False
    raise PlaybookRefused(
        f"shift_timestamps: the earliest {column!r} is {earliest} ms, not the {observed} ms the "
        "guard saw nor that shifted back; the table changed since: re-run the guard"
    )


def _hour_still_shifted(table: pd.DataFrame, rows: np.ndarray, column: str, moved: int, relation: Any) -> bool:
    """Whether an hour column, against its timestamp (already shifted back), still sits `moved` hours off the
    offsets the reference learned (True), sits on them (False: done), or neither (refuses)."""
    if not isinstance(relation, dict) or relation.get("timestamp") not in table.columns:
        raise PlaybookRefused(
            f"shift_timestamps needs params['hour_of'][{column!r}] = {{'timestamp': T, 'offsets': "
            "[...]}} to tell a shifted hour column from a healed one; re-run the guard"
        )
    stamps, present = epoch_ms_of(table[relation["timestamp"]])
    values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    use = present & rows & ~np.isnan(values)
    if not use.any():
        return False
    offsets = (values[use].astype(np.int64) - np.floor_divide(stamps[use], _HOUR_MS)) % 24
    learned = {(int(k) + d) % 24 for k in relation.get("offsets", []) for d in (-1, 0, 1)}
    if np.isin(offsets, list(learned)).mean() >= _HOLDS:
        return False
    if np.isin((offsets - moved) % 24, list(learned)).mean() >= _HOLDS:
        return True
    raise PlaybookRefused(
        f"shift_timestamps: {column!r} is neither {moved:+d} h off its timestamp "
        f"{relation['timestamp']!r} nor on it; the table changed since the guard ran: re-run it"
    )


def _hours_back(values: pd.Series, rows: np.ndarray, moved: int) -> pd.Series:
    if not pd.api.types.is_integer_dtype(values.dtype) and not pd.api.types.is_float_dtype(values.dtype):
        raise PlaybookRefused(f"shift_timestamps: hour column {values.name!r} is {values.dtype}, not a number")
    back = (values - moved) % 24
    return values.mask(rows & values.notna().to_numpy(), back).astype(values.dtype)
