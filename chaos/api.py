"""The drill as an HTTP route, added to the API by `kintsugi serve` (the API itself knows nothing of chaos)."""

from __future__ import annotations

from typing import Any, Optional

from fastapi import APIRouter
from pydantic import BaseModel, Field

from chaos.service import drill
from controlplane.frontdoor.views import DrillOut
from controlplane.workspace import Workspace

__all__ = ["drill_router", "DrillRequest"]


class DrillRequest(BaseModel):
    scenarios: Optional[list[str]] = Field(None, max_length=100, description="Scenario names (default: all)")
    seeds: int = Field(1, ge=1, le=10)
    controls: int = Field(2, ge=0, le=50, description="Clean control runs")
    sweep_seeds: int = Field(0, ge=0, le=10)


def drill_router(ws: Workspace) -> APIRouter:
    router = APIRouter()

    @router.post("/drills", response_model=DrillOut, tags=["drills"])
    def run_drill(body: Optional[DrillRequest] = None) -> Any:
        """A chaos drill in throwaway estates (never this workspace); answers with the scoreboard when done."""
        body = body or DrillRequest()
        return {"drill": drill(body.scenarios, body.seeds, body.controls, body.sweep_seeds)}

    return router
