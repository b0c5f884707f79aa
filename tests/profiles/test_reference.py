"""profiles/reference.py: a reference merges batches and keeps their variation."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiles.batches import split_batches
from profiles.reference import Reference, build_reference
from tests.profiles.batches_support import DAY_MS, table, write


def test_reference_merges_batches_and_keeps_their_variation(tmp_path: Path) -> None:
    path = write(tmp_path, table(), "table")
    batches = [s.batch for s in split_batches(path, time_column="ts", cadence="month")]
    reference = build_reference(batches)  # type: ignore[arg-type]
    assert reference.row_count == sum(b.row_count for b in batches)  # type: ignore[union-attr]
    assert reference.expected_rows == sorted(b.row_count for b in batches)[1]  # type: ignore[union-attr]
    assert 28 * DAY_MS <= reference.cadence_ms <= 31 * DAY_MS  # type: ignore[operator]
    rain = reference.variation("rain")
    assert len(rain) == 3 and all(0.7 < s.zero_share < 0.9 and s.point_share > 0.7 for s in rain)  # type: ignore
    assert Reference.from_json(reference.to_json()).to_json() == reference.to_json()
    assert build_reference(batches).to_json() == reference.to_json()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        build_reference([])
    with pytest.raises(ValueError, match="repeat"):
        build_reference([batches[0], batches[0]])  # type: ignore[list-item]
