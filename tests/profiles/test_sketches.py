"""profiles/sketches.py: the KLL quantile sketch is DataSketches' and deterministic, merges, keeps point masses; the
distinct sketch estimates and merges."""

from __future__ import annotations

import numpy as np
import pytest

from profiles.sketches import KLL_RANK_ERROR, DistinctSketch, QuantileSketch


def test_quantile_sketch_is_datasketches_kll_and_deterministic() -> None:
    datasketches = pytest.importorskip("datasketches")
    values = np.random.default_rng(1).lognormal(size=300_000)
    first, second = QuantileSketch(), QuantileSketch()
    for sketch in (first, second):
        for part in np.array_split(values, 3):
            sketch.update(part)
    assert first.to_bytes() == second.to_bytes()  # the library itself draws its coins from the clock
    theirs = datasketches.kll_doubles_sketch.deserialize(first.to_bytes())
    ranks = np.linspace(0.01, 0.99, 25)
    assert [first.quantile(q) for q in ranks] == [theirs.get_quantile(q, True) for q in ranks]
    assert theirs.get_n() if hasattr(theirs, "get_n") else theirs.n == len(values)
    ordered = np.sort(values)
    errors = [abs(np.searchsorted(ordered, first.quantile(q), side="right") / len(values) - q) for q in ranks]
    assert max(errors) <= KLL_RANK_ERROR + 0.005
    native = datasketches.kll_doubles_sketch(200)
    native.update(values[:50_000])
    read = QuantileSketch.from_bytes(native.serialize())  # a sketch Java, Spark or Druid wrote
    assert read.n == 50_000 and read.quantile(0.5) == native.get_quantile(0.5, True)


def test_merged_quantile_sketch_summarises_the_union() -> None:
    values = np.random.default_rng(2).normal(size=120_000)
    parts = []
    for chunk in np.array_split(values, 12):
        sketch = QuantileSketch()
        sketch.update(chunk)
        parts.append(sketch)
    merged = parts[0]
    for part in parts[1:]:
        merged = merged.merge(part)
    assert merged.n == len(values) and parts[0].n == 10_000  # inputs unchanged
    ordered = np.sort(values)
    for q in (0.05, 0.25, 0.5, 0.75, 0.95):
        assert abs(np.searchsorted(ordered, merged.quantile(q), side="right") / len(values) - q) <= KLL_RANK_ERROR


def test_quantile_sketch_keeps_a_point_mass_and_ties_exact() -> None:
    values = np.where(np.random.default_rng(3).random(50_000) < 0.9, 0.0, 1.0 + np.arange(50_000) % 7)
    sketch = QuantileSketch()
    sketch.update(values)
    value, share = sketch.mode()
    assert value == 0.0 and abs(share - 0.9) < 0.0165
    assert sketch.rank(0.0, inclusive=False) == 0.0 and abs(sketch.rank(0.0) - 0.9) < 0.0165


def test_distinct_sketch_estimates_and_merges() -> None:
    import pyarrow as pa

    from profiles.hashing import hash_array

    a, b = DistinctSketch(), DistinctSketch()
    a.update_hashes(hash_array(pa.array(np.arange(0, 60_000))))
    b.update_hashes(hash_array(pa.array(np.arange(40_000, 100_000))))
    merged = a.merge(b)
    assert abs(merged.estimate() / 100_000 - 1) < 0.05
    assert DistinctSketch.from_base64(merged.to_base64()) == merged


def _registers_by_definition(hashes: np.ndarray) -> np.ndarray:
    """HyperLogLog's registers as defined: per bucket (the top 12 bits), the largest rank (leading zeros + 1) of
    the 52 bits below them."""
    registers = np.zeros(4096, dtype=np.uint8)
    low = (hashes & np.uint64((1 << 52) - 1)).astype(np.float64)
    np.maximum.at(registers, (hashes >> np.uint64(52)).astype(np.intp), (53 - np.frexp(low)[1]).astype(np.uint8))
    return registers


def test_distinct_sketch_counts_many_hashes_exactly_as_defined() -> None:
    # among many hashes only the high ranks are counted first: the registers must still be exact, also where a
    # bucket holds nothing but low ranks (the rest are then counted too)
    rng = np.random.default_rng(5)
    hashes = rng.integers(0, 2**64 - 1, size=1_500_000, dtype=np.uint64, endpoint=True)
    starved = hashes.copy()
    in_first = (starved >> np.uint64(52)) == 0
    starved[in_first] |= np.uint64(1 << 51)  # bucket 0: rank 1 only
    for case in (hashes, starved, hashes[:1000]):
        sketch = DistinctSketch()
        sketch.update_hashes(case)
        assert np.array_equal(sketch.registers, _registers_by_definition(case))
    earlier = DistinctSketch(_registers_by_definition(hashes[:50]))  # registers already set by an earlier batch
    earlier.update_hashes(starved)
    assert np.array_equal(
        earlier.registers, np.maximum(_registers_by_definition(hashes[:50]), _registers_by_definition(starved))
    )
