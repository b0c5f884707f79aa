"""Scenarios in a plain registry: a dict keyed by scenario name; registering a name twice is an error.

A scenario is one silent failure: an injector (of the feature table, or of its upstreams' metadata in
DataHub), its default magnitude and row selection, the magnitudes a sweep tries, and what the guard
should make of it — the finding kind, the column (or upstream) it names, and whether an allowlisted
playbook should heal it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pandas as pd

from chaos.errors import UnknownScenario
from chaos.failures.selection import Selection, select_rows
from controlplane.datahub.port import AspectWrite, MetadataPort
from guard.contract import Contract
from guard.findings import Finding
from guard.kinds import FindingKind

__all__ = [
    "Target",
    "Injected",
    "UpstreamTarget",
    "UpstreamInjected",
    "Scenario",
    "TableInjector",
    "UpstreamInjector",
    "SCENARIOS",
    "register",
    "lookup",
    "scenario_rng",
]


@dataclass(frozen=True)
class Target:
    """What one table injection acts on, and the seeded generator it draws from."""

    column: str | None
    magnitude: float
    share: float  # share of rows to corrupt (the magnitude itself when the magnitude is a share)
    selection: Selection
    contract: Contract
    rng: np.random.Generator = field(compare=False)

    def rows(self, frame: pd.DataFrame) -> np.ndarray:
        return select_rows(frame, self.share, self.selection, self.column, self.rng)


@dataclass
class Injected:
    """The corrupted table and the ground truth of what was corrupted, over the clean table's rows."""

    frame: pd.DataFrame
    cells: dict[str, np.ndarray]  # clean column name -> mask of the clean rows whose value was corrupted
    rows_added: int = 0  # rows appended (a duplicate load)
    removed: np.ndarray | None = None  # mask of the clean rows removed (a partial load)

    @property
    def corrupted_cells(self) -> int:
        return int(sum(int(mask.sum()) for mask in self.cells.values()))


@dataclass(frozen=True)
class UpstreamTarget:
    upstream: str
    magnitude: float
    at_ms: int  # the instant the write is stamped with


@dataclass(frozen=True)
class UpstreamInjected:
    """What a metadata injection wrote, and the aspects that undo it (for `chaos revert`)."""

    written: list[AspectWrite]
    undo: list[AspectWrite]
    summary: str


TableInjector = Callable[[pd.DataFrame, Target], Injected]
UpstreamInjector = Callable[[MetadataPort, UpstreamTarget], UpstreamInjected]


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    kind: FindingKind  # the finding the guard should raise
    columns: tuple[str, ...]  # any of these localizes it; () for a dataset-level finding
    healable: bool  # an allowlisted playbook should heal it
    magnitude: float  # the default magnitude
    magnitude_unit: str  # what the magnitude measures
    sweep: tuple[float, ...] = ()  # magnitudes a sweep tries, smallest first
    table: TableInjector | None = None
    upstream_injector: UpstreamInjector | None = None
    upstream: str | None = None
    selection: Selection = Selection()
    share: float = 1.0  # rows corrupted when the magnitude is not itself a share
    magnitude_is_share: bool = False
    # the rows cannot be corrected (nulls, sentinels): a heal quarantines them, never fills them in, and the
    # incident stays open whatever the run does with the rows that pass
    quarantines: bool = False

    @property
    def column(self) -> str | None:
        return self.columns[0] if self.columns else None

    @property
    def side(self) -> str:
        return "table" if self.table is not None else "metadata"

    def target(
        self, contract: Contract, seed: int, magnitude: float | None = None, selection: Selection | None = None
    ) -> Target:
        value = self.magnitude if magnitude is None else magnitude
        share = value if self.magnitude_is_share else self.share
        return Target(self.column, value, share, selection or self.selection, contract, scenario_rng(self.name, seed))

    def localizes(self, finding: Finding) -> bool:
        """True when `finding` is the one this scenario should raise, on the right column or upstream."""
        if finding.kind is not self.kind:
            return False
        if self.upstream is not None:
            return finding.params.get("upstream") == self.upstream
        if finding.column is None and finding.params.get("key_columns"):  # a key of several columns, named whole
            return tuple(finding.params["key_columns"]) == tuple(self.columns)
        return finding.column in self.columns if self.columns else finding.column is None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "summary": self.summary,
            "side": self.side,
            "kind": self.kind.value,
            "columns": list(self.columns),
            "upstream": self.upstream,
            "healable": self.healable,
            "quarantines": self.quarantines,
            "magnitude": self.magnitude,
            "magnitude_unit": self.magnitude_unit,
            "selection": self.selection.label(),
            "share": self.share if not self.magnitude_is_share else None,
            "sweep": list(self.sweep),
        }


SCENARIOS: dict[str, Scenario] = {}


def register(scenario: Scenario) -> Scenario:
    if scenario.name in SCENARIOS:
        raise ValueError(f"chaos scenario {scenario.name!r} is already registered")
    if (scenario.table is None) == (scenario.upstream_injector is None):
        raise ValueError(f"chaos scenario {scenario.name!r} needs exactly one of a table or an upstream injector")
    if scenario.quarantines and scenario.healable:
        raise ValueError(
            f"chaos scenario {scenario.name!r} cannot be both healed and quarantined: rows set aside are not corrected"
        )
    SCENARIOS[scenario.name] = scenario
    return scenario


def lookup(name: str) -> Scenario:
    """A registered scenario (`chaos.failures.catalog.get_scenario` makes sure the demo's are registered first)."""
    if name not in SCENARIOS:
        raise UnknownScenario(f"unknown chaos scenario {name!r}", f"use one of: {', '.join(sorted(SCENARIOS))}")
    return SCENARIOS[name]


def scenario_rng(name: str, seed: int) -> np.random.Generator:
    """The generator of one (scenario, seed): stable across processes and Python versions."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])
