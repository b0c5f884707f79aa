"""Relationships learned from a batch's rows: what each one holds, that batches merge into the whole without
rereading a row, and that a profile carrying them round-trips through JSON byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from profiles.profile import DatasetProfile, canonical_json
from profiles.reference import build_reference
from profiles.relations import Relations, learn_relations, pair_key
from profiles.snapshot import read_snapshot

HOUR = pd.Timedelta(hours=1)


def hourly(days: int = 20, seed: int = 0) -> pd.DataFrame:
    """Hourly rows in UTC with a local hour (UTC-8), a diurnal temperature, a label 30-90 min after the event,
    temp_min <= temp_max, a total = part_a + part_b, and a category that shifts a number."""
    rng = np.random.default_rng(seed)
    time = pd.date_range("2024-01-01", periods=24 * days, freq="h", tz="UTC")
    hours = time.hour.to_numpy()
    low = rng.normal(5, 2, len(time)).round(1)
    a, b = rng.normal(10, 2, len(time)).round(2), rng.normal(3, 1, len(time)).round(2)
    kind = rng.choice(["x", "y"], len(time))
    return pd.DataFrame(
        {
            "time": time.astype("datetime64[ms, UTC]"),
            "label_time": (time + pd.to_timedelta(rng.uniform(30, 90, len(time)), "min")).astype("datetime64[ms, UTC]"),
            "hour_local": ((hours - 8) % 24).astype(np.int64),
            "temp": (10 + 6 * np.sin((hours - 9) / 24 * 2 * np.pi) + rng.normal(0, 1, len(time))).round(1),
            "temp_min": low,
            "temp_max": (low + rng.uniform(2, 9, len(time))).round(1),
            "part_a": a,
            "part_b": b,
            "total": (a + b).round(2),
            "kind": kind,
            "amount": np.where(kind == "x", 1.0, 5.0) + rng.normal(0, 0.5, len(time)),
        }
    )


TYPES = {
    "time": "timestamp",
    "label_time": "timestamp",
    "hour_local": "integer",
    "temp": "number",
    "temp_min": "number",
    "temp_max": "number",
    "part_a": "number",
    "part_b": "number",
    "total": "number",
    "kind": "string",
    "amount": "number",
}


def test_each_relation_holds_what_the_rows_show() -> None:
    frame = hourly()
    learned = learn_relations(frame, TYPES)
    offsets = learned.hour_of["time"]["hour_local"]
    assert offsets[16] == len(frame) and sum(offsets) == len(frame)  # (hour_local - hour(time)) mod 24 = 16
    diurnal = learned.diurnal["time"]["temp"]
    assert sum(diurnal.counts) == len(frame) and int(np.nanargmax(diurnal.means())) in (14, 15, 16)  # peak 15:00 UTC
    lag = learned.lags["label_time|time"]  # time - label_time: minus 30 to 90 minutes
    assert -90 * 60_000 <= lag.quantile(0.01) and lag.quantile(0.99) <= -30 * 60_000
    order = learned.pairs[pair_key("temp_min", "temp_max")]
    assert order.a_le_b == 0 and order.n == len(frame)  # sorted names: temp_max <= temp_min never holds
    assert learned.identities["total=part_a+part_b"] == (len(frame), len(frame))
    key, eta, rows = learned.association("amount", "kind")
    assert key == "eta:kind|amount" and eta > 0.9 and rows == len(frame)
    assert learned.spread[key] == (eta, eta)


def test_no_identity_between_unrelated_columns_and_none_over_all_zero_rows() -> None:
    rng = np.random.default_rng(1)
    zeros = np.zeros(400)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=400),
            "b": rng.normal(size=400),
            "c": rng.normal(size=400),
            "ghi": np.r_[zeros[:200], rng.uniform(1, 9, 200)],
            "dni": np.r_[zeros[:200], rng.uniform(1, 9, 200)],
            "dhi": np.r_[zeros[:200], rng.uniform(1, 9, 200)],
        }
    )
    assert learn_relations(frame, {c: "number" for c in frame}).identities == {}  # night rows prove nothing


def test_batches_merge_into_the_relations_of_their_union() -> None:
    frame = hourly(days=30)
    halves = frame.iloc[: len(frame) // 2], frame.iloc[len(frame) // 2 :]
    merged = learn_relations(halves[0], TYPES).merge(learn_relations(halves[1], TYPES))
    whole = learn_relations(frame, TYPES)
    assert merged.hour_of == whole.hour_of
    assert np.allclose(merged.diurnal["time"]["temp"].sums, whole.diurnal["time"]["temp"].sums)
    for key in whole.pairs:
        assert merged.pairs[key].correlation == pytest.approx(whole.pairs[key].correlation, abs=1e-9)
    assert merged.association("amount", "kind")[1] == pytest.approx(whole.association("amount", "kind")[1])
    low, high = merged.spread["r:part_a|total"]
    assert low <= whole.spread["r:part_a|total"][0] <= high  # the batches' range holds the whole's value
    assert merged.identities["total=part_a+part_b"] == (len(frame), len(frame))


def test_a_relation_one_batch_did_not_hold_is_not_kept() -> None:
    frame = hourly()
    broken = frame.assign(total=frame["total"] + np.random.default_rng(2).normal(0, 3, len(frame)))
    merged = learn_relations(frame, TYPES).merge(learn_relations(broken, TYPES))
    assert "total=part_a+part_b" in learn_relations(frame, TYPES).identities
    assert "total=part_a+part_b" not in merged.identities


def test_a_profile_with_relations_round_trips_through_json_and_a_reference_merges_them(tmp_path: Path) -> None:
    frame = hourly()
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False, row_group_size=100)
    snapshot = read_snapshot(path, time_column="time")
    profile = snapshot.profile
    assert profile.relations is not None and profile.relations.hour_of["time"]["hour_local"][16] == len(frame)
    text = canonical_json(profile.to_dict())
    again = DatasetProfile.from_dict(json.loads(text))
    assert canonical_json(again.to_dict()) == text
    assert isinstance(again.relations, Relations) and again.relations.identities == profile.relations.identities
    reference = build_reference([snapshot.batch, read_snapshot(path, time_column="time", batch_id="again").batch])
    assert reference.profile.relations.hour_of["time"]["hour_local"][16] == 2 * len(frame)


def test_a_profile_without_relations_merges_into_one_without() -> None:
    frame = hourly(days=2)
    with_relations = DatasetProfile(len(frame), {}, learn_relations(frame, TYPES))
    assert with_relations.merge(DatasetProfile(0, {})).relations is None  # an unknown stays unknown
    assert "relations" not in DatasetProfile(0, {}).to_dict()


def test_rows_on_an_orders_bound_are_counted_and_a_profile_written_before_reads_none() -> None:
    frame = pd.DataFrame({"dew": [1.0, 2.0, 3.0, 0.5], "air": [1.0, 2.5, 3.0, 4.0]})
    moments = learn_relations(frame, {"dew": "number", "air": "number"}).pairs[pair_key("dew", "air")]
    assert (moments.a_le_b, moments.a_eq_b) == (2, 2)  # sorted names: air <= dew on the two equal rows only
    stored = Relations(pairs={"air|dew": moments}).to_dict()
    assert Relations.from_dict(stored).pairs["air|dew"] == moments
    stored["pairs"]["air|dew"] = stored["pairs"]["air|dew"][:7]  # kept before a_eq_b was
    assert Relations.from_dict(stored).pairs["air|dew"].a_eq_b == 0


def test_a_numeric_column_with_no_value_learns_no_identity_and_asks_numpy_for_no_spread():
    import warnings

    rng = np.random.default_rng(3)
    a, b = rng.uniform(1, 9, 400).round(2), rng.uniform(1, 9, 400).round(2)
    frame = pd.DataFrame({"a": a, "b": b, "total": (a + b).round(2), "empty": np.full(400, np.nan)})
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        learned = learn_relations(frame, {c: "number" for c in frame})
    assert "total=a+b" in learned.identities and not any("empty" in k for k in learned.identities)
