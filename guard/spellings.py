"""A new spelling of a known value: the same word with a letter slipped, not a new value.

A value the reference never held is news (a new destination, a new product) unless it is a known value written
wrong. It is written wrong when, case aside, it differs from one known value by two neighbouring letters swapped,
or by at most one edit in four letters of it (at least one), where an edit is a letter inserted or left out, a
letter become another letter, or a letter written as digits or signs (leetspeak: '4' or '/-\\' for 'a', counted as
the one letter it stands for): 'alhpa', '4lpha', 'ch@rlie', '|3ravo'. Never a slip: a digit become another digit
('group 11' beside 'group 10' is a new group), or another length by more than the edits allow ('Niger' beside
'Nigeria'). A value shorter than `policy.spelling_min_length` is a code, where one letter makes another code ('LAS'
beside 'LAX'): only a letter written as digits or signs is a slip there ('M0n' for 'Mon').
"""

from __future__ import annotations

from difflib import SequenceMatcher
from typing import Iterable

from guard.policy import DEFAULT as POLICY

__all__ = ["resembled", "misspelt"]


def misspelt(value: str, known: str, min_length: int = POLICY.spelling_min_length) -> bool:
    """`value` is `known` written wrong (see the module's docstring); False for the same value in any case."""
    a, b = value.casefold(), known.casefold()
    if a == b or not b:
        return False
    if _swapped(a, b):
        return len(b) >= min_length
    edits = _edits(b, a)
    if edits is None:
        return False
    cost, signs_only = edits
    if len(b) < min_length:
        return signs_only and cost <= 1
    return cost <= max(1, len(b) // 4)


def _swapped(a: str, b: str) -> bool:
    """Two neighbouring letters of `b` in each other's place."""
    if len(a) != len(b):
        return False
    places = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
    return (
        len(places) == 2
        and places[1] == places[0] + 1
        and a[places[0]] == b[places[1]]
        and a[places[1]] == b[places[0]]
    )


def _edits(known: str, value: str) -> tuple[int, bool] | None:
    """How many letters of `known` were edited into `value`, and whether every edit wrote a letter as digits or
    signs; None where a digit became another digit (a new number, never a slip)."""
    cost, signs_only = 0, True
    for op, i1, i2, j1, j2 in SequenceMatcher(None, known, value, autojunk=False).get_opcodes():
        if op == "equal":
            continue
        was, now = known[i1:i2], value[j1:j2]
        if was and now and any(c.isdigit() for c in was) and any(c.isdigit() for c in now):
            return None
        leet = op == "replace" and was.isalpha() and not any(c.isalpha() for c in now)
        cost += len(was) if leet else max(len(was), len(now))
        signs_only = signs_only and leet
    return cost, signs_only


def resembled(value: str, known: Iterable[str], min_length: int = POLICY.spelling_min_length) -> str | None:
    """The known value `value` is a misspelling of, when exactly one fits (two: which one is not known)."""
    fits = sorted({k for k in known if misspelt(value, k, min_length)})
    return fits[0] if len(fits) == 1 else None
