"""The drill as an HTTP route, added to the API by `kintsugi serve` (the API itself knows nothing of chaos): the
scoreboard it answers with is also kept under the workspace's drills/, where the operator console reads it."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

from fastapi import APIRouter
from pydantic import BaseModel, Field

from chaos.drill.report import write_reports
from chaos.drill.service import drill
from controlplane.frontdoor.views import DrillOut
from controlplane.workspace import Workspace

__all__ = ["drill_router", "DrillRequest", "keep_scoreboard"]


class DrillRequest(BaseModel):
    scenarios: Optional[list[str]] = Field(None, max_length=100, description="Scenario names (default: all)")
    seeds: int = Field(1, ge=1, le=10)
    controls: int = Field(2, ge=0, le=50, description="Clean control runs")
    sweep_seeds: int = Field(0, ge=0, le=10)


def drill_router(ws: Workspace) -> APIRouter:
    router = APIRouter()

    @router.post("/drills", response_model=DrillOut, tags=["drills"])
    def run_drill(body: Optional[DrillRequest] = None) -> Any:
        """A chaos drill in throwaway estates (never this workspace's stores); answers with the scoreboard when
        done, and keeps it under the workspace's drills/ for the operator console (GET /drills/latest)."""
        body = body or DrillRequest()
        board = drill(body.scenarios, body.seeds, body.controls, body.sweep_seeds)
        keep_scoreboard(ws, board)
        return {"drill": board}

    return router


def keep_scoreboard(ws: Workspace, board: dict[str, Any], now: datetime | None = None) -> Path:
    """The drill's reports (`chaos.drill.report.write_reports`) in a new folder under `<workspace>/drills/`, named by
    the UTC instant it is kept at; returns the folder."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%dT%H%M%S%fZ")
    folder = ws.drills / stamp
    write_reports(board, folder)
    return folder
