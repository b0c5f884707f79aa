"""What init proposes, and why: units from names and values with their evidence, bounds with margins cut to what
the unit or the column allows, roles, categories and null limits. Pure: profiles in, a proposal out."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from controlplane.documents.odcs import parse_odcs
from controlplane.errors import InputError
from controlplane.onboard.infer import SIGN_EVIDENCE, Hints, propose
from controlplane.onboard.unitguess import contract_unit, given_unit, guess_unit
from profiles.snapshot import read_snapshot

URN = "urn:li:dataset:(urn:li:dataPlatform:file,t,PROD)"


def _profile(tmp_path, frame: pd.DataFrame):
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    return read_snapshot(tmp_path / "t.parquet").profile


def _proposal(tmp_path, frame, **hints):
    hints = {"target": "y", "time_column": "at", "now_year": 2024, **hints}
    return propose(_profile(tmp_path, frame), Hints(**hints), dataset=URN, table="t")


def _frame(n: int = 300, **columns) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    base = {"at": pd.date_range("2024-01-01", periods=n, freq="h"), "y": rng.normal(10, 2, n)}
    return pd.DataFrame({**base, **{k: v(rng, n) if callable(v) else v for k, v in columns.items()}})


@pytest.mark.parametrize(
    "name, values, unit, sure",
    [
        ("distance_km", lambda r, n: r.uniform(0.5, 20, n), "km", True),
        ("trip_mi", lambda r, n: r.uniform(0.5, 12, n), "mi", True),
        ("prep_time_min", lambda r, n: r.uniform(2, 40, n), "min", False),  # minutes, or a minimum: asked
        ("wait_minutes", lambda r, n: r.uniform(2, 40, n), "min", True),
        ("supply_months", lambda r, n: r.uniform(2, 9, n), "month", True),
        ("lead_days", lambda r, n: r.uniform(1, 30, n), "day", True),
        ("tenure_years", lambda r, n: r.uniform(0, 30, n), "year", True),
        ("temp", lambda r, n: r.normal(12, 6, n), "degC", True),
        ("temp", lambda r, n: r.normal(55, 12, n) + 40, "degF", True),
        ("wind_mph", lambda r, n: r.uniform(0, 30, n), "mph", True),
        ("precip", lambda r, n: r.exponential(4, n), "mm", True),
        ("pressure", lambda r, n: r.normal(1013, 8, n), "hPa", True),
        ("humidity", lambda r, n: r.uniform(20, 100, n), "percent", True),
        ("wind", lambda r, n: r.uniform(0.5, 9, n), "m/s", False),
        ("score", lambda r, n: r.normal(0, 1, n), None, False),
    ],
)
def test_units_from_names_and_values_with_their_evidence(tmp_path, name, values, unit, sure):
    proposal = _proposal(tmp_path, _frame(**{name: values}))
    guess = proposal.column(name).unit
    assert (guess.unit, guess.sure) == (unit, sure), guess
    assert guess.evidence and (
        name.split("_")[-1] in guess.evidence
        or "value" in guess.evidence
        or "median" in guess.evidence
        or "nothing" in guess.evidence
    )
    assert any(q.column == name for q in proposal.questions) == (not sure)
    parse_odcs(proposal.to_odcs(contract_id="t", version="1.0.0", purpose="test"))  # parses with today's guard


@pytest.mark.parametrize(
    "name, values, bounds",
    [
        ("month", lambda r, n: r.integers(1, 10, n), (1, 12)),  # a sample that ends in September: still 1..12
        ("dep_hour", lambda r, n: r.integers(5, 24, n), (0, 23)),  # not 5..35
        ("plane_year", lambda r, n: r.integers(1956, 2014, n), (1900, 2025)),  # not 3020: next year at most
        ("humidity", lambda r, n: r.uniform(20, 100, n), (0, 100)),  # not 150
        ("weekday", lambda r, n: r.integers(0, 7, n), (0, 6)),
        ("latitude", lambda r, n: r.uniform(40, 48, n), (-90, 90)),  # not 36..52: what was seen is not law
    ],
)
def test_bounds_take_the_natural_domain_of_the_column_or_unit(tmp_path, name, values, bounds):
    column = _proposal(tmp_path, _frame(**{name: values})).column(name)
    assert (column.minimum, column.maximum) == bounds, column.bounds_why


def test_bounds_are_what_the_unit_allows_or_a_sign_the_history_never_broke(tmp_path):
    proposal = _proposal(
        tmp_path,
        _frame(
            temp_c=lambda r, n: r.uniform(5, 25, n),
            distance_km=lambda r, n: r.uniform(1, 9, n),
            delay_min=lambda r, n: r.uniform(-5, 90, n),
            score=lambda r, n: r.uniform(10, 20, n),
        ),
    )
    temp, distance = proposal.column("temp_c"), proposal.column("distance_km")
    assert (temp.minimum, temp.maximum) == (-273.15, None)  # absolute zero, nothing above, though never below 5
    assert (distance.minimum, distance.maximum) == (0, None) and "never negative" in distance.bounds_why
    delay, score = proposal.column("delay_min"), proposal.column("score")
    assert (delay.minimum, delay.maximum) == (None, None) and "signed quantity" in delay.bounds_why  # early: < 0
    assert (score.minimum, score.maximum) == (0, None) and "never negative in" in score.bounds_why  # not 10..20
    assert "seen 10" in score.bounds_why  # what was seen is evidence for the person, not a bound


def test_a_sign_is_evidence_only_over_enough_values(tmp_path):
    few = _proposal(tmp_path, _frame(SIGN_EVIDENCE - 1, score=lambda r, n: r.uniform(10, 20, n)))
    assert (few.column("score").minimum, few.column("score").maximum) == (None, None)


def test_roles_keys_categories_and_null_limits(tmp_path):
    frame = _frame(
        order_id=[f"o-{i}" for i in range(300)],
        vehicle=["bike", "car", "van"] * 100,
        label_ts=pd.date_range("2024-01-01 02:00", periods=300, freq="h"),
        rain_mm=lambda r, n: np.where(r.random(n) < 0.1, np.nan, r.exponential(2, n)),
    )
    profile = _profile(tmp_path, frame)
    proposal = propose(profile, Hints("y", "at", now_year=2024), dataset=URN, table="t", unique=frozenset({"order_id"}))
    assert proposal.roles.keys == ("order_id",) and proposal.roles.label_time == "label_ts"
    assert {(q.kind, q.column) for q in proposal.questions} >= {("key", "order_id"), ("label_time", "label_ts")}
    assert proposal.column("vehicle").categories == ("bike", "car", "van")
    assert proposal.column("order_id").null_limit == 0 and proposal.column("at").null_limit == 0
    rain = proposal.column("rain_mm")  # nulls seen are history: the guard's null_spike judges them, no law
    assert rain.null_limit is None and rain.nulls_seen == pytest.approx(10, abs=3)
    assert proposal.column("y").null_limit is None  # label freshness judges the label
    contract = parse_odcs(proposal.to_odcs(contract_id="t", version="1.0.0", purpose="test"))
    assert contract.key_columns == ("order_id",) and contract.label_timestamp_column == "label_ts"
    assert contract.label_freshness_hours == 24.0
    answered = propose(
        profile,
        Hints("y", "at", settled=frozenset({"key:order_id", "label_time"}), now_year=2024),
        dataset=URN,
        table="t",
        unique=frozenset({"order_id"}),
    )
    assert answered.roles.keys == () and answered.roles.label_time is None
    assert [q.kind for q in answered.questions] == ["unit"]  # only the unit of y is left to ask


def test_a_given_unit_in_either_spelling_and_a_unit_the_guard_cannot_name_yet():
    assert (given_unit("mm_rain").unit, given_unit("mm_rain").rain) == ("mm", True)
    assert contract_unit(given_unit("mm_rain")) in ("mm_rain", "mm")
    assert contract_unit(given_unit("degF")) in ("F", "degF")
    assert contract_unit(given_unit("none")) is None
    with pytest.raises(InputError, match="not one Kintsugi knows"):
        given_unit("wobbles")
    mph = guess_unit("wind_mph", _column(), now_year=2024)
    assert contract_unit(mph) in (None, "mph")  # today's guard has no speeds: recorded unitless, said so


def _column():
    from profiles.profile import ColumnProfile

    return ColumnProfile("wind_mph", "number", 10, 0, 1.0, 20.0, 8.0, 3.0, ((0.5, 8.0),))


def test_a_min_max_pair_held_on_every_row_is_proposed_as_an_order(tmp_path):
    """Seattle's daily minimum and maximum temperature (vega_datasets): never equal, so the guard would not learn
    the order as a bound; by their names and every row, init proposes temp_max atLeast temp_min, and the contract
    it writes declares it. A pair one row breaks, or one named otherwise, is not proposed."""
    from vega_datasets import data

    weather = data.seattle_weather().rename(columns={"date": "at", "precipitation": "y"})
    proposal = _proposal(tmp_path, weather.drop(columns=["weather"]))
    assert proposal.column("temp_max").at_least == "temp_min" and proposal.column("temp_min").at_least is None
    text = proposal.to_odcs(contract_id="c", version="1.0.0", purpose="p")
    assert parse_odcs(text).declared_orders == (("temp_min", "temp_max"),)
    crossed = weather.drop(columns=["weather"])
    crossed.loc[3, "temp_max"] = crossed.loc[3, "temp_min"] - 1
    assert _proposal(tmp_path, crossed).column("temp_max").at_least is None
    renamed = weather.drop(columns=["weather"]).rename(columns={"temp_max": "temp_day"})
    assert all(c.at_least is None for c in _proposal(tmp_path, renamed).columns)
