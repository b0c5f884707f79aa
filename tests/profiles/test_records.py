"""One helper turns frozen dataclasses into JSON-able dicts and back by their annotations; a record that does not
fit is refused with the field named."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

import pytest

from profiles.records import RecordError, from_record, to_record


class Colour(str, Enum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Inner:
    name: str
    at: int | None = None


@dataclass(frozen=True)
class Outer:
    colour: Colour
    inners: tuple[Inner, ...]
    key: tuple[str, str]
    path: Path
    score: float
    evidence: dict[str, object] = field(default_factory=dict)
    note: str = ""
    counts: dict[str, float] = field(default_factory=dict)
    sizes: tuple[int, ...] = ()
    names: list[str] = field(default_factory=list)


OUTER = Outer(
    Colour.BLUE,
    (Inner("a", 1), Inner("b")),
    ("x", "y"),
    Path("runs/r"),
    2,
    {"rows": [1, 2]},
    counts={"a": 1.5, "b": 2},
    sizes=(3, 4),
    names=["p", "q"],
)


def test_a_dataclass_round_trips_through_plain_json_values():
    data = to_record(OUTER)
    assert data == {
        "colour": "blue",
        "inners": [{"name": "a", "at": 1}, {"name": "b", "at": None}],
        "key": ["x", "y"],
        "path": "runs/r",
        "score": 2,
        "evidence": {"rows": [1, 2]},
        "note": "",
        "counts": {"a": 1.5, "b": 2},
        "sizes": [3, 4],
        "names": ["p", "q"],
    }
    order = ["colour", "inners", "key", "path", "score", "evidence", "note", "counts", "sizes", "names"]
    assert list(data) == order  # declaration order
    assert from_record(Outer, data) == OUTER


def test_a_missing_field_takes_its_default_and_omitted_fields_are_not_written():
    data = to_record(OUTER, omit=("note",))
    assert "note" not in data and from_record(Outer, data) == OUTER


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"colour": "green"}, "Outer.colour: 'green' is not one of ['red', 'blue']"),
        ({"inners": [{"name": 3}]}, "Outer.inners[0].name: expected str, got 3"),
        ({"key": ["x"]}, "Outer.key: expected 2 items, got ['x']"),
        ({"score": "high"}, "Outer.score: expected float, got 'high'"),
        ({"inners": [{"name": "a", "at": True}]}, "Outer.inners[0].at: expected int, got True"),
        ({"extra": 1}, "Outer: no field 'extra'"),
        # containers of primitives are read in one pass; one that does not fit still names its item
        ({"counts": {"a": 1.0, "b": True}}, "Outer.counts['b']: expected float, got True"),
        ({"sizes": [1, 2.5]}, "Outer.sizes[1]: expected int, got 2.5"),
        ({"names": ["p", None]}, "Outer.names[1]: expected str, got None"),
    ],
)
def test_a_record_that_does_not_fit_is_refused_naming_the_field(change, named):
    with pytest.raises(RecordError) as refused:
        from_record(Outer, {**to_record(OUTER), **change})
    assert str(refused.value) == named


def test_a_required_field_that_is_missing_is_named():
    data = to_record(OUTER)
    del data["path"]
    with pytest.raises(RecordError, match=r"^Outer\.path: missing$"):
        from_record(Outer, data)
