"""Guess a numeric column's unit, and the values it can physically take, from its name and its values.

Every guess carries its evidence (what in the name, what in the values) and whether it is sure: `kintsugi init`
asks a person about every guess that is not. A column can also be a part of a date (month, hour...) or a
coordinate: unitless, with its natural domain.

Spelling. A guess is made in pint's spelling (`mi`, `min`, `degF`, `inch`, `mph`, `km/h`, `hPa`, `percent`...), the
spelling the guard moves to on branch guard-robust; `contract_unit` writes it the way the guard installed here
reads it: `UNIT_TABLE` gives, per pint spelling, the guard's older spelling (None where the older guard has no such
unit: the column is then recorded unitless, and the evidence says which unit it would have been). Once
`guard.units` reads pint spellings (it has `parse_unit`), pint spellings are written as they are.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from controlplane.errors import InputError
from guard import units as guard_units
from profiles.profile import ColumnProfile

__all__ = [
    "UnitGuess",
    "Domain",
    "guess_unit",
    "given_unit",
    "natural_domain",
    "contract_unit",
    "physical_domain",
    "UNIT_TABLE",
    "PINT_SPELLINGS",
    "tokens",
]

PINT_SPELLINGS = hasattr(guard_units, "parse_unit")  # True once guard-robust's pint units are merged

# pint spelling -> the older guard's spelling, or None (what each allows: `guard.units.plausible_bounds`)
UNIT_TABLE: dict[str, str | None] = {
    "m": "m",
    "km": "km",
    "cm": "cm",
    "mm": "mm",
    "mi": "mi",
    "ft": "ft",
    "yd": "yd",
    "inch": None,
    "kg": "kg",
    "g": "g",
    "lb": "lb",
    "oz": "oz",
    "s": "s",
    "ms": "ms",
    "min": "min",
    "h": "h",
    "percent": "percent",
    "fraction": "fraction",
    "USD": "usd",
    "USD_cent": "usd_cents",
    "EUR": "eur",
    "EUR_cent": "eur_cents",
    "degC": "C",
    "degF": "F",
    "K": "K",
    "mph": None,
    "km/h": None,
    "m/s": None,
    "knot": None,
    "hPa": None,
    "kPa": None,
    "Pa": None,
    "inHg": None,
    "degree": None,
}
# precipitation is a length in pint; the older guard has a dimension of its own for it
_RAIN = {"mm": "mm_rain", "inch": "in_rain"}


@dataclass(frozen=True)
class Domain:
    """The values a column can take whatever the data says (None: no bound), and why."""

    low: float | None
    high: float | None
    why: str


@dataclass(frozen=True)
class UnitGuess:
    unit: str | None  # pint spelling; None: unitless
    evidence: str
    sure: bool
    rain: bool = False  # a precipitation amount (spelt mm_rain / in_rain by the older guard)
    domain: Domain | None = None  # a calendar part or a coordinate: its natural domain


def tokens(name: str) -> list[str]:
    """`tempMax_C` -> ['temp', 'max', 'c']."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def contract_unit(guess: UnitGuess) -> str | None:
    """The spelling the installed guard reads, or None when it cannot name this unit yet."""
    if guess.unit is None:
        return None
    if guess.rain and guess.unit in _RAIN and not PINT_SPELLINGS:
        return _RAIN[guess.unit]
    if PINT_SPELLINGS or guess.unit not in UNIT_TABLE:
        return guess.unit if guess.unit in guard_units.UNITS else None
    older = UNIT_TABLE[guess.unit]
    return older if older in guard_units.UNITS else None


