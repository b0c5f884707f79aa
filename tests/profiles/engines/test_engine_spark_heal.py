"""Heal at scale: the Spark playbooks heal a new version beside the table, a commit marker publishes it
atomically, and undo restores the exact content hash; both engines hash the same rows alike."""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

import chaos.failures.scenarios  # noqa: F401  (registers the demo scenarios)
from chaos.failures.registry import SCENARIOS
from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.findings import RowSelector, Verdict
from guard.kinds import FindingKind as K
from guard.runner import run_guard
from profiles.engines import snapshot
from profiles.engines.content import content_hash_of_tables
from profiles.engines.spark import read_frame, spark_content_hash
from remediations.playbooks.unit_rescale import unit_rescale
from remediations.registry import HealInput
from remediations.spark.sandbox import current_path, heal_spark, publish_spark, undo_spark, versions_of
from tests.profiles.engines.helpers import KEYS, NOW_MS, demo_contract, demo_frame


@pytest.fixture(scope="module")
def estate(tmp_path_factory):
    contract = demo_contract()
    folder = tmp_path_factory.mktemp("spark-heal")
    demo_frame(7).to_parquet(folder / "reference.parquet", index=False)
    reference = snapshot("arrow", folder / "reference.parquet", keys=KEYS).profile
    return contract, reference, folder


def _guard(contract, reference, snap):
    return run_guard(
        with_repeats_counted(GuardContext(contract.dataset_urn, contract, snap, reference, (), now_ms=NOW_MS))
    )


def _arrow_hash(folder) -> str:
    files = sorted(p for p in folder.glob("*.parquet"))
    return content_hash_of_tables(pq.read_table(f) for f in files)


def test_a_spark_heal_publishes_by_marker_and_undo_restores_the_exact_content_hash(estate, spark, tmp_path):
    contract, reference, _ = estate
    scenario = SCENARIOS["unit_km_to_m"]
    injected = scenario.table(demo_frame(11), scenario.target(contract, seed=0, magnitude=1.0)).frame
    root = tmp_path / "eta_features"
    root.mkdir()
    injected.to_parquet(root / "part-0.parquet", index=False)
    report = _guard(contract, reference, snapshot("spark", current_path(root), session=spark, keys=KEYS))
    assert (K.UNIT_MISMATCH, "distance_km") in {(f.kind, f.column) for f in report.blocking}

    outcome = heal_spark(spark, root, report.blocking, contract, reference)
    assert outcome.complete and [s.playbook for s in outcome.steps] == ["unit_rescale"]
    assert current_path(root) == root  # staged only: the table is untouched until published
    healed = _guard(contract, reference, snapshot("spark", outcome.healed_path, session=spark, keys=KEYS))
    assert healed.verdict is Verdict.CLEAN, [f.message for f in healed.findings]

    pandas_heal, _ = unit_rescale(HealInput(injected, next(iter(report.blocking)), contract, reference))
    assert outcome.after_hash == content_hash_of_tables([pq.read_table(_written(pandas_heal, tmp_path))])
    assert outcome.before_hash == _arrow_hash(root)  # the engines agree on the bytes before

    previous, version = publish_spark(outcome)
    assert previous is None and current_path(root) == versions_of(root) / version
    assert spark_content_hash(read_frame(spark, current_path(root))) == outcome.after_hash
    assert _arrow_hash(current_path(root)) == outcome.after_hash

    assert undo_spark(root) is None
    assert current_path(root) == root
    assert spark_content_hash(read_frame(spark, current_path(root))) == outcome.before_hash
    with pytest.raises(ValueError, match="nothing to undo"):
        undo_spark(root)


def _written(frame: pd.DataFrame, folder) -> str:
    path = folder / "pandas-heal.parquet"
    frame.to_parquet(path, index=False)
    return str(path)


def test_spark_playbooks_heal_casing_and_duplicates_and_refuse_to_set_missing_labels_aside(estate, spark, tmp_path):
    contract, reference, _ = estate
    frame = demo_frame(11)
    frame.loc[frame.index[:400], "vehicle_type"] = frame["vehicle_type"].iloc[:400].str.upper()
    frame.loc[frame.index[-200:], ["eta_minutes", "label_ts"]] = None
    frame = pd.concat([frame, frame.iloc[1000:1100]], ignore_index=True)
    root = tmp_path / "t"
    root.mkdir()
    frame.to_parquet(root / "part-0.parquet", index=False)
    report = _guard(contract, reference, snapshot("spark", root, session=spark, keys=KEYS))
    found = {f.kind for f in report.blocking}
    assert {K.CATEGORY_CASING, K.DUPLICATE_KEYS} <= found, [f.message for f in report.findings]
    outcome = heal_spark(spark, root, report.blocking, contract, reference)
    # rows without a label are set aside, never dropped: a quarantine, which the spark engine does not do
    assert [(f.kind, why.split(" (")[0]) for f, why in outcome.refused] == [
        (K.LABEL_IMMATURE, "the spark engine has no transform for label_window")
    ] * (K.LABEL_IMMATURE in found)
    healed = snapshot("spark", outcome.healed_path, session=spark, keys=KEYS)
    assert healed.keys.duplicates().duplicate_rows == 0
    assert healed.profile.row_count == len(frame) - 100
    assert set(dict(healed.profile.columns["vehicle_type"].value_counts)) <= {"bike", "car", "scooter"}


def test_a_spark_heal_of_a_runs_copy_writes_the_bytes_pandas_writes_and_refuses_what_spark_cannot_heal(
    estate, spark, tmp_path
):
    from guard.findings import make_finding
    from remediations.sandbox import heal_copy
    from remediations.spark.copy import heal_copy_spark

    contract, reference, _ = estate
    frame = demo_frame(11)  # pandas timestamps, to the nanosecond
    cut = frame["event_ts"].sort_values().iloc[len(frame) * 3 // 4]
    frame.loc[frame["event_ts"] > cut, "distance_km"] *= 1000.0  # the newest quarter in metres
    source = tmp_path / "table.parquet"
    frame.to_parquet(source, index=False, row_group_size=5000)
    rows = RowSelector("event_ts", int(cut.timestamp() * 1000), None)
    metres = make_finding(
        K.UNIT_MISMATCH,
        contract.dataset_urn,
        "distance_km",
        observed="m",
        expected="km",
        message="metres",
        playbook="unit_rescale",
        scale=1000.0,
        offset=0.0,
        actual_unit="m",
        declared_unit="km",
        rows=rows,
    )
    sparked = heal_copy_spark(spark, source, tmp_path / "spark", (metres,), contract, reference)
    pandas = heal_copy(source, tmp_path / "pandas", (metres,), contract, reference)
    assert sparked.complete and sparked.steps == pandas.steps
    assert sparked.after_hash == pandas.after_hash  # the same bytes: rows, nanoseconds, schema, row groups
    assert sorted(p.name for p in (tmp_path / "spark").iterdir()) == ["healed.parquet", "input.parquet"]

    nulls = make_finding(
        K.NULL_SPIKE,
        contract.dataset_urn,
        "rain_mm",
        observed=0.3,
        expected=0.01,
        message="nulls",
        playbook="quarantine_rows",
    )
    refused = heal_copy_spark(spark, source, tmp_path / "refused", (metres, nulls), contract, reference)
    assert not refused.complete and [f.kind for f, _ in refused.refused] == [K.NULL_SPIKE]
    assert "no transform for quarantine_rows" in refused.refused[0][1]
    assert not (tmp_path / "refused" / "healed.parquet").exists()  # nothing to publish, nothing half-written
