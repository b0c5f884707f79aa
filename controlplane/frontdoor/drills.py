"""The newest drill scoreboard kept in the workspace, read for the operator console.

A drill runs in throwaway estates and never touches the workspace's stores; its reports (`scoreboard.json`, .md,
.png) are kept in a folder of their own under `<workspace>/drills/` by `POST /drills`, or by
`kintsugi drill --out <workspace>/drills/NAME`. The newest `scoreboard.json` (by the time it was written) is the
latest drill. Only the figures the console shows are read: per scenario, detection recall and the share named
right; overall, the clean controls falsely blocked. The scoreboard is the chaos package's format, read as data
(controlplane imports nothing of chaos).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from controlplane.errors import DataError
from controlplane.workspace import Workspace

__all__ = ["ScenarioScore", "DrillBoard", "read_latest_drill", "SCOREBOARD_FILE"]

SCOREBOARD_FILE = "scoreboard.json"


@dataclass(frozen=True)
class ScenarioScore:
    name: str
    recall: float | None  # share of seeds on which the failure was detected
    named: float | None  # share of seeds on which it was named right (kind and column)
    passed: bool  # every seed ended as expected
    expected: str  # the outcome the scenario should have
    outcomes: dict[str, int]  # run status -> seeds


@dataclass(frozen=True)
class DrillBoard:
    folder: str  # workspace-relative
    written_ms: int
    pipeline: str
    now: str  # the instant the drill's runs happened at
    runs: int
    detection_recall: float | None
    localization_rate: float | None
    controls: int
    false_blocks: int  # clean controls the guard blocked
    scenarios: tuple[ScenarioScore, ...]
    failed: tuple[str, ...]


def read_latest_drill(ws: Workspace) -> DrillBoard | None:
    """The newest kept scoreboard; None when no drill was kept. One that does not read is a DataError."""
    found = sorted(ws.drills.glob(f"*/{SCOREBOARD_FILE}"), key=lambda p: (p.stat().st_mtime_ns, p.parent.name))
    if not found:
        return None
    path = found[-1]
    try:
        board = json.loads(path.read_text())
        return _board(ws.rel(path.parent), int(path.stat().st_mtime_ns // 1_000_000), board)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(
            f"the drill scoreboard {ws.rel(path)} cannot be read ({type(exc).__name__}: {exc})",
            f"move {ws.rel(path.parent)} out of drills/, or run a drill again",
        ) from exc


def _board(folder: str, written_ms: int, board: dict[str, Any]) -> DrillBoard:
    drill = board["drill"]
    return DrillBoard(
        folder,
        written_ms,
        str(drill["pipeline"]),
        str(drill["now"]),
        int(drill["runs"]),
        _rate(board["detection_recall"]),
        _rate(board["localization_rate"]),
        int(drill["controls"]),
        int(board["false_alarms"]),
        tuple(_scenario(row) for row in board["scenarios"]),
        tuple(str(name) for name in board["scenarios_failed"]),
    )


def _scenario(row: dict[str, Any]) -> ScenarioScore:
    return ScenarioScore(
        str(row["name"]),
        _mean(row["detected"]),
        _mean(row["localized"]),
        bool(row["passed_all"]),
        str(row["expected"]["outcome"]),
        {str(k): int(v) for k, v in row["outcomes"].items()},
    )


def _mean(stat: Any) -> float | None:
    return None if stat is None else _rate(stat["mean"])


def _rate(value: Any) -> float | None:
    return None if value is None else float(value)
