"""Rows set aside: what a quarantine leaves in the team's table and out of every training after it.

A quarantine never changes the table: its rows stay exactly as they arrived. So the rule that chose them (a column's
placeholder value, or its nulls, among the rows of the finding's window) chooses exactly the same rows when it is
applied to the table again, at any later run. `SetAside` is that rule, as the heal applied it
(`remediations.playbooks.quarantine_rows` builds its mask with `value_hit` and `remediations.rows.window_mask`, as
`SetAside.mask` does): the heal and every later training share one definition. A rule is kept with the batch whose
run set the rows aside (`controlplane.stages.kept_reference`), so taking that batch back takes the rule back too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from profiles.fingerprints import Fingerprint
from profiles.profile import TimeWindow
from profiles.records import Record
from remediations.registry import HealStep
from remediations.rows import window_mask
from tables import readonce

__all__ = ["SetAside", "KeptAside", "RowsAside", "value_hit", "set_aside_by", "set_aside_mask", "without_set_aside"]


def value_hit(values: pd.Series, value: float | None) -> np.ndarray:
    """The rows holding the placeholder `value` (None: the null rows), as a boolean mask."""
    if value is None:
        return values.isna().to_numpy()
    return (pd.to_numeric(values, errors="coerce") == float(value)).fillna(False).to_numpy(dtype=bool)


@dataclass(frozen=True)
class SetAside(Record):
    """The rows of `column` holding `value` (None: its nulls) whose time lies in `window` (None: every row)."""

    column: str
    window: TimeWindow | None = None
    value: float | None = None
    kind: str = ""  # the finding kind that set them aside: its incident stays open while they are

    def key(self, dataset: str) -> tuple[str, str, str]:
        """The identity of the failure that set the rows aside, as incidents are keyed (`Finding.key`)."""
        return (dataset, self.kind, self.column)

    def mask(self, table: pd.DataFrame) -> np.ndarray:
        """The rows of `table` this rule sets aside (none where the table lacks the column)."""
        if self.column not in table.columns:
            return np.zeros(len(table), dtype=bool)
        rows = np.ones(len(table), dtype=bool) if self.window is None else window_mask(table, self.window)
        return rows & value_hit(table[self.column], self.value)

    def within(self, window: TimeWindow) -> SetAside:
        """The rule on the rows of `window` only (a batch that passed earlier): both bounds the tighter of the two."""
        mine = self.window if self.window is not None else TimeWindow(window.column)
        after = [b for b in (mine.after_ms, window.after_ms) if b is not None]
        through = [b for b in (mine.through_ms, window.through_ms) if b is not None]
        bounded = TimeWindow(window.column, max(after) if after else None, min(through) if through else None)
        return replace(self, window=bounded)

    def through(self, window: TimeWindow) -> SetAside:
        """The rule bounded by the end of `window` (its batch's rows): rows that arrive later are never set aside
        by it, whatever they hold; only the guard, judging them, can set them aside."""
        mine = self.window if self.window is not None else TimeWindow(window.column)
        if mine.through_ms is not None:
            return self
        return replace(self, window=replace(mine, through_ms=window.through_ms))


def set_aside_by(step: HealStep) -> SetAside | None:
    """The rule a quarantine step applied (None: the step set nothing aside)."""
    if not step.rows_quarantined or step.column is None:
        return None
    rows: Mapping[str, Any] | None = step.params.get("rows")
    window = None if rows is None else TimeWindow(rows["column"], rows.get("after_ms"), rows.get("through_ms"))
    value = None if step.params.get("null") else float(step.params["value"])
    return SetAside(step.column, window, value, step.finding_kind)


def set_aside_mask(frame: pd.DataFrame, rules: tuple[SetAside, ...]) -> np.ndarray:
    """The rows of `frame` any of `rules` sets aside, as a boolean mask."""
    aside = np.zeros(len(frame), dtype=bool)
    for rule in rules:
        aside |= rule.mask(frame)
    return aside


def without_set_aside(frame: pd.DataFrame, rules: tuple[SetAside, ...]) -> tuple[pd.DataFrame, int]:
    """The frame less every row a rule sets aside, and how many rows that left out."""
    if not rules or frame.empty:
        return frame, 0
    aside = set_aside_mask(frame, rules)
    return (frame[~aside], int(aside.sum())) if aside.any() else (frame, 0)


@dataclass(frozen=True)
class RowsAside:
    """Where in time the rows a heal sets aside lie in the table it publishes: what the training view of that table
    lacks of each batch. The heal's verify guards the training view; a batch that passed earlier and now lacks
    exactly these rows (the rest passing against its kept profile) was not rewritten by anyone: the rows it lacks
    are the ones set aside, there in the published table as they came."""

    rows: pd.DataFrame  # the rows set aside, with the columns the rules and the batches' windows read

    @classmethod
    def read(cls, published: Path, rules: tuple[SetAside, ...], time_column: str) -> RowsAside:
        """The rows `rules` set aside in the table at `published`, chosen once."""
        wanted = {time_column} | {r.column for r in rules} | {r.window.column for r in rules if r.window is not None}
        parquet = readonce.open_parquet(published)
        frame = parquet.read(columns=[name for name in parquet.schema_arrow.names if name in wanted]).to_pandas()
        return cls(frame[set_aside_mask(frame, rules)])

    def within(self, window: TimeWindow) -> int:
        """How many rows of `window` the rules set aside."""
        return int(window_mask(self.rows, window).sum())


@dataclass(frozen=True)
class KeptAside(Record):
    """What the run that kept a batch set aside: its rules, and the fingerprint of the batch's window as the
    published table holds it (the rows set aside included), which the history check expects of those rows instead
    of the passed rows' own: a row set aside once is never a rewrite of history."""

    rules: tuple[SetAside, ...]
    held: Fingerprint
