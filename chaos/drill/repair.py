"""Repair accuracy and collateral damage: a healed table compared cell by cell with the clean one.

Rows are matched on the contract's key (the first occurrence of a key in the healed table; later ones
are duplicates left behind). Corrupted units are the cells the injector changed, the duplicate rows it
added and the rows it removed; a unit is repaired when the healed table has the clean value back (numbers
within REL_TOLERANCE), the duplicate gone, the row back. Collateral damage is the share of untouched
cells the heal changed; rows dropped is the share of untouched rows missing from the healed table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from chaos.failures.registry import Injected

__all__ = ["Repair", "repair_scores", "cells_equal", "REL_TOLERANCE"]

REL_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Repair:
    corrupted: int
    repaired: int
    clean_cells: int
    changed: int
    clean_rows: int
    rows_dropped: int

    @property
    def accuracy(self) -> float | None:
        return self.repaired / self.corrupted if self.corrupted else None

    @property
    def collateral(self) -> float | None:
        return self.changed / self.clean_cells if self.clean_cells else None

    @property
    def rows_dropped_share(self) -> float | None:
        return self.rows_dropped / self.clean_rows if self.clean_rows else None


def repair_scores(clean: pd.DataFrame, healed: pd.DataFrame, injected: Injected, key: str) -> Repair:
    removed = injected.removed if injected.removed is not None else np.zeros(len(clean), dtype=bool)
    keys = clean[key]
    if key not in healed.columns:
        first, extra = healed.iloc[0:0], len(healed)
        present = np.zeros(len(clean), dtype=bool)
    else:
        first = healed.drop_duplicates(key, keep="first").set_index(key)
        extra = len(healed) - len(first)
        present = keys.isin(first.index).to_numpy()
    aligned = first.reindex(keys.to_numpy()) if len(first.columns) else first
    corrupted = injected.corrupted_cells + injected.rows_added + int(removed.sum())
    repaired = max(0, injected.rows_added - extra) + int((removed & present).sum())
    clean_cells = changed = 0
    for column in clean.columns:
        if column == key:
            continue
        hit = injected.cells.get(column, np.zeros(len(clean), dtype=bool))
        same = (
            cells_equal(clean[column], aligned[column])
            if column in aligned.columns
            else np.zeros(len(clean), dtype=bool)
        )
        repaired += int((hit & present & same).sum())
        untouched = ~hit & present & ~removed
        clean_cells += int(untouched.sum())
        changed += int((untouched & ~same).sum())
    return Repair(
        corrupted, repaired, clean_cells, changed, len(clean) - int(removed.sum()), int((~removed & ~present).sum())
    )


def cells_equal(clean: pd.Series, healed: pd.Series) -> np.ndarray:
    """Cell-wise equality of two aligned columns: nulls equal nulls, numbers within REL_TOLERANCE,
    timestamps to the nanosecond; a value of another kind (text for a number) is never equal."""
    left, right = clean.reset_index(drop=True), healed.reset_index(drop=True)
    both_null = (left.isna() & right.isna()).to_numpy()
    if pd.api.types.is_numeric_dtype(left.dtype) and not pd.api.types.is_bool_dtype(left.dtype):
        if not pd.api.types.is_numeric_dtype(right.dtype):
            return both_null
        a, b = left.to_numpy(dtype=float, na_value=np.nan), right.to_numpy(dtype=float, na_value=np.nan)
        return both_null | np.isclose(a, b, rtol=REL_TOLERANCE, atol=1e-9)
    if pd.api.types.is_datetime64_any_dtype(left.dtype):
        if not pd.api.types.is_datetime64_any_dtype(right.dtype):
            return both_null
        return both_null | (_utc_ns(left) == _utc_ns(right)) & left.notna().to_numpy() & right.notna().to_numpy()
    same = (left.astype("object") == right.astype("object")).fillna(False).to_numpy(dtype=bool)
    return both_null | same


def _utc_ns(values: pd.Series) -> np.ndarray:
    if getattr(values.dtype, "tz", None) is None:
        values = values.dt.tz_localize("UTC")
    naive = values.dt.tz_convert("UTC").dt.tz_localize(None)
    return naive.to_numpy(dtype="datetime64[ns]").view("int64")
