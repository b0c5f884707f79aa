"""Spark Connect: a real server (pyspark's start-connect-server.sh) on loopback, reached as sc://; the spark
engine gives the arrow engine's snapshot and verdict through it, and the doctor's probe sees its executors
run the guard."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.runner import run_guard
from profiles.engines import snapshot
from profiles.engines.spark import probe_spark, ship_guard, spark_session
from tests.profiles.engines.connect_server import connect_server
from tests.profiles.engines.helpers import KEYS, NOW_MS, demo_contract, demo_frame


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    from pyspark.sql import SparkSession

    classic = SparkSession.getActiveSession()
    if classic is not None:  # an earlier test's local session: a remote one cannot start beside it in this process
        classic.stop()
    with connect_server(tmp_path_factory.mktemp("connect")) as url:
        session = spark_session(url)
        yield session
        session.stop()


def test_the_spark_engine_over_spark_connect_matches_the_arrow_engine(remote, tmp_path):
    assert probe_spark(remote) == {"version": remote.version, "connect": True, "executors_run_guard": True}
    contract = demo_contract()
    demo_frame(7).to_parquet(tmp_path / "reference.parquet", index=False)
    reference = snapshot("arrow", tmp_path / "reference.parquet", keys=KEYS).profile
    frame = demo_frame(11)
    frame.loc[frame.index[::9], "vehicle_type"] = "drone"  # a category the contract does not allow
    frame.to_parquet(tmp_path / "candidate.parquet", index=False)
    arrow = snapshot("arrow", tmp_path / "candidate.parquet", keys=KEYS)
    sparked = snapshot("spark", tmp_path / "candidate.parquet", session=remote, keys=KEYS)
    assert sparked.profile.columns["vehicle_type"].value_counts == arrow.profile.columns["vehicle_type"].value_counts
    assert arrow.sample["order_id"].equals(sparked.sample["order_id"])
    assert np.array_equal(arrow.keys.hashes, sparked.keys.hashes)
    reports = [
        run_guard(with_repeats_counted(GuardContext(contract.dataset_urn, contract, s, reference, (), now_ms=NOW_MS)))
        for s in (arrow, sparked)
    ]
    assert [r.verdict.value for r in reports] == ["BLOCKED", "BLOCKED"]
    assert {(f.kind.value, f.column) for f in reports[0].findings} == {
        (f.kind.value, f.column) for f in reports[1].findings
    }
    assert ("new_category", "vehicle_type") in {(f.kind.value, f.column) for f in reports[1].blocking}


def test_the_guard_package_ships_to_the_executors_as_an_artifact(remote):
    ship_guard(remote)  # what a cluster without kintsugi installed needs
    assert probe_spark(remote)["executors_run_guard"]
    # this process keeps importing the installed package: processes it spawns later must not find the zip first
    assert not [entry for entry in sys.path if "kintsugi-guard-" in entry]
