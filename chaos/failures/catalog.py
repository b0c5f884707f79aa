"""Every scenario a drill can run: the registry with the demo estate's scenarios registered."""

from __future__ import annotations

import chaos.failures.scenarios  # noqa: F401  (registers the demo estate's scenarios)
from chaos.failures.registry import SCENARIOS, Scenario, lookup

__all__ = ["get_scenario", "SCENARIOS"]


def get_scenario(name: str) -> Scenario:
    return lookup(name)
