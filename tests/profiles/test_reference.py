"""profiles/reference.py: a reference merges batches and keeps their variation."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import Iterator

import pytest

from profiles.batches import split_batches
from profiles.outline import outline
from profiles.profile import BatchProfile
from profiles.reference import Reference, build_reference, reference_of
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


def test_a_reference_read_one_batch_at_a_time_holds_one_and_is_the_lists_byte_for_byte(tmp_path: Path) -> None:
    path = write(tmp_path, table(), "table")
    texts = [s.batch.to_json() for s in split_batches(path, time_column="ts", cadence="week")]  # type: ignore[union-attr]
    read_so_far: list[weakref.ref[BatchProfile]] = []
    most = 0

    def read() -> Iterator[BatchProfile]:
        nonlocal most
        for text in texts:
            most = max(most, sum(r() is not None for r in read_so_far))  # still held as the next one is read
            batch = BatchProfile.from_json(text)
            read_so_far.append(weakref.ref(batch))
            yield batch

    reference = reference_of(read)
    assert len(texts) == 13 and most == 1
    assert reference.to_json() == build_reference([BatchProfile.from_json(t) for t in texts]).to_json()
    readings = iter([texts, texts[:-1]])  # a batch gone between the two readings
    with pytest.raises(ValueError, match="changed while"):
        reference_of(lambda: (BatchProfile.from_json(t) for t in next(readings)))
    with pytest.raises(ValueError, match="outline"):
        build_reference([outline(BatchProfile.from_json(texts[0]))])