def given_unit(text: str, *, rain: bool = False) -> UnitGuess:
    """A unit a person gave, in pint's or the older guard's spelling; "" or "none" means unitless."""
    spelt = text.strip()
    if spelt.lower() in ("", "none", "unitless", "-"):
        return UnitGuess(None, "unitless, as answered", True)
    older = {old: new for new, old in UNIT_TABLE.items() if old is not None}
    rains = {old: new for new, old in _RAIN.items()}
    if spelt in rains:
        return UnitGuess(rains[spelt], f"{spelt}, as given", True, rain=True)
    if spelt in UNIT_TABLE or spelt in older:
        return UnitGuess(older.get(spelt, spelt), f"{spelt}, as given", True, rain=rain)
    if spelt in guard_units.UNITS:
        return UnitGuess(spelt, f"{spelt}, as given", True)
    known = sorted(set(UNIT_TABLE) | set(guard_units.UNITS))
    raise InputError(f"unit {spelt[:40]!r} is not one Kintsugi knows", f"use one of: {', '.join(known)}, or none")


def physical_domain(guess: UnitGuess) -> Domain:
    """What the column can take by definition: its calendar or coordinate domain, else what the guard's unit
    allows (`guard.units.plausible_bounds`: one answer for init and the guard). A duration, a speed or an
    amount of money may be negative (a delay, a velocity component, a balance): unbounded by definition (init
    floors one the history never saw negative: `controlplane.onboard.infer._bounds`)."""
    if guess.domain is not None:
        return guess.domain
    spelt = contract_unit(guess)
    if spelt is None:
        return Domain(None, None, "")
    low, high = guard_units.plausible_bounds(spelt)
    what: dict[tuple[float | None, float | None], str] = {
        (0, None): "never negative",
        (0, 100): "a percentage: 0 to 100",
        (0, 1): "a fraction: 0 to 1",
    }
    why = what.get((low, high), f"not below {low:g} {spelt} (absolute zero)" if low is not None else "")
    return Domain(low, high, why)


_NAMED: list[tuple[frozenset[str], str]] = [
    (frozenset({"km", "kms", "kilometers", "kilometres", "kilometer", "kilometre"}), "km"),
    (frozenset({"mi", "mile", "miles"}), "mi"),
    (frozenset({"meters", "metres", "meter", "metre"}), "m"),
    (frozenset({"cm"}), "cm"),
    (frozenset({"mm", "millimeters", "millimetres"}), "mm"),
    (frozenset({"ft", "feet"}), "ft"),
    (frozenset({"inch", "inches"}), "inch"),
    (frozenset({"kg", "kgs", "kilograms"}), "kg"),
    (frozenset({"grams"}), "g"),
    (frozenset({"lb", "lbs", "pounds"}), "lb"),
    (frozenset({"oz", "ounces"}), "oz"),
    (frozenset({"sec", "secs", "seconds"}), "s"),
    (frozenset({"millis", "msec"}), "ms"),
    (frozenset({"mins", "minutes"}), "min"),
    (frozenset({"hr", "hrs", "hours"}), "h"),
    (frozenset({"days"}), "day"),  # plurals only: a quantity of them; `day`, `week`, `month` alone are date parts
    (frozenset({"weeks", "wks"}), "week"),
    (frozenset({"months", "mos"}), "month"),
    (frozenset({"years", "yrs"}), "year"),
    (frozenset({"pct", "percent", "perc", "percentage"}), "percent"),
    (frozenset({"usd", "dollars"}), "USD"),
    (frozenset({"cents"}), "USD_cent"),
    (frozenset({"eur", "euros"}), "EUR"),
    (frozenset({"mph"}), "mph"),
    (frozenset({"kmh", "kph"}), "km/h"),
    (frozenset({"mps"}), "m/s"),
    (frozenset({"knots", "kts", "kt"}), "knot"),
    (frozenset({"hpa", "mbar", "millibars"}), "hPa"),
    (frozenset({"kpa"}), "kPa"),
    (frozenset({"inhg"}), "inHg"),
    (frozenset({"celsius", "degc"}), "degC"),
    (frozenset({"fahrenheit", "degf"}), "degF"),
    (frozenset({"kelvin"}), "K"),
]
_LAST_LETTER = {"m": "m", "s": "s", "h": "h", "g": "g", "c": "degC", "f": "degF", "k": "K"}
_TEMPERATURE = frozenset({"temp", "temperature", "tmax", "tmin", "tavg", "dewpoint", "dewp", "dew"})
_RAIN_WORDS = frozenset({"precip", "precipitation", "prcp", "rain", "rainfall", "snow", "snowfall", "snowdepth"})
_WIND = frozenset({"wind", "gust", "windspeed", "wspd", "speed"})
_PRESSURE = frozenset({"pressure", "press", "pres", "baro", "slp", "mslp", "altimeter"})
_HUMIDITY = frozenset({"humidity", "humid", "rh", "relhum"})
_VISIBILITY = frozenset({"visibility", "visib", "vis"})
_COUNT = frozenset({"count", "cnt", "num", "qty", "quantity", "n"})
_CALENDAR: dict[str, tuple[float, float]] = {
    "month": (1, 12),
    "hour": (0, 23),
    "minute": (0, 59),
    "second": (0, 59),
    "quarter": (1, 4),
    "week": (1, 53),
    "dayofyear": (1, 366),
    "doy": (1, 366),
    "day": (1, 31),
    "dom": (1, 31),
}
_WEEKDAY = frozenset({"weekday", "dow", "dayofweek"})


