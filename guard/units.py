"""Units the guard understands and can name, from pint.

A contract writes a unit in pint's spelling (`mi`, `min`, `degF`, `inch`, `mph`, `km/h`, `hPa`,
`percent`, `W/m**2`...) or in one of the guard's older spellings (`C`, `F`, `mm_rain`, `in_rain`,
`usd_cents`, `fraction`...; `LEGACY_SPELLINGS`), which stay valid. Currencies come from `units.txt`
beside this file (USD and its cents, EUR, GBP: each its own dimension, never converted into another).

`conversion(declared, actual)` gives the exact affine map between two units of one dimension, factor
*and* offset (degC -> degF is x * 1.8 + 32). `candidates_for(declared)` lists the units a column
declared in `declared` could silently have been written in: the units of its group in `CATALOGUE`
(length, mass, time, temperature, speed, pressure, ratio...), without those equal to it (hPa and
mbar are one unit). A unit is named in the contract's own vocabulary: against a legacy spelling, a
candidate is spelt the legacy way when one exists (declared `C` names `F`, declared `mm_rain` names
`in_rain`); otherwise in pint's spelling.

`plausible_bounds(declared)` is what physics allows a value in that unit: no negative length, area, volume, mass or
(absolute) pressure, no temperature below absolute zero, a percentage in [0, 100] and a fraction in [0, 1].
`limits(column)` is what a column's values must keep: the contract's bounds, else these.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator, Mapping

import pint

from guard.contract import ColumnContract

__all__ = [
    "Unit",
    "UNITS",
    "UnitError",
    "CATALOGUE",
    "LEGACY_SPELLINGS",
    "conversion",
    "candidates_for",
    "group_of",
    "parse_unit",
    "is_known",
    "is_ratio_scale",
    "same_unit",
    "plausible_bounds",
    "limits",
    "canonical",
]

_DEFINITIONS = Path(__file__).with_name("units.txt")

# the guard's spellings before pint, and what each means in pint (C and F would read as coulomb and farad)
LEGACY_SPELLINGS: dict[str, str] = {
    "C": "degC",
    "F": "degF",
    "K": "kelvin",
    "mi": "mile",
    "h": "hour",
    "mm_rain": "mm",
    "in_rain": "inch",
    "fraction": "dimensionless",
    "usd": "USD",
    "usd_cents": "USD_cent",
    "eur": "EUR",
    "eur_cents": "EUR_cent",
}
# legacy groups: a candidate is spelt the legacy way only inside the declared unit's legacy group
_LEGACY_GROUP = {"mm_rain": "precipitation", "in_rain": "precipitation"}

# the units a value may silently arrive in, by group: every pair within a group is a nameable conversion
CATALOGUE: dict[str, tuple[str, ...]] = {
    "length": ("m", "km", "cm", "mm", "mile", "ft", "yd", "inch", "nautical_mile"),
    "area": ("m**2", "km**2", "hectare", "ft**2", "acre"),
    "volume": ("l", "ml", "m**3", "gallon"),
    "mass": ("kg", "g", "mg", "lb", "oz", "t"),
    "time": ("s", "ms", "min", "h", "day", "week", "month", "year"),  # a month is pint's: a twelfth of 365.25 days
    "temperature": ("degC", "degF", "K"),
    "speed": ("m/s", "km/h", "mph", "knot", "ft/s"),
    "pressure": ("Pa", "hPa", "kPa", "bar", "inHg", "mmHg", "psi", "atm"),
    "energy": ("J", "kJ", "Wh", "kWh", "cal", "kcal"),
    "power": ("W", "kW", "MW"),
    "power_per_area": ("W/m**2", "kW/m**2"),
    "ratio": ("dimensionless", "percent", "permille"),
    "angle": ("degree", "radian"),
    "USD": ("USD", "USD_cent"),
    "EUR": ("EUR", "EUR_cent"),
    "GBP": ("GBP", "GBP_penny"),
}
_NON_NEGATIVE = ("length", "area", "volume", "mass", "pressure")
_ANGLES = ("degree", "radian", "arcminute", "arcsecond", "turn")
_FRACTION_BOUNDS = {"percent": 100.0, "permille": 1000.0}
_DIGITS = 12  # conversions rounded to 12 significant digits: 0 degC is 32 degF, not 31.999999999999936


class UnitError(ValueError):
    """A unit the guard cannot read, or two units that do not convert into each other."""


@lru_cache(maxsize=1)
def _registry() -> pint.UnitRegistry:
    registry: pint.UnitRegistry = pint.UnitRegistry(cache_folder=None)
    registry.load_definitions(str(_DEFINITIONS))
    return registry


@lru_cache(maxsize=None)
def parse_unit(text: str) -> pint.Unit:
    """The pint unit a contract's spelling means (legacy spellings first)."""
    spelling = LEGACY_SPELLINGS.get(text, text)
    try:
        return _registry().Unit(spelling)
    except (pint.errors.PintError, AttributeError, TypeError, ValueError, SyntaxError) as exc:
        raise UnitError(
            f"unit {text!r} is not a unit pint knows; write it in pint's spelling (e.g. m, km, mile, "
            "degC, degF, mph, km/h, hPa, percent, USD)"
        ) from exc


@lru_cache(maxsize=None)
def is_ratio_scale(text: str) -> bool:
    """Zero in this unit is a true zero (metres, pascals, kelvin), not an offset one (degC, degF)."""
    return _registry().Quantity(0.0, parse_unit(text)).to_base_units().magnitude == 0.0


def is_known(text: str) -> bool:
    try:
        parse_unit(text)
    except UnitError:
        return False
    return True


def same_unit(a: str, b: str) -> bool:
    """Two spellings of one unit (hPa and mbar, mi and mile, C and degC)."""
    try:
        return conversion(a, b) == (1.0, 0.0)
    except UnitError:
        return False


