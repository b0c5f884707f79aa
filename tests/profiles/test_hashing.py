"""profiles/hashing.py: a value's hash depends on the value alone, never on the values hashed beside it, how they
are sliced, ordered or chunked, or how arrow encodes them; and the hashes of HASH_FORMAT are the ones stored in
workspaces (key indexes, distinct sketches), digit for digit."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from profiles.hashing import _MIX_BLOCK, HASH_FORMAT, hash_array, hash_rows

# keys that count up across a word boundary (8 bytes), and a few lengths either side
KEYS = ["o-5", "o-999999", "o-1000000", "o-123456789", "", "abcdefgh", "abcdefghi", "é" * 9, "x" * 40]


def alone(value: str) -> np.uint64:
    return hash_array(pa.array([value], pa.string()))[0]


def test_a_string_hashes_alike_whatever_is_hashed_beside_it() -> None:
    one = {key: alone(key) for key in KEYS}
    assert len(set(one.values())) == len(KEYS)
    assert hash_array(pa.array(["o-5"]))[0] == hash_array(pa.array(["o-5", "o-123456789"]))[0]
    together = hash_array(pa.array(KEYS))
    assert [together[i] for i in range(len(KEYS))] == [one[k] for k in KEYS]
    backwards = hash_array(pa.array(KEYS[::-1]))
    assert list(backwards) == [one[k] for k in KEYS[::-1]]
    for start in range(len(KEYS)):  # slices of one array: an offset into its buffers, fewer long values
        sliced = hash_array(pa.array(KEYS).slice(start, 3))
        assert list(sliced) == [one[k] for k in KEYS[start : start + 3]]


def test_equal_strings_hash_equal_in_every_encoding() -> None:
    expected = hash_array(pa.array(KEYS, pa.string()))
    assert np.array_equal(hash_array(pa.array(KEYS, pa.large_string())), expected)
    assert np.array_equal(hash_array(pa.array([k.encode() for k in KEYS], pa.binary())), expected)
    # a dictionary holding a value longer than any the column uses
    dictionary = pa.DictionaryArray.from_arrays(pa.array(range(len(KEYS)), pa.int32()), pa.array(KEYS))
    assert np.array_equal(hash_array(dictionary), expected)
    padded = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["o-5", "o-999999", "z" * 99]))
    assert list(hash_array(padded)) == [alone("o-5"), alone("o-999999")]
    chunked = pa.chunked_array([pa.array(KEYS[:2]), pa.array(KEYS[2:5]), pa.array(KEYS[5:])])
    assert np.array_equal(hash_array(chunked), expected)


def test_a_row_hashes_alike_in_any_slice_or_chunking() -> None:
    table = pa.table({"k": pa.array(KEYS), "n": pa.array(range(len(KEYS)))})
    whole = hash_rows(table)
    for size in (1, 2, 4):
        pieces = [hash_rows(table.slice(start, size)) for start in range(0, table.num_rows, size)]
        assert np.array_equal(np.concatenate(pieces), whole)
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=3))
    assert chunked.column("k").num_chunks == 3 and np.array_equal(hash_rows(chunked), whole)
    wide = pa.table({"k": pa.array(KEYS, pa.large_string()).dictionary_encode(), "n": table.column("n")})
    assert np.array_equal(hash_rows(wide), whole)


def test_values_of_one_width_hash_as_they_do_beside_values_of_other_widths() -> None:
    # an array whose values share one width is read word by word at a stride, not gathered: the same hashes
    for width in (1, 7, 8, 9, 16, 23):
        same = [f"{i:0{width}d}"[-width:] for i in range(50)]
        mixed = hash_array(pa.array(same + ["x" * (width + 1)]))[:-1]
        assert np.array_equal(hash_array(pa.array(same)), mixed)
        assert np.array_equal(hash_array(pa.array(same).slice(3, 20)), mixed[3:23])


def test_values_hash_alike_whichever_block_of_a_long_array_they_fall_in() -> None:
    # a long array is hashed a block at a time: a value's hash is the one it has in an array of its own
    rng = np.random.default_rng(3)
    rows = 2 * _MIX_BLOCK + 77
    values = [KEYS[i] for i in rng.integers(0, len(KEYS), size=rows)]
    strings, numbers = pa.array(values), pa.array(rng.integers(-(2**40), 2**40, size=rows))
    for array in (strings, numbers, strings.slice(_MIX_BLOCK - 3, _MIX_BLOCK + 10)):
        pieces = [hash_array(array.slice(start, 1000)) for start in range(0, len(array), 1000)]
        assert np.array_equal(hash_array(array), np.concatenate(pieces))
    assert list(hash_array(strings)[-len(KEYS) :]) == [alone(v) for v in values[-len(KEYS) :]]


def test_the_hashes_of_this_format_are_the_ones_workspaces_store() -> None:
    # stored key indexes and distinct sketches compare with fresh hashes: a faster hash must give the same digits,
    # else HASH_FORMAT moves on (and kept references are refused with the fix)
    rng = np.random.default_rng(7)
    alphabet = list("abcdefghijklmnopqrstuvwxyz0123456789-_ éü中")
    values = ["".join(rng.choice(alphabet, size=int(n))) for n in rng.integers(0, 40, size=5000)]
    values += ["", "a", "o-259200", "o-10259200", "x" * 64]
    strings = pa.array(values)
    hashes = [
        hash_array(strings),
        hash_array(strings.cast(pa.large_string())),
        hash_array(pa.array(values[:3] + [None] + values[3:10])),
        hash_array(pa.array(np.arange(-5, 5, dtype=np.int64))),
        hash_array(pa.array([0.0, -0.0, 1.5, np.nan, 1e300])),
        hash_rows(pa.table({"s": strings, "n": pa.array(np.arange(len(values)))})),
    ]
    digest = hashlib.sha256(b"".join(h.tobytes() for h in hashes)).hexdigest()
    assert (HASH_FORMAT, digest) == (2, "0350b1d7b0fcad048bd3ebc1bc3c671b2dcc899890d56b82999e2d572c15fd09")
