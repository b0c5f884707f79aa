"""The arrow engine's one pass: key hashes that answer duplicates without a second read, a sample by key
hash that does not depend on how the rows are laid out, and the order-independent content hash."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profiles.engines import snapshot
from profiles.engines.content import ContentDigest, content_hash_of_tables
from profiles.engines.keys import KeyIndex
from profiles.repeats import count_duplicate_keys
from profiles.snapshot import read_snapshot
from tests.profiles.engines.helpers import KEYS, demo_frame


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return demo_frame(3)


def test_key_hashes_count_the_duplicates_the_check_counts_by_rereading(frame, tmp_path):
    doubled = pd.concat([frame, frame.iloc[:500]], ignore_index=True)
    path = tmp_path / "doubled.parquet"
    doubled.to_parquet(path, index=False, row_group_size=4000)
    snap = snapshot("arrow", path, keys=KEYS)
    reread = count_duplicate_keys(str(path), KEYS, expected_rows=len(doubled))
    counted = snap.keys.duplicates()
    assert counted.duplicate_rows == reread.duplicate_rows == 500
    assert counted.rows_compared == reread.rows_compared == len(doubled)


def test_duplicates_across_batches_come_from_the_stored_index_not_the_table(frame, tmp_path):
    old, new = frame.iloc[:10_000], pd.concat([frame.iloc[10_000:], frame.iloc[:300]], ignore_index=True)
    old_path, new_path = tmp_path / "old.parquet", tmp_path / "new.parquet"
    old.to_parquet(old_path, index=False)
    new.to_parquet(new_path, index=False)
    index = KeyIndex.empty(KEYS).add(snapshot("arrow", old_path, keys=KEYS).keys)
    index.save(tmp_path / "index.npy")
    old_path.unlink()  # the history's table is gone: only its stored key index answers
    counted = snapshot("arrow", new_path, keys=KEYS).keys.duplicates(KeyIndex.load(tmp_path / "index.npy", KEYS))
    assert (counted.duplicate_rows, counted.across_rows) == (300, 300)
    assert snapshot("arrow", new_path, keys=KEYS).keys.duplicates().duplicate_rows == 0


def test_the_sample_by_key_hash_ignores_row_order_and_row_groups(frame, tmp_path):
    table = pa.Table.from_pandas(frame, preserve_index=False)
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(table, first, row_group_size=1000)
    pq.write_table(table.take(pa.array(np.arange(len(frame))[::-1])), second, row_group_size=7777)
    a = snapshot("arrow", first, keys=KEYS, sample_rows=2000, seed=5)
    b = snapshot("arrow", second, keys=KEYS, sample_rows=2000, seed=5)
    assert len(a.sample) == 2000 and a.sample.equals(b.sample)
    assert a.profile.columns["distance_km"].quantiles == b.profile.columns["distance_km"].quantiles
    other = snapshot("arrow", first, keys=KEYS, sample_rows=2000, seed=6)
    assert not a.sample["order_id"].equals(other.sample["order_id"])  # the seed chooses the rows


def test_the_engine_profile_matches_the_historical_read_but_for_the_sample(frame, tmp_path):
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False, row_group_size=5000)
    engine, legacy = snapshot("arrow", path, keys=KEYS), read_snapshot(path)
    for name, column in legacy.profile.columns.items():
        mine = engine.profile.columns[name]
        assert (mine.null_count, mine.minimum, mine.maximum, mine.value_counts, mine.hours) == (
            column.null_count,
            column.minimum,
            column.maximum,
            column.value_counts,
            column.hours,
        ), name
        assert mine.distinct == column.distinct and mine.sketch == column.sketch, name
    assert legacy.keys is None and engine.keys is not None


def test_the_content_hash_is_order_independent_and_sees_every_value(frame):
    table = pa.Table.from_pandas(frame, preserve_index=False)
    whole = ContentDigest.of(table).hash
    shuffled = table.take(pa.array(np.random.default_rng(0).permutation(table.num_rows)))
    assert content_hash_of_tables(shuffled.to_batches(max_chunksize=3000)) == whole
    assert content_hash_of_tables([table.select(sorted(table.column_names))]) == whole  # column order
    changed = frame.copy()
    changed.loc[17, "distance_km"] += 1e-9
    assert ContentDigest.of(pa.Table.from_pandas(changed, preserve_index=False)).hash != whole
    zero, null = pa.table({"x": pa.array([0.0, 1.0])}), pa.table({"x": pa.array([None, 1.0], pa.float64())})
    assert ContentDigest.of(zero).hash != ContentDigest.of(null).hash
    doubled = pa.concat_tables([table, table.slice(0, 1)])
    assert ContentDigest.of(doubled).hash != whole  # a duplicated row counts
