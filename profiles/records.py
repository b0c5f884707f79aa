"""Frozen dataclasses to JSON-able dicts and back, by their annotations: one helper for every mechanical pair.

Most classes just inherit `Record` for their `to_dict`/`from_dict`. `to_record(value)` gives a dict of the dataclass's fields in declaration order: enums as their values, tuples as
lists, paths as text, nested dataclasses as dicts (through their own `to_dict` where they have one), every other
value as it is (a `dict[str, Any]` of evidence is already JSON's). `from_record(cls, data)` reads one back:
each field converted by its annotation (primitives, enums, paths, `X | None`, `tuple[X, ...]`, `list[X]`,
`dict[str, X]`, nested dataclasses, through their `from_dict` where they have one), a missing field taking its
default. A field that is missing without a default, of the wrong type, or not a field at all is a `RecordError`
(a ValueError) that names it: `Pinned.table_hash: expected str, got 3`.

Types only: this module reads no file, so every layer above `profiles` may use it.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar, Union

__all__ = ["Record", "RecordError", "to_record", "from_record"]

T = TypeVar("T")


class RecordError(ValueError):
    """A record that does not fit its dataclass: the message names the field and what was wrong."""


class Record:
    """A base for dataclasses whose record is just their fields: `to_dict` and `from_dict` by this module.
    `_omit` names fields not persisted (derived, or too large for the record)."""

    _omit: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return to_record(self, omit=self._omit)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        return from_record(cls, data)


def to_record(value: Any, *, omit: tuple[str, ...] = ()) -> dict[str, Any]:
    """The dataclass `value` as a JSON-able dict of its fields (but those in `omit`), in declaration order."""
    return {f.name: _out(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in omit}


_AS_IS = frozenset({int, float, str, bool, type(None)})  # written as they are (an exact type: a subclass is looked at)


def _out(value: Any) -> Any:
    if type(value) in _AS_IS:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        own = getattr(value, "to_dict", None)
        return own() if callable(own) else to_record(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_out(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _plain(value: Any) -> Any:
    """Untyped content (evidence, parameters) as `dataclasses.asdict` gives it: dataclasses by their fields."""
    if type(value) in _AS_IS:
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def from_record(cls: type[T], data: Any, *, where: str = "") -> T:
    """An instance of the dataclass `cls` from `data`, each field checked and converted by its annotation."""
    where = where or cls.__name__
    if not isinstance(data, Mapping):
        raise RecordError(f"{where}: expected an object, got {_shown(data)}")
    fields, hints = _fields(typing.cast(Any, cls))
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise RecordError(f"{where}: no field {', '.join(map(repr, unknown))}")
    values = {}
    for name, field in fields.items():
        if name in data:
            values[name] = _in(hints[name], data[name], f"{where}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise RecordError(f"{where}.{name}: missing")
    return cls(**values)


@cache
def _fields(cls: type) -> tuple[dict[str, dataclasses.Field[Any]], dict[str, Any]]:
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    hints = typing.get_type_hints(cls)
    return fields, {name: hints[name] for name in fields}


@cache
def _shape(kind: Any) -> tuple[Any, tuple[Any, ...]]:
    return typing.get_origin(kind), typing.get_args(kind)


# A primitive's values read as they are, by their exact type: a container of them is checked in one pass, and only
# one that fails the pass is read again item by item, for the message naming the item (a subclass, an int for a
# float but no bool, is accepted there as `_scalar` accepts it).
_PRIMITIVE: dict[Any, tuple[type, ...]] = {float: (float, int), int: (int,), str: (str,), bool: (bool,)}


def _all_primitive(kind: Any, values: Any) -> bool:
    exact = _PRIMITIVE.get(kind)
    return exact is not None and all(type(v) in exact for v in values)


def _in(kind: Any, value: Any, where: str) -> Any:
    origin, args = _shape(kind)
    if kind is Any or kind is object:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise RecordError(f"{where}: no reading of {kind!r}")
        return _in(inner[0], value, where)
    if origin is tuple:
        items = _sequence(value, where)
        if len(args) == 2 and args[1] is Ellipsis:
            if _all_primitive(args[0], items):
                return tuple(items)
            return tuple(_in(args[0], v, f"{where}[{i}]") for i, v in enumerate(items))
        if len(items) != len(args):
            raise RecordError(f"{where}: expected {len(args)} items, got {_shown(value)}")
        return tuple(_in(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, items)))
    if origin is list:
        items = _sequence(value, where)
        if not args or args[0] is Any or _all_primitive(args[0], items):
            return items
        return [_in(args[0], v, f"{where}[{i}]") for i, v in enumerate(items)]
    if origin in (dict, Mapping) or kind is dict:
        if not isinstance(value, Mapping):
            raise RecordError(f"{where}: expected an object, got {_shown(value)}")
        values = args[1] if args else Any
        if values is Any or _all_primitive(values, value.values()):
            return dict(value)
        return {k: _in(values, v, f"{where}[{k!r}]") for k, v in value.items()}
    return _scalar(kind, value, where)


def _scalar(kind: Any, value: Any, where: str) -> Any:
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        reader = getattr(kind, "from_dict", None)  # its own reading (legacy shapes, formats), where it has one
        if callable(reader):
            try:
                return reader(value)
            except (KeyError, TypeError) as exc:
                raise RecordError(f"{where}: {type(exc).__name__}: {exc}") from exc
        return from_record(kind, value, where=where)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            raise RecordError(f"{where}: {_shown(value)} is not one of {[m.value for m in kind]}") from None
    if kind is Path:
        if not isinstance(value, str):
            raise RecordError(f"{where}: expected a path, got {_shown(value)}")
        return Path(value)
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind in (str, bool):
        ok = isinstance(value, kind)
    else:
        raise RecordError(f"{where}: no reading of {kind!r}")
    if not ok:
        raise RecordError(f"{where}: expected {kind.__name__}, got {_shown(value)}")
    return value


def _sequence(value: Any, where: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise RecordError(f"{where}: expected a list, got {_shown(value)}")
    return list(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
