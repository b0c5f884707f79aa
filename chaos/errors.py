"""The chaos package's errors: each on a branch of the project's one tree (controlplane.errors), so every front
door maps it like any other error; their codes start with `chaos_`."""

from __future__ import annotations

from controlplane.errors import Conflict, InputError, NotFound, WorkspaceError

__all__ = ["UnknownScenario", "InjectionError", "GameDayError", "DrillFailed"]


class UnknownScenario(NotFound):
    code = "chaos_unknown_scenario"


class InjectionError(InputError):
    """A scenario cannot act on this table or estate (a column it needs is missing, a unit is undeclared...)."""

    code = "chaos_injection"


class GameDayError(Conflict):
    """A game-day injection is already active, or there is none to revert."""

    code = "chaos_game_day"


class DrillFailed(WorkspaceError):
    """A drill's throwaway estate could not be built or read."""

    code = "chaos_drill"
