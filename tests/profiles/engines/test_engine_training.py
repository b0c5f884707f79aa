"""The training sample at scale: seeded, stratified by period, exactly the row budget, the same rows through
the arrow and the spark engine, described with its seed, strata and the full table's content hash."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from profiles.engines.content import content_hash_of_tables
from profiles.engines.training import allocate, training_sample
from tests.profiles.engines.helpers import KEYS, demo_frame

ROLES = {"time_column": "event_ts", "label_column": "eta_minutes", "keys": KEYS}


def test_allocation_is_proportional_and_exact():
    assert allocate({1: 50, 2: 30, 3: 20}, 10) == {1: 5, 2: 3, 3: 2}
    assert sum(allocate({1: 7, 2: 7, 3: 7}, 10).values()) == 10
    assert allocate({1: 3, 2: 4}, 100) == {1: 3, 2: 4}  # under the budget: every labelled row


def test_the_training_sample_is_the_same_through_both_engines(spark, tmp_path):
    frame = demo_frame(11)
    path = tmp_path / "table.parquet"
    frame.to_parquet(path, index=False, row_group_size=3000)
    arrow = training_sample("arrow", path, rows=3000, seed=3, **ROLES)
    sparked = training_sample("spark", path, rows=3000, seed=3, session=spark, **ROLES)
    assert len(arrow.frame) == 3000 and arrow.frame["eta_minutes"].notna().all()
    assert arrow.frame["order_id"].tolist() == sparked.frame["order_id"].tolist()
    assert {**arrow.description, "engine": "spark"} == sparked.description
    described = arrow.description
    assert described["table_hash"] == content_hash_of_tables([pq.read_table(path)])
    assert described["labelled_rows"] == int(frame["eta_minutes"].notna().sum())
    assert described["table_rows"] == len(frame) and described["cadence"] == "day"
    labelled = frame[frame["eta_minutes"].notna()]
    per_day = labelled.groupby(labelled["event_ts"].dt.floor("D")).size()
    for day, count in per_day.items():
        stratum = described["strata"][day.isoformat()]
        assert stratum["labelled_rows"] == count
        assert abs(stratum["sampled_rows"] - 3000 * count / len(labelled)) <= 1
    other = training_sample("arrow", path, rows=3000, seed=4, **ROLES)
    assert set(other.frame["order_id"]) != set(arrow.frame["order_id"])


def test_a_budget_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match="row budget"):
        training_sample("arrow", tmp_path / "x.parquet", rows=0, **ROLES)