def guess_unit(name: str, column: ColumnProfile, *, now_year: int) -> UnitGuess:
    """The unit of a numeric column, from its name first, then its values; sure only when the name says it."""
    words = tokens(name)
    found = _calendar(words, column, now_year) or _coordinate(words, column) or _named(words)
    if found is not None:
        return found
    for test in (_temperature, _rain, _pressure, _humidity, _wind, _visibility):
        found = test(words, column)
        if found is not None:
            return found
    if _COUNT & set(words):
        return UnitGuess(
            None,
            f"a count ({'/'.join(sorted(_COUNT & set(words)))} in the name)",
            True,
            domain=Domain(0, None, "a count: never negative"),
        )
    return UnitGuess(None, "nothing in the name or the values names a unit", False)


def natural_domain(words: list[str]) -> str | None:
    joined = "".join(words)
    for part in ("dayofweek", "dayofyear", "dayofmonth", "hourofday", "weekofyear", "minuteofhour"):
        if part in joined:
            return {
                "dayofweek": "weekday",
                "dayofmonth": "day",
                "hourofday": "hour",
                "weekofyear": "week",
                "minuteofhour": "minute",
            }.get(part, part)
    for word in reversed(words):
        if word in _CALENDAR or word in _WEEKDAY or word in ("year", "yr"):
            return "weekday" if word in _WEEKDAY else "year" if word == "yr" else word
    return None


def _calendar(words: list[str], column: ColumnProfile, now_year: int) -> UnitGuess | None:
    part = natural_domain(words)
    if part is None or column.minimum is None or column.maximum is None or not _integral(column):
        return None
    low, high = column.minimum, column.maximum
    if part == "year":
        if not 1000 <= low <= high <= now_year + 1:
            return None
        domain = Domain(min(low, 1900), now_year + 1, f"a year: not after next year ({now_year + 1})")
    elif part == "weekday":
        domain = Domain(0, 6, "a weekday: 0 to 6") if low == 0 else Domain(1, 7, "a weekday: 1 to 7")
    else:
        domain = Domain(*_CALENDAR[part], f"a {part}: {_CALENDAR[part][0]:g} to {_CALENDAR[part][1]:g}")
    if (domain.low is not None and low < domain.low) or (domain.high is not None and high > domain.high):
        return None
    return UnitGuess(None, f"a {part} ({part!r} in the name, values {low:g}..{high:g})", True, domain=domain)


def _coordinate(words: list[str], column: ColumnProfile) -> UnitGuess | None:
    limit = 90 if {"lat", "latitude"} & set(words) else 180 if {"lon", "lng", "long", "longitude"} & set(words) else 0
    if (
        not limit
        or column.minimum is None
        or column.maximum is None
        or abs(column.minimum) > limit
        or abs(column.maximum) > limit
    ):
        return None
    what = "latitude" if limit == 90 else "longitude"
    return UnitGuess(
        "degree",
        f"a {what} in degrees ({what} in the name)",
        True,
        domain=Domain(-limit, limit, f"a {what}: -{limit} to {limit}"),
    )


