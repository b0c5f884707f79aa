"""The chaos package's errors: KintsugiError subclasses, so every front door prints one line and exits 2."""
from __future__ import annotations

from controlplane.errors import KintsugiError

__all__ = ["ChaosError", "UnknownScenario", "InjectionError", "GameDayError"]


class ChaosError(KintsugiError):
    code = "chaos"


class UnknownScenario(ChaosError):
    code = "chaos_unknown_scenario"


class InjectionError(ChaosError):
    """A scenario cannot act on this table or estate (a column it needs is missing, a unit is undeclared...)."""

    code = "chaos_injection"


class GameDayError(ChaosError):
    """A game-day injection is already active, or there is none to revert."""

    code = "chaos_game_day"
