"""Tests are named by the mechanism they test, never by the dataset, place or season they were first seen on: no
test file, test function, test class or fixture name under tests/ carries such a word; nor does any line of the
guard's code, comments or messages (guard/)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
# a name's word (split on "_") that starts with one of these is a dataset, place or season word
WORDS = (
    "seattle", "greensboro", "pnw", "portland", "francisco", "tmy", "weather", "city", "cities", "airport",
    "flight", "winter", "summer", "spring", "autumn", "december", "christmas", "holiday", "season",
    "dewpoint", "humid", "rain", "snow",
)  # fmt: skip


def _offends(name: str) -> bool:
    return any(part.startswith(WORDS) for part in re.split(r"[_\W]+", name.lower()) if part)


def _is_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Attribute) and target.attr == "fixture") or (
            isinstance(target, ast.Name) and target.id == "fixture"
        ):
            return True
    return False


def _names() -> set[str]:
    """'path' for each test file and 'path::name' for each test function, test class and fixture under tests/."""
    found = set()
    for path in sorted(TESTS.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        if path.name.startswith("test_"):
            found.add(where)
        for node in ast.walk(ast.parse(path.read_text(), where)):
            if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                found.add(f"{where}::{node.name}")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.name.startswith("test") or _is_fixture(node):
                    found.add(f"{where}::{node.name}")
    return found


def _offenders() -> list[str]:
    return sorted(name for name in _names() if _offends(name.rpartition("::")[2] or name))


# issue 28 part 6 renames these to the mechanism they test


def test_the_name_check_reads_words_not_letters():
    assert _offends("test_a_swap_in_a_humid_week") and _offends("seattle_december") and _offends("rainy")
    assert not _offends("test_training_keeps_the_strain") and not _offends("test_a_window_of_the_column")


def test_no_test_name_carries_a_dataset_place_or_calendar_word():
    assert _offenders() == []


GUARD = ROOT / "guard"
# contract vocabulary the guard still reads (a unit's older spelling, `guard.units.LEGACY_SPELLINGS`), not a rule
CONTRACT_SPELLINGS = ("mm_rain", "in_rain")


def _guard_offenders() -> list[str]:
    found = []
    for path in sorted(GUARD.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for spelling in CONTRACT_SPELLINGS:
                line = line.replace(spelling, "")
            if any(part.startswith(WORDS) for part in re.split(r"[_\W\d]+", line.lower()) if part):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_no_guard_line_carries_a_dataset_place_or_calendar_word():
    assert _guard_offenders() == []