def _named(words: list[str]) -> UnitGuess | None:
    rain = bool(_RAIN_WORDS & set(words))
    for word in words:
        for spellings, unit in _NAMED:
            if word in spellings:
                return UnitGuess(unit, f"{word!r} in the name", True, rain=rain and unit in _RAIN)
    quantity = (_TEMPERATURE | _RAIN_WORDS | _WIND | _PRESSURE | _HUMIDITY | _VISIBILITY) & set(words)
    if "min" in words and not quantity:  # minutes, or a minimum (temp_min): ask
        return UnitGuess("min", "'min' in the name: minutes, or a minimum?", False)
    last = words[-1] if len(words) > 1 else ""
    if last in _LAST_LETTER and (last not in "cfk" or _TEMPERATURE & set(words)):
        return UnitGuess(_LAST_LETTER[last], f"{last!r} ends the name", True)
    return None


def _temperature(words: list[str], column: ColumnProfile) -> UnitGuess | None:
    if not _TEMPERATURE & set(words) or column.minimum is None or column.maximum is None:
        return None
    low, high, median = column.minimum, column.maximum, _median(column)
    seen = f"values {low:g}..{high:g}, median {median:g}"
    if low > 150:
        return UnitGuess("K", f"a temperature ({seen}: kelvin)", True)
    if high > 60:
        return UnitGuess("degF", f"a temperature ({seen}: above 60, too hot for °C)", high <= 140)
    return UnitGuess(
        "degC", f"a temperature ({seen}: °C; read as °F its median would be {(median - 32) / 1.8:.0f} °C)", high <= 45
    )


def _rain(words: list[str], column: ColumnProfile) -> UnitGuess | None:
    if not _RAIN_WORDS & set(words) or column.maximum is None:
        return None
    high, p95 = column.maximum, column.quantile(0.95) or 0.0
    if high <= 10 and p95 <= 2:
        return UnitGuess("inch", f"a precipitation amount (values up to {high:g}: inches?)", False, rain=True)
    return UnitGuess("mm", f"a precipitation amount (values up to {high:g}: millimetres)", high > 25, rain=True)


def _pressure(words: list[str], column: ColumnProfile) -> UnitGuess | None:
    median = _median(column)
    if not _PRESSURE & set(words) or math.isnan(median):
        return None
    for unit, low, high in (("hPa", 850, 1090), ("inHg", 25, 32.5), ("kPa", 85, 109), ("Pa", 85_000, 109_000)):
        if low <= median <= high:
            return UnitGuess(unit, f"a pressure (median {median:g}: {unit})", True)
    return UnitGuess(None, f"a pressure, median {median:g}: no usual unit fits", False)


def _humidity(words: list[str], column: ColumnProfile) -> UnitGuess | None:
    if not _HUMIDITY & set(words) or column.maximum is None:
        return None
    if column.maximum <= 1:
        return UnitGuess("fraction", f"a humidity (values up to {column.maximum:g}: a fraction)", True)
    return UnitGuess("percent", f"a humidity (values up to {column.maximum:g}: percent)", column.maximum <= 100)


def _wind(words: list[str], column: ColumnProfile) -> UnitGuess | None:
    median = _median(column)
    if not _WIND & set(words) or math.isnan(median):
        return None
    unit = "m/s" if median < 7 else "mph" if median < 16 else "km/h"
    return UnitGuess(unit, f"a speed (median {median:g}: {unit}? m/s, mph and km/h all fit a wind)", False)


def _visibility(words: list[str], column: ColumnProfile) -> UnitGuess | None:
    if not _VISIBILITY & set(words) or column.maximum is None:
        return None
    unit = "mi" if column.maximum <= 10 else "km"
    return UnitGuess(unit, f"a visibility (up to {column.maximum:g}: {unit}?)", False)


def _median(column: ColumnProfile) -> float:
    median = column.quantile(0.5)
    return float("nan") if median is None else median


def _integral(column: ColumnProfile) -> bool:
    if column.logical_type == "integer":
        return True
    return all(v is not None and float(v).is_integer() for v in (column.minimum, column.maximum)) and all(
        float(v).is_integer() for _, v in column.quantiles
    )
