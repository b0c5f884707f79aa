"""Which rows an injector corrupts: uniformly at random, or a contiguous window of one column's sorted values.

A window of the corrupted column itself is missing-not-at-random (e.g. only long trips lose their
distance); a window of another column is missing-at-random given that column (e.g. one day's load,
``window:event_ts``). Seeded: the same generator state picks the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from chaos.errors import InjectionError

__all__ = ["Selection", "select_rows", "RANDOM", "WINDOW"]

RANDOM = "random"
WINDOW = "window"


@dataclass(frozen=True)
class Selection:
    mode: str = RANDOM
    by: str | None = None  # window over this column; None: the corrupted column itself

    def __post_init__(self) -> None:
        if self.mode not in (RANDOM, WINDOW) or (self.mode == RANDOM and self.by is not None):
            raise InjectionError(
                f"row selection {self.label()!r} is not one of random, window, window:COLUMN",
                "pass --rows random, --rows window or --rows window:COLUMN",
            )

    @classmethod
    def parse(cls, text: str) -> Selection:
        mode, _, by = text.partition(":")
        return cls(mode.strip(), by.strip() or None)

    def label(self) -> str:
        return self.mode if self.by is None else f"{self.mode}:{self.by}"


def select_rows(
    frame: pd.DataFrame, share: float, selection: Selection, column: str | None, rng: np.random.Generator
) -> np.ndarray:
    """A boolean mask of round(share * rows) rows, at least one for a positive share, chosen as `selection` says.

    At least one: a failure that touches no row is no failure, and a drill scoring it would score the guard on a
    clean batch (2.5% of a batch of 12 rows rounds to none). A share of 0 selects no row."""
    rows = len(frame)
    share = min(max(share, 0.0), 1.0)
    count = max(round(share * rows), 1 if share > 0 and rows > 0 else 0)
    mask = np.zeros(rows, dtype=bool)
    if count == 0:
        return mask
    if selection.mode == RANDOM:
        mask[rng.choice(rows, size=count, replace=False)] = True
        return mask
    by = selection.by or column
    if by is None or by not in frame.columns:
        raise InjectionError(
            f"row window over column {by!r}, which the table does not have",
            f"choose one of: {', '.join(map(str, frame.columns))}",
        )
    order = np.argsort(_sort_keys(frame[by]), kind="stable")
    start = int(rng.integers(0, rows - count + 1))
    mask[order[start : start + count]] = True
    return mask


def _sort_keys(values: pd.Series) -> np.ndarray:
    """Ranks of the values (nulls last), so any column type sorts the same way."""
    return values.rank(method="first", na_option="bottom").to_numpy()
