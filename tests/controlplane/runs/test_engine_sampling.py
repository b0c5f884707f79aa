"""The loop's engines (`TableEngine`, as the guard reads a table) draw one sample: the rows of smallest hash of their
key (of the whole row without a key), the same rows in the same order whichever engine reads the table, however its
rows are ordered or cut into files and row groups. Larger tables are compared at 10M rows by `make bench-parity`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from controlplane.runs.engine import TableEngine, acquire_session, release_session
from profiles.profiler import sample_scores

MASTER = "local[2]"
ROWS = 60_000


@pytest.fixture(scope="module")
def spark_held():
    """One local Spark session for the module: the engines share it and stop none."""
    session = acquire_session(MASTER)
    yield session
    release_session(MASTER)


def _table(rows: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    amount = rng.lognormal(2.0, 0.6, rows)
    amount[rng.random(rows) < 0.02] = np.nan
    return pa.table(
        {
            "order_id": pa.array([f"o-{n}" for n in rng.permutation(rows)]),
            "event_ts": pa.array(
                np.datetime64("2026-03-01T00:00:00", "us") + np.arange(rows) * np.timedelta64(7, "s")
            ).cast(pa.timestamp("us", "UTC")),
            "amount": pa.array(amount, mask=rng.random(rows) < 0.01),
            "store": pa.array(np.array(["north", "south", "east", "west"])[rng.integers(0, 4, rows)]),
            "units": pa.array(rng.poisson(3.0, rows)),
        }
    )


def _write(folder: Path, rows: pa.Table, files: int, group: int) -> list[Path]:
    folder.mkdir()
    paths = []
    for index, part in enumerate(np.array_split(np.arange(rows.num_rows), files)):
        paths.append(folder / f"part-{index}.parquet")
        pq.write_table(rows.take(pa.array(part)), paths[-1], row_group_size=group)
    return paths


def _sample(engine: TableEngine, paths: list[Path], keys: tuple[str, ...], **options):
    try:
        return engine.snapshot(paths if len(paths) > 1 else paths[0], keys=keys, **options).sample
    finally:
        engine.close()


@pytest.mark.parametrize("keys", [("order_id",), ()], ids=["by key", "by whole row without a key"])
def test_both_engines_of_the_loop_draw_the_same_sample_rows_in_the_same_order(tmp_path, spark_held, keys):
    rows = _table(ROWS, seed=3)
    paths = _write(tmp_path / "table", rows, files=2, group=7_000)
    options = {"sample_rows": 5_000} if not keys else {}  # keyed: the default 50,000 of the 60,000 rows
    arrow = _sample(TableEngine("arrow"), paths, keys, **options)
    spark = _sample(TableEngine("spark", MASTER), paths, keys, **options)
    assert 0 < len(arrow) < ROWS
    assert arrow.reset_index(drop=True).equals(spark.reset_index(drop=True))


def test_the_sample_is_the_rows_of_smallest_hash_of_their_key_whatever_the_row_order(tmp_path):
    rows = _table(ROWS, seed=5)
    shuffled = rows.take(pa.array(np.random.default_rng(9).permutation(ROWS)))
    first = _sample(TableEngine("arrow"), _write(tmp_path / "a", rows, files=1, group=10_000), ("order_id",))
    second = _sample(TableEngine("arrow"), _write(tmp_path / "b", shuffled, files=3, group=4_000), ("order_id",))
    scores, _ = sample_scores(rows, ("order_id",), seed=0)
    smallest = rows.column("order_id").to_numpy(zero_copy_only=False)[np.argsort(scores)[: len(first)]]
    assert list(first["order_id"]) == list(smallest)
    assert first.reset_index(drop=True).equals(second.reset_index(drop=True))


def test_a_key_column_the_table_lacks_samples_by_whole_row_in_both_engines(tmp_path, spark_held):
    """A renamed key is the schema check's finding: the table is still read, sampled as a table without a key."""
    paths = _write(tmp_path / "table", _table(20_000, seed=7), files=1, group=5_000)
    arrow = TableEngine("arrow").snapshot(paths[0], keys=("order_key",), sample_rows=2_000)
    spark = TableEngine("spark", MASTER)
    try:
        sparked = spark.snapshot(paths[0], keys=("order_key",), sample_rows=2_000)
    finally:
        spark.close()
    assert arrow.keys is None and sparked.keys is None
    assert arrow.sample.reset_index(drop=True).equals(sparked.sample.reset_index(drop=True))
    assert arrow.sample.equals(_sample(TableEngine("arrow"), paths, (), sample_rows=2_000))