def canonical(text: str) -> str:
    """pint's name for the unit (mile, degree_Celsius...)."""
    return str(parse_unit(text))


def _round(value: float) -> float:
    if value == 0 or not math.isfinite(value):
        return float(value)
    return float(round(value, _DIGITS - 1 - int(math.floor(math.log10(abs(value))))))


@lru_cache(maxsize=None)
def conversion(declared: str, actual: str) -> tuple[float, float]:
    """(scale, offset) such that value_in_actual = value_in_declared * scale + offset."""
    source, target = parse_unit(declared), parse_unit(actual)
    registry = _registry()
    try:
        zero = registry.Quantity(0.0, source).to(target).magnitude
        one = registry.Quantity(1.0, source).to(target).magnitude
    except pint.errors.DimensionalityError as exc:
        raise UnitError(
            f"cannot convert {declared} ({source.dimensionality}) to {actual} "
            f"({target.dimensionality}): choose a unit of the same dimension"
        ) from exc
    return _round(one - zero), _round(zero)


@lru_cache(maxsize=None)
def group_of(declared: str) -> str | None:
    """The catalogue group whose units convert to and from `declared` (None: a unit the catalogue lacks).

    pint counts angles as dimensionless (a radian is a ratio of lengths); the guard keeps them apart from
    ratios, so a percentage is never named as degrees."""
    source = parse_unit(declared)
    if source.dimensionless:
        return "angle" if str(source) in _ANGLES else "ratio"
    for group, members in CATALOGUE.items():
        if group not in ("angle", "ratio") and _converts(declared, members[0]):
            return group
    return None


def _converts(a: str, b: str) -> bool:
    try:
        conversion(a, b)
    except UnitError:
        return False
    return True


@lru_cache(maxsize=None)
def candidates_for(declared: str) -> tuple[str, ...]:
    """Every other unit of the declared unit's group (none equal to it), in the contract's vocabulary."""
    group = group_of(declared)
    if group is None:
        return ()
    found = [_spelt_like(declared, unit) for unit in CATALOGUE[group] if not same_unit(declared, unit)]
    return tuple(dict.fromkeys(found))


def _spelt_like(declared: str, unit: str) -> str:
    """`unit` in the legacy spelling when the declared unit is legacy and one exists in its legacy group."""
    if declared not in LEGACY_SPELLINGS:
        return unit
    for old in _OLD_NAMES:
        if _LEGACY_GROUP.get(old) == _LEGACY_GROUP.get(declared) and same_unit(old, unit):
            return old
    return unit


# the names of the guard's first unit table: a contract written with them is answered with them
_OLD_NAMES = (
    "m",
    "km",
    "cm",
    "mm",
    "mi",
    "ft",
    "yd",
    "kg",
    "g",
    "lb",
    "oz",
    "s",
    "ms",
    "min",
    "h",
    "fraction",
    "percent",
    "usd",
    "usd_cents",
    "eur",
    "eur_cents",
    "mm_rain",
    "in_rain",
    "K",
    "C",
    "F",
)


@lru_cache(maxsize=None)
def plausible_bounds(declared: str) -> tuple[float | None, float | None]:
    """(lowest, highest) value physics allows in the declared unit; None where it sets no bound."""
    group = group_of(declared)
    if group == "temperature":
        return conversion("kelvin", declared)[1], None  # absolute zero, in the declared unit
    if group in _NON_NEGATIVE:
        return 0.0, None
    if group == "ratio":
        spelling = LEGACY_SPELLINGS.get(declared, declared)
        if spelling in _FRACTION_BOUNDS:
            return 0.0, _FRACTION_BOUNDS[spelling]
        return (0.0, 1.0) if declared == "fraction" else (None, None)
    return None, None


@dataclass(frozen=True)
class Unit:
    """A unit as an affine map to its group's first unit: value_in_base = value * factor + offset."""

    name: str
    dimension: str
    factor: float
    offset: float = 0.0


class _UnitTable(Mapping[str, Unit]):
    """`UNITS`: `unit in UNITS` for any unit the guard can read; iterating lists the nameable ones."""

    def __getitem__(self, name: str) -> Unit:
        try:
            group = group_of(name)
        except UnitError as exc:
            raise KeyError(name) from exc
        if group is None:
            raise KeyError(name)
        factor, offset = conversion(name, CATALOGUE[group][0])
        return Unit(name, group, factor, offset)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and is_known(name)

    def __iter__(self) -> Iterator[str]:
        names = [unit for members in CATALOGUE.values() for unit in members] + list(LEGACY_SPELLINGS)
        return iter(sorted(dict.fromkeys(names)))

    def __len__(self) -> int:
        return sum(1 for _ in self)


UNITS: Mapping[str, Unit] = _UnitTable()


def limits(column: ColumnContract) -> tuple[float | None, float | None, str]:
    """The bounds a value of `column` must keep, and where they come from: the contract's, else what physics
    allows in the declared unit (side by side: a contract minimum with a physical maximum, say)."""
    physical = plausible_bounds(column.unit) if column.unit is not None and column.unit in UNITS else (None, None)
    low = column.minimum if column.minimum is not None else _loosened(physical[0], -1)
    high = column.maximum if column.maximum is not None else _loosened(physical[1], +1)
    sources = {
        "contract" if given is not None else "physics"
        for given, bound in ((column.minimum, low), (column.maximum, high))
        if bound is not None
    }
    return low, high, "+".join(sorted(sources))


def _loosened(bound: float | None, side: int) -> float | None:
    """A physical bound, loosened by float rounding (absolute zero is -459.67 degF to 12 digits)."""
    return None if bound is None else bound + side * 1e-9 * max(1.0, abs(bound))
