"""The pipeline drill's families of failures: `ours` (the injectors of `chaos.failures.generic`, written here) and
`badgers` (`chaos.failures.thirdparty`: a library nobody here wrote), scored apart; a scenario is found by name in either."""

from __future__ import annotations

from typing import Callable

from chaos.errors import UnknownScenario
from chaos.failures.generic import GENERIC_NAMES, Skipped, generic_scenarios
from chaos.failures.registry import Scenario
from chaos.failures.thirdparty import BADGERS_NAMES, badgers_scenarios
from controlplane.spec import PipelineSpec
from guard.contract import Contract

__all__ = ["FAMILIES", "NAMES", "family_scenarios", "scenario_named"]

Built = tuple[tuple[Scenario, ...], tuple[Skipped, ...]]
FAMILIES: dict[str, tuple[tuple[str, ...], Callable[[Contract, PipelineSpec], Built]]] = {
    "ours": (GENERIC_NAMES, generic_scenarios),
    "badgers": (BADGERS_NAMES, badgers_scenarios),
}
NAMES = {family: names for family, (names, _) in FAMILIES.items()}


def family_scenarios(family: str, contract: Contract, spec: PipelineSpec) -> Built:
    """The family's scenarios that apply to this pipeline, and those skipped with why."""
    if family not in FAMILIES:
        raise UnknownScenario(f"unknown family of failures {family!r}", f"use one of: {', '.join(FAMILIES)}")
    return FAMILIES[family][1](contract, spec)


def scenario_named(contract: Contract, spec: PipelineSpec, name: str) -> Scenario:
    """The scenario of this name in whichever family holds it, or one line saying why it does not apply."""
    family = next((f for f, names in NAMES.items() if name in names), None)
    if family is None:
        every = [n for names in NAMES.values() for n in names]
        raise UnknownScenario(f"unknown pipeline drill scenario {name!r}", f"use one of: {', '.join(every)}")
    built, skipped = family_scenarios(family, contract, spec)
    found = next((s for s in built if s.name == name), None)
    if found is not None:
        return found
    why = next((s.why for s in skipped if s.name == name), None)
    raise UnknownScenario(
        f"scenario {name!r} does not apply to pipeline {spec.name!r}" + (f": {why}" if why else ""),
        f"use one of: {', '.join(s.name for s in built)}",
    )
