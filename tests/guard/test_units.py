"""guard/units.py: units from pint: any contract spelling understood, every conversion in a group named with factor
and offset, legacy spellings kept, currencies apart, physical bounds."""

from __future__ import annotations

import pytest

from guard.units import UNITS, UnitError, candidates_for, conversion, group_of, is_known, plausible_bounds, same_unit


@pytest.mark.parametrize(
    "unit",
    [
        "mi",
        "min",
        "degF",
        "inch",
        "mph",
        "km/h",
        "hPa",
        "percent",
        "USD",
        "inHg",
        "mbar",
        "kPa",
        "m/s",
        "knot",
        "W/m**2",
        "C",
        "F",
        "mm_rain",
        "in_rain",
        "usd_cents",
        "fraction",
    ],
)
def test_every_spelling_a_contract_writes_is_understood(unit):
    assert is_known(unit) and unit in UNITS


@pytest.mark.parametrize(
    "declared, actual, scale, offset",
    [
        ("degC", "degF", 1.8, 32.0),
        ("degF", "degC", 5 / 9, -160 / 9),
        ("degC", "K", 1.0, 273.15),
        ("C", "F", 1.8, 32.0),
        ("km", "mi", 0.621371192237, 0.0),
        ("m/s", "km/h", 3.6, 0.0),
        ("mph", "km/h", 1.609344, 0.0),
        ("hPa", "inHg", 0.029529983071, 0.0),
        ("hPa", "kPa", 0.1, 0.0),
        ("mm_rain", "in_rain", 1 / 25.4, 0.0),
        ("USD", "USD_cent", 100.0, 0.0),
        ("usd", "usd_cents", 100.0, 0.0),
        ("percent", "fraction", 0.01, 0.0),
    ],
)
def test_conversions_carry_factor_and_offset(declared, actual, scale, offset):
    got = conversion(declared, actual)
    assert got[0] == pytest.approx(scale, rel=1e-8) and got[1] == pytest.approx(offset, abs=1e-9)


def test_candidates_are_the_group_in_the_contracts_vocabulary():
    assert set(candidates_for("m/s")) == {"km/h", "mph", "knot", "ft/s"}
    assert {"inHg", "kPa", "Pa"} <= set(candidates_for("hPa")) and "mbar" not in candidates_for("hPa")  # one unit
    assert candidates_for("C") == ("F", "K") and candidates_for("degC") == ("degF", "K")
    assert "in_rain" in candidates_for("mm_rain") and "inch" in candidates_for("mm")
    assert group_of("degree") == "angle" and "degree" not in candidates_for("percent")
    assert same_unit("hPa", "mbar") and same_unit("mi", "mile")


def test_currencies_never_convert_into_each_other():
    with pytest.raises(UnitError, match="same dimension"):
        conversion("USD", "EUR")
    assert candidates_for("USD") == ("USD_cent",)


def test_unknown_units_are_refused_with_the_fix():
    assert not is_known("furlongs_per_fortnightx") and "parsecs/banana" not in UNITS
    with pytest.raises(UnitError, match="pint's spelling"):
        conversion("bogus_unit", "m")


def test_physical_bounds_follow_the_unit():
    assert plausible_bounds("degC") == (-273.15, None) and plausible_bounds("degF")[0] == pytest.approx(-459.67)
    assert plausible_bounds("m") == (0.0, None) and plausible_bounds("hPa") == (0.0, None)
    assert plausible_bounds("percent") == (0.0, 100.0) and plausible_bounds("fraction") == (0.0, 1.0)
    assert plausible_bounds("min") == (None, None)  # a delay can be negative
    assert plausible_bounds("m/s") == (None, None)  # a velocity component can be negative
