"""Parity: the arrow and spark engines give the same snapshot, hence the same verdict and findings, on the
clean demo table and on every drill scenario's injected table (one real local Spark session for all).

The checks run over each engine's snapshot with one contract and one reference (no control plane): the
guard is pure over the snapshot, so equal verdicts need equal profiles and samples, which are asserted
too (the quantile sketches aside: each engine's KLL is a valid sketch of the same rows).
"""

from __future__ import annotations

import numpy as np
import pytest

import chaos.failures.scenarios  # noqa: F401  (registers the demo scenarios)
from chaos.failures.registry import SCENARIOS
from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.runner import run_guard
from profiles.engines import snapshot
from tests.profiles.engines.helpers import KEYS, NOW_MS, demo_contract, demo_frame

TABLE_SCENARIOS = sorted(name for name, s in SCENARIOS.items() if s.table is not None)
_COMPARED = (
    "logical_type",
    "row_count",
    "null_count",
    "minimum",
    "maximum",
    "quantiles",
    "value_counts",
    "nan_count",
    "zero_count",
    "hours",
    "weekdays",
    "distinct",
)


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    contract = demo_contract()
    folder = tmp_path_factory.mktemp("parity")
    reference_path = folder / "reference.parquet"
    demo_frame(7).to_parquet(reference_path, index=False)
    reference = snapshot("arrow", reference_path, keys=KEYS).profile
    return contract, reference, folder


def _findings(report) -> set[tuple[str, str | None, str]]:
    return {(f.kind.value, f.column, f.severity.value) for f in report.findings}


def _guard(contract, reference, snap):
    return run_guard(
        with_repeats_counted(GuardContext(contract.dataset_urn, contract, snap, reference, (), now_ms=NOW_MS))
    )


def _assert_same_snapshot(arrow, spark):
    assert arrow.profile.row_count == spark.profile.row_count
    assert list(arrow.profile.columns) == list(spark.profile.columns)
    for name, a in arrow.profile.columns.items():
        b = spark.profile.columns[name]
        for field in _COMPARED:
            assert getattr(a, field) == getattr(b, field), (name, field)
        assert a.mean == pytest.approx(b.mean, rel=1e-12) if a.mean is not None else b.mean is None
        assert a.stdev == pytest.approx(b.stdev, rel=1e-9) if a.stdev is not None else b.stdev is None
    assert list(arrow.sample.columns) == list(spark.sample.columns)
    assert arrow.sample[list(KEYS)].equals(spark.sample[list(KEYS)])  # the same rows, in the same order
    assert np.array_equal(arrow.keys.hashes, spark.keys.hashes)


def _both(path, spark_session):
    return (snapshot("arrow", path, keys=KEYS), snapshot("spark", path, session=spark_session, keys=KEYS))


def test_the_clean_demo_table_is_clean_in_both_engines(setting, spark):
    contract, reference, folder = setting
    path = folder / "clean.parquet"
    demo_frame(11).to_parquet(path, index=False)
    arrow, sparked = _both(path, spark)
    _assert_same_snapshot(arrow, sparked)
    reports = [_guard(contract, reference, s) for s in (arrow, sparked)]
    assert [r.verdict.value for r in reports] == ["CLEAN", "CLEAN"], [f.message for f in reports[0].findings]
    assert _findings(reports[0]) == _findings(reports[1])


def test_every_drill_scenario_gets_the_same_verdict_and_findings_from_both_engines(setting, spark):
    contract, reference, folder = setting
    clean = demo_frame(11)
    assert len(TABLE_SCENARIOS) >= 20
    detected = []
    for name in TABLE_SCENARIOS:
        scenario = SCENARIOS[name]
        injected = scenario.table(clean.copy(), scenario.target(contract, seed=0))
        path = folder / f"{name}.parquet"
        injected.frame.to_parquet(path, index=False)
        arrow, sparked = _both(path, spark)
        _assert_same_snapshot(arrow, sparked)
        first, second = _guard(contract, reference, arrow), _guard(contract, reference, sparked)
        assert first.verdict == second.verdict, name
        assert _findings(first) == _findings(second), name
        detected.append(any(scenario.localizes(f) for f in first.findings))
    assert sum(detected) >= len(TABLE_SCENARIOS) - 3, dict(zip(TABLE_SCENARIOS, detected))


def test_a_batch_cut_by_a_time_window_is_the_same_batch_in_both_engines(setting, spark):
    from profiles.profile import TimeWindow

    _, _, folder = setting
    path = folder / "windowed.parquet"
    frame = demo_frame(11)
    frame.to_parquet(path, index=False, row_group_size=2000)
    start = int(frame["event_ts"].min().timestamp() * 1000)
    window = TimeWindow("event_ts", start + 10 * 86_400_000, start + 17 * 86_400_000)
    arrow = snapshot("arrow", path, keys=KEYS, window=window)
    sparked = snapshot("spark", path, session=spark, keys=KEYS, window=window)
    inside = (frame["event_ts"].astype("int64") // 1_000_000 > window.after_ms) & (
        frame["event_ts"].astype("int64") // 1_000_000 <= window.through_ms
    )
    assert 0 < arrow.profile.row_count == int(inside.sum()) < len(frame)
    _assert_same_snapshot(arrow, sparked)
    assert sparked.batch.window == window and sparked.batch.start_ms == arrow.batch.start_ms


def test_both_engines_hash_keys_of_every_length_alike(tmp_path, spark):
    """Keys counting up across a word boundary, read by row group (arrow) and by Spark's own batches: the same key
    hashes and the same content hash, wherever the engines cut the rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from profiles.engines.content import content_hash_of_tables
    from profiles.engines.spark import read_frame, spark_content_hash

    values = [f"o-{n}" for n in range(998_000, 1_002_000)]
    path = tmp_path / "counting.parquet"
    pq.write_table(
        pa.table({"order_id": pa.array(values), "n": pa.array(range(len(values)))}), path, row_group_size=700
    )
    arrow, sparked = snapshot("arrow", path, keys=KEYS), snapshot("spark", path, session=spark, keys=KEYS)
    assert np.array_equal(arrow.keys.hashes, sparked.keys.hashes)
    assert spark_content_hash(read_frame(spark, path)) == content_hash_of_tables(pq.ParquetFile(path).iter_batches(700))
