"""Chaos drills: seeded injectors of silent data failures, game-day inject/revert, and the drill scoreboard.

`chaos.registry` holds the scenarios (`chaos.scenarios` registers the demo estate's), `chaos.gameday`
corrupts a real workspace and puts its exact bytes back, `chaos.drill` runs every scenario in a
throwaway estate through the real loop, and `chaos.report` writes the scoreboard.
"""

from __future__ import annotations

__all__: list[str] = []
