"""The repeats' value types: what the duplicates check asks to be counted (`RepeatsAsked`), the count
(`KeyCount`) and the answer handed to the guard (`Repeats`). No reader here: `profiles.repeats` counts, the guard
takes these (`GuardContext.repeats`)."""

from __future__ import annotations

from dataclasses import dataclass

from profiles.profile import TimeWindow

__all__ = ["KeyCount", "RepeatsAsked", "Repeats", "HASHED_TYPES"]

HASHED_TYPES = ("integer", "number", "string", "boolean", "timestamp", "date")  # logical types `hash_rows` hashes


@dataclass(frozen=True)
class KeyCount:
    rows_compared: int  # rows of the batch with a complete key that were compared
    duplicate_rows: int  # of those, rows whose key an earlier row of the batch, or the rest of the table, had
    exact: bool  # False when the rows compared are a sample by key hash
    across_rows: int = 0  # of the duplicate rows, those whose key the rest of the table (history) has

    @property
    def rate(self) -> float:
        return self.duplicate_rows / self.rows_compared if self.rows_compared else 0.0


@dataclass(frozen=True)
class RepeatsAsked:
    """Rows of a batch repeating an earlier row's `columns` (the declared key; every column when `whole_rows`): the
    batch is the rows of the snapshot's `files` inside `window` (all of them without one), `expected_rows` of them
    as profiled; `history` (the whole table's files, for a key) adds the batch rows whose key the rest of the
    table has. Asked by `guard.checks.duplicates.repeats_asked`, counted by `profiles.repeats.count_repeats`."""

    columns: tuple[str, ...]
    files: tuple[str, ...]
    window: TimeWindow | None
    expected_rows: int
    history: tuple[str, ...] = ()
    whole_rows: bool = False


@dataclass(frozen=True)
class Repeats:
    """The answer to `asked`: its `count`, or the `error` that kept it from being counted (a file that cannot be
    read, or changed since it was profiled), which the duplicates check raises: fail closed, never a pass."""

    asked: RepeatsAsked
    count: KeyCount | None = None
    error: str | None = None
