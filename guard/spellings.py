"""A new spelling of a known value: the same word with a letter slipped, not a new value.

A value the reference never held is news (a new destination, a new product) unless it is a known value written
wrong. It is written wrong when, case aside, it has a known value's length and differs from it in one pair of
neighbouring letters swapped, or in at most one place in four where a letter became another letter, a digit or a
sign (a typo, leetspeak: 'alhpa', '4lpha'). Two places where both characters are digits are a new number, not a
slip ('group 10' beside 'group 11' is a new group); values shorter than `policy.spelling_min_length` are codes,
where one letter makes another code ('LAX', 'LAS').
"""

from __future__ import annotations

from typing import Iterable

from guard.policy import DEFAULT as POLICY

__all__ = ["resembled", "misspelt"]


def misspelt(value: str, known: str, min_length: int = POLICY.spelling_min_length) -> bool:
    """`value` is `known` written wrong (see the module's docstring); False for the same value in any case."""
    a, b = value.casefold(), known.casefold()
    if len(a) != len(b) or len(a) < min_length or a == b:
        return False
    places = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if any(a[i].isdigit() and b[i].isdigit() for i in places):
        return False
    if (
        len(places) == 2
        and places[1] == places[0] + 1
        and a[places[0]] == b[places[1]]
        and a[places[1]] == b[places[0]]
    ):
        return True
    return len(places) <= max(1, len(a) // 4)


def resembled(value: str, known: Iterable[str], min_length: int = POLICY.spelling_min_length) -> str | None:
    """The known value `value` is a misspelling of, when exactly one fits (two: which one is not known)."""
    fits = sorted({k for k in known if misspelt(value, k, min_length)})
    return fits[0] if len(fits) == 1 else None
