"""Units the guard can name, as affine maps to a base unit per dimension.

`value_in_base = value * factor + offset`. Pure data plus two pure helpers.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Unit", "UNITS", "conversion", "candidates_for"]


@dataclass(frozen=True)
class Unit:
    name: str
    dimension: str
    factor: float
    offset: float = 0.0


_TABLE = [
    ("m", "length", 1.0), ("km", "length", 1000.0), ("cm", "length", 0.01), ("mm", "length", 0.001),
    ("mi", "length", 1609.344), ("ft", "length", 0.3048), ("yd", "length", 0.9144),
    ("kg", "mass", 1.0), ("g", "mass", 0.001), ("lb", "mass", 0.45359237), ("oz", "mass", 0.028349523125),
    ("s", "time", 1.0), ("ms", "time", 0.001), ("min", "time", 60.0), ("h", "time", 3600.0),
    ("fraction", "ratio", 1.0), ("percent", "ratio", 0.01),
    ("usd", "currency", 1.0), ("usd_cents", "currency", 0.01),
    ("eur", "currency-eur", 1.0), ("eur_cents", "currency-eur", 0.01),
    ("mm_rain", "precipitation", 1.0), ("in_rain", "precipitation", 25.4),
]

UNITS: dict[str, Unit] = {name: Unit(name, dim, factor) for name, dim, factor in _TABLE}
UNITS["K"] = Unit("K", "temperature", 1.0, 0.0)
UNITS["C"] = Unit("C", "temperature", 1.0, 273.15)
UNITS["F"] = Unit("F", "temperature", 5.0 / 9.0, 273.15 - 32.0 * 5.0 / 9.0)


def conversion(declared: str, actual: str) -> tuple[float, float]:
    """(scale, offset) such that value_in_actual = value_in_declared * scale + offset."""
    src, dst = UNITS[declared], UNITS[actual]
    if src.dimension != dst.dimension:
        raise ValueError(f"cannot convert {declared} ({src.dimension}) to {actual} ({dst.dimension})")
    return src.factor / dst.factor, (src.offset - dst.offset) / dst.factor


def candidates_for(declared: str) -> list[str]:
    """Every other unit of the declared unit's dimension, in a stable order."""
    dimension = UNITS[declared].dimension
    return sorted(u.name for u in UNITS.values() if u.dimension == dimension and u.name != declared)
