"""guard/spellings.py: a known value written wrong, told from a new value."""

from __future__ import annotations

import pytest

from guard.spellings import misspelt, resembled


@pytest.mark.parametrize(
    "value, known",
    [
        ("alhpa", "alpha"),
        ("4lpha", "alpha"),
        ("ch@rlie", "charlie"),
        ("Chralie", "charlie"),
        ("northwset", "northwest"),
    ],
)
def test_a_letter_slipped_two_swapped_or_leetspeak_is_a_misspelling(value: str, known: str) -> None:
    assert misspelt(value, known) and resembled(value, {known, "bravo"}) == known


@pytest.mark.parametrize(
    "value, known",
    [
        ("ALPHA", "alpha"),  # casing: the casing rule's
        ("LAS", "LAX"),  # a code: one letter makes another
        ("group 11", "group 10"),  # a new number
        ("Niger", "Nigeria"),  # another length: another word
        ("delta", "alpha"),  # more than one place in four
        ("LAXX", "LAX"),  # a short code: only a letter written as digits or signs slips
        ("M0n", "MON1"),
        ("2024-05", "2024-06"),
    ],
)
def test_a_new_value_is_not_a_misspelling(value: str, known: str) -> None:
    assert not misspelt(value, known)


def test_a_slip_that_fits_two_known_values_names_neither() -> None:
    assert resembled("mate", {"male", "mane"}) is None
    assert resembled("mate", {"male", "bike"}) == "male"
