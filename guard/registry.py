"""The plain registry of checks: a dict keyed by check name; registering a name twice is an error.

A check yields its findings and, beside them, the closest calls of the thresholds it compared (`ClosestCall`: the
statistic and the policy field, on every batch, whether it crossed or not); the runner keeps them apart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding

__all__ = ["Check", "RegisteredCheck", "CHECKS", "register"]

Check = Callable[[GuardContext], Iterable[Finding | ClosestCall]]


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
