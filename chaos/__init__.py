"""Chaos drills: seeded injectors of silent data failures, game-day inject/revert, and the drill scoreboard.

`chaos.failures.registry` holds the scenarios (`chaos.failures.scenarios` registers the demo estate's), `chaos.gameday.corrupt`
corrupts a real workspace and puts its exact bytes back, `chaos.drill.demo` runs every scenario in a
throwaway estate through the real loop, and `chaos.drill.report` writes the scoreboard.
"""

from __future__ import annotations

__all__: list[str] = []
