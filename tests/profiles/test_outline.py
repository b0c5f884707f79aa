"""profiles/outline.py: a batch's outline, cut from its profile or read from its JSON without a sketch, is the same;
it keeps what a fingerprint reads and is never stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiles.fingerprints import fingerprint_of_profile
from profiles.outline import outline, outline_from_json
from profiles.profile import BatchProfile
from profiles.snapshot import read_snapshot
from tests.profiles.batches_support import month_window, table, write


def test_an_outline_read_from_json_is_the_outline_of_the_whole_profile_and_keeps_its_fingerprint(
    tmp_path: Path,
) -> None:
    batch = read_snapshot(write(tmp_path, table(), "table"), window=month_window("2024-02"), time_column="ts").batch
    assert batch is not None
    text = batch.to_json()
    cut, read = outline(BatchProfile.from_json(text)), outline_from_json(text)
    assert cut == read and read.outlined and read.window == batch.window and read.end_ms == batch.end_ms
    assert fingerprint_of_profile(read.profile) == fingerprint_of_profile(batch.profile)
    assert all(c.sketch is None and c.distinct is None and not c.quantiles for c in read.profile.columns.values())
    assert read.profile.relations is None and read.profile.columns["kind"].value_counts is None
    with pytest.raises(ValueError, match="is an outline"):
        read.to_json()
