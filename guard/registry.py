"""The plain registry of checks: a dict keyed by check name; registering a name twice is an error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from guard.context import GuardContext
from guard.findings import Finding

__all__ = ["Check", "RegisteredCheck", "CHECKS", "register"]

Check = Callable[[GuardContext], Iterable[Finding]]


@dataclass(frozen=True)
class RegisteredCheck:
    name: str
    run: Check
    per_column: bool
    needs_reference: bool = False


CHECKS: dict[str, RegisteredCheck] = {}


def register(name: str, *, per_column: bool = True, needs_reference: bool = False) -> Callable[[Check], Check]:
    """Decorator: add a check to the registry under `name`."""

    def decorate(fn: Check) -> Check:
        if name in CHECKS:
            raise ValueError(f"check {name!r} is already registered")
        CHECKS[name] = RegisteredCheck(name, fn, per_column, needs_reference)
        return fn

    return decorate
