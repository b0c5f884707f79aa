"""Which rows of the table a finding concerns: its `params["rows"]` time window, or every row.

The contract (documented in `guard.findings`): `params["rows"] = {"column": TIME_COLUMN, "after_ms": X,
"through_ms": Y}`, the rows whose TIME_COLUMN lies in (X, Y] (UTC epoch milliseconds; either bound may be
None, unbounded), as `guard.profile.TimeWindow` cuts a batch. Absent or None: every row.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from guard.findings import Finding
from guard.relations import epoch_ms_of
from remediations.registry import PlaybookRefused

__all__ = ["selected_rows", "describe_rows", "rows_window"]


def selected_rows(table: pd.DataFrame, finding: Finding) -> np.ndarray:
    """A boolean mask of the rows the finding concerns; a window that cannot be read refuses the heal."""
    rows = finding.params.get("rows")
    if rows is None:
        return np.ones(len(table), dtype=bool)
    column, after, through = rows_window(rows, finding)
    if column not in table.columns:
        raise PlaybookRefused(
            f"the {finding.kind.value} finding names rows by {column!r}, which the table does not "
            "have; re-run the guard on the current table"
        )
    values = table[column]
    if not pd.api.types.is_datetime64_any_dtype(values.dtype):
        raise PlaybookRefused(
            f"the {finding.kind.value} finding names rows by {column!r}, which is "
            f"{values.dtype}, not a timestamp; heal by hand"
        )
    stamps, present = epoch_ms_of(values)
    mask = present.copy()
    if after is not None:
        mask &= stamps > int(after)
    if through is not None:
        mask &= stamps <= int(through)
    return mask


def rows_window(rows: Any, finding: Finding) -> tuple[str, Any, Any]:
    """(time column, after_ms, through_ms) of a finding's `params["rows"]`; a malformed one refuses the heal."""
    if (
        not isinstance(rows, Mapping)
        or not isinstance(rows.get("column"), str)
        or not set(rows) <= {"column", "after_ms", "through_ms"}
    ):
        raise PlaybookRefused(
            f"the {finding.kind.value} finding's params['rows'] is {rows!r}, not "
            "{'column': TIME_COLUMN, 'after_ms': X, 'through_ms': Y}; re-run the guard"
        )
    for bound in ("after_ms", "through_ms"):
        if rows.get(bound) is not None and not isinstance(rows[bound], (int, np.integer)):
            raise PlaybookRefused(f"params['rows'][{bound!r}] is {rows[bound]!r}, not epoch milliseconds")
    return rows["column"], rows.get("after_ms"), rows.get("through_ms")


def describe_rows(finding: Finding) -> dict[str, Any] | None:
    """The rows selector as heal notes carry it (None: every row)."""
    rows = finding.params.get("rows")
    return dict(rows) if isinstance(rows, Mapping) else None
