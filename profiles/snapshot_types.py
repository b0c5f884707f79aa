"""The snapshot's value types: the batch as read (its profile, seeded sample, key hashes) and the error of a
read that failed. No reader here: `profiles.snapshot` reads, the guard takes these."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from profiles.engines.keys import KeyHashes
from profiles.profile import BatchProfile, DatasetProfile, TimeWindow

__all__ = ["Snapshot", "SnapshotError"]


class SnapshotError(Exception):
    """The snapshot could not be read; the guard turns this into a blocking finding."""


@dataclass(frozen=True)
class Snapshot:
    path: str  # the first file (the only one for a single-file snapshot)
    profile: DatasetProfile
    sample: pd.DataFrame
    arrow_types: dict[str, str]
    paths: tuple[str, ...] = ()  # every file the batch was read from (read_snapshot always fills it)
    window: TimeWindow | None = None  # only the rows inside it were read
    batch: BatchProfile | None = None  # identity + profile, to store and merge into a reference
    keys: KeyHashes | None = None  # the batch's key hashes, when read with key columns
    engine: str = "arrow"

    @property
    def files(self) -> tuple[str, ...]:
        return self.paths or (self.path,)
