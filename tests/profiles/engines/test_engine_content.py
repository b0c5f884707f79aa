"""profiles/engines/content.py: the order-independent content hash is one value for one multiset of rows, however
the rows are chunked, ordered or encoded, strings of every length among them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from profiles.engines.content import ContentDigest, canonical_row_hashes, content_hash_of_tables


def counting_keys(rows: int = 3_000) -> pa.Table:
    """Keys that count up across a word boundary (o-999999 is 8 bytes, o-1000000 nine), beside a number."""
    keys = [f"o-{n}" for n in range(998_500, 998_500 + rows)]
    return pa.table({"k": pa.array(keys), "n": pa.array(np.arange(rows) % 7)})


def test_the_content_hash_is_the_same_in_every_chunking() -> None:
    table = counting_keys()
    whole = ContentDigest.of(table).hash
    assert whole.startswith("kintsugi-content/2:3000:")  # /2: the hashes of profiles.hashing.HASH_FORMAT 2
    for size in (1, 7, 1_000, 1_499, 1_500, 1_501):  # chunks that cut at, before and past the length boundary
        assert content_hash_of_tables(table.to_batches(max_chunksize=size)) == whole, size
    shuffled = table.take(pa.array(np.random.default_rng(3).permutation(table.num_rows)))
    assert content_hash_of_tables(shuffled.to_batches(max_chunksize=500)) == whole
    large = table.set_column(0, "k", table.column("k").cast(pa.large_string()))
    assert ContentDigest.of(large).hash == whole
    dictionary = table.set_column(0, "k", table.column("k").dictionary_encode())
    assert ContentDigest.of(dictionary).hash == whole


def test_a_row_hash_is_the_same_in_any_batch() -> None:
    table = counting_keys()
    whole = canonical_row_hashes(table)
    pieces = [canonical_row_hashes(batch) for batch in table.to_batches(max_chunksize=999)]
    assert np.array_equal(np.concatenate(pieces), whole)
    assert canonical_row_hashes(table.slice(0, 1))[0] == whole[0]  # the first, shortest key alone


def test_a_dictionary_column_hashes_as_its_values_nulls_in_its_indices_or_its_dictionary_too() -> None:
    indices = pa.array([0, 1, None, 2, 0, None], pa.int32())
    encoded = pa.DictionaryArray.from_arrays(indices, pa.array(["x", None, "a longer value than a word"]))
    table = pa.table({"k": encoded, "n": pa.array(range(6))})
    decoded = table.set_column(0, "k", encoded.dictionary_decode())
    assert np.array_equal(canonical_row_hashes(table), canonical_row_hashes(decoded))
    assert len(set(canonical_row_hashes(pa.table({"k": encoded})).tolist())) == 3  # x, null, the long one
