"""The temporal join: what DataHub history says about a set of datasets at one instant."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from datahub.metadata import schema_classes as s

from controlplane.datahub.port import MetadataPort

__all__ = [
    "IncidentWindow",
    "incident_windows",
    "incidents_active_at",
    "failing_assertions_at",
    "health_at",
    "unhealed_at",
]


@dataclass(frozen=True)
class IncidentWindow:
    urn: str
    dataset: str
    title: str
    active_from_ms: int
    resolved_at_ms: int | None  # None: still ACTIVE

    def covers(self, at_ms: int) -> bool:
        return self.active_from_ms <= at_ms and (self.resolved_at_ms is None or at_ms < self.resolved_at_ms)


def incident_windows(port: MetadataPort, urn: str) -> list[IncidentWindow]:
    """Every stretch an incident was ACTIVE, from its recorded versions (a reopened incident has several)."""
    versions = port.history(urn, s.IncidentInfoClass)
    if not versions:
        return []
    windows: list[tuple[int, int | None]] = []
    opened: int | None = None
    for info in versions:
        active = info.status.state == s.IncidentStateClass.ACTIVE
        if active and opened is None:
            opened = info.startedAt if info.startedAt is not None and not windows else info.status.lastUpdated.time
        elif not active and opened is not None:
            windows.append((opened, info.status.lastUpdated.time))
            opened = None
    if opened is not None:
        windows.append((opened, None))
    last = versions[-1]
    return [IncidentWindow(urn, d, last.title or "", start, end) for start, end in windows for d in last.entities]


def incidents_active_at(port: MetadataPort, datasets: set[str], at_ms: int) -> list[IncidentWindow]:
    found: list[IncidentWindow] = []
    for urn in port.urns("incident"):
        found.extend(w for w in incident_windows(port, urn) if w.dataset in datasets and w.covers(at_ms))
    return found


def failing_assertions_at(port: MetadataPort, datasets: set[str], at_ms: int) -> list[dict[str, str]]:
    """Assertions on `datasets` whose latest run at `at_ms` had failed."""
    failing = []
    for urn in port.urns("assertion"):
        info = port.aspect(urn, s.AssertionInfoClass)
        if info is None or info.entityUrn not in datasets:
            continue
        event = port.aspect(urn, s.AssertionRunEventClass, as_of_ms=at_ms + 1)
        if event and event.result and event.result.type == s.AssertionResultTypeClass.FAILURE:
            failing.append(
                {
                    "assertion": urn,
                    "dataset": info.entityUrn,
                    "check": (info.customProperties or {}).get("check", ""),
                    "column": (info.customProperties or {}).get("column", ""),
                    "run": event.runId,
                }
            )
    return failing


def health_at(port: MetadataPort, datasets: set[str], at_ms: int) -> dict[str, list[dict[str, object]]]:
    return {
        "incidents": [asdict(w) for w in incidents_active_at(port, datasets, at_ms)],
        "failing_assertions": failing_assertions_at(port, datasets, at_ms),
    }


def unhealed_at(health: dict[str, list[dict[str, Any]]], feature_table: str, healed: list[str]) -> list[str]:
    """Incidents ACTIVE at the instant that the run did not heal, and failing upstream assertions.

    The feature table's own assertions are this guard's: the guard on the trained data speaks for them.
    """
    incidents = [str(i["urn"]) for i in health["incidents"] if i["urn"] not in healed]
    assertions = [str(a["assertion"]) for a in health["failing_assertions"] if a["dataset"] != feature_table]
    return sorted(set(incidents)) + sorted(set(assertions))
