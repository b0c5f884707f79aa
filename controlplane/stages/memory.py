"""Memory of failure modes, derived from DataHub: a failure's fingerprint (dataset, kind, column and the
parameters that identify it, such as the unit conversion) is written in its incident's evidence, and the
incidents raised for the same (dataset, kind, column) are a chain DataHub already holds (generation 0, 1, 2...,
`urns.incident_urn`). So a new workspace on the same DataHub remembers too.

A recurrence links to the earlier incidents of its fingerprint, says "seen N times, last healed by ... on ...",
and carries the verified heal of the last one (the heal note of its resolution), which the heal re-uses. A
failure seen `threshold` times within `window_days` is an upstream bug: its priority is raised to CRITICAL and
the owner of the upstream that produces the column (its ownership aspect) is named and assigned.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from controlplane.datahub.datasets import read_owners, read_schema, walk_upstream
from controlplane.datahub.incident_records import Incident, IncidentState, read_incident
from controlplane.datahub.incidents import Recurrence
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import guid, incident_urn
from guard.findings import Finding

__all__ = [
    "Recall",
    "fingerprint",
    "recall",
    "heal_line",
    "read_heal",
    "reuse",
    "reuse_all",
    "memory_fact",
    "resolution_line",
    "upstream_owners",
    "HEAL_MARKER",
    "RECURRING_PRIORITY",
    "THRESHOLD",
    "WINDOW_DAYS",
]

HEAL_MARKER = "heal: "
RECURRING_PRIORITY = 0  # DataHub's CRITICAL
THRESHOLD, WINDOW_DAYS = 3, 30
_DAY_MS = 86_400_000
_IDENTITY = {
    "unit_mismatch": ("declared_unit", "actual_unit", "scale", "offset"),
    "column_renamed": ("mapping",),
    "type_changed": ("target_type",),
    "category_casing": ("mapping",),
}


def fingerprint(finding: Finding) -> str:
    """The failure mode: dataset, kind, column and the parameters that identify it (e.g. m -> km, x1000)."""
    params = {k: finding.params.get(k) for k in _IDENTITY.get(finding.kind.value, ())}
    return guid(
        {
            "dataset": finding.dataset,
            "kind": finding.kind.value,
            "column": finding.column or "",
            "params": json.dumps(params, sort_keys=True, default=str),
        }
    )


def heal_line(run_id: str, steps: list[dict[str, Any]], params: dict[str, Any]) -> str:
    """The machine-readable line a heal's resolution note ends with: who healed, with which verified steps."""
    return HEAL_MARKER + json.dumps(
        {"run": run_id, "steps": steps, "finding_params": params}, sort_keys=True, default=str
    )


def read_heal(message: str | None) -> dict[str, Any] | None:
    for line in reversed((message or "").splitlines()):
        if line.startswith(HEAL_MARKER):
            try:
                found = json.loads(line[len(HEAL_MARKER) :])
            except ValueError:
                return None
            return found if isinstance(found, dict) else None
    return None


@dataclass(frozen=True)
class Recall:
    fingerprint: str
    earlier: tuple[str, ...]  # the earlier incidents of this failure mode, oldest first
    seen: int  # times seen, this one included
    in_window: int
    healed_by: str | None  # the run that healed the last one
    healed_on_ms: int | None
    heal: dict[str, Any] | None  # its verified heal: steps and the finding's parameters
    owners: tuple[str, ...]  # the upstream owners (named when recurring)
    recurring: bool

    @property
    def summary(self) -> str:
        if not self.earlier:
            return "first seen"
        healed = (
            f", last healed by run {self.healed_by} on {_day(self.healed_on_ms)}"
            if self.healed_by
            else ", never healed"
        )
        return f"seen {self.seen} times{healed}"

    def recurrence(self) -> Recurrence:
        evidence: dict[str, Any] = {
            "fingerprint": self.fingerprint,
            "seen": self.seen,
            "seen_before": list(self.earlier),
        }
        lines = []
        if self.earlier:
            lines.append(f"Memory: {self.summary}. Earlier: {', '.join(self.earlier)}.")
            evidence.update(last_healed_by=self.healed_by, last_healed_on_ms=self.healed_on_ms)
        if self.heal:
            evidence["reused_heal"] = self.heal
            lines.append(
                "The verified heal of the last occurrence is re-used: "
                + "; ".join(f"{st.get('playbook')} {st.get('params')}" for st in self.heal.get("steps", []))
            )
        if self.recurring:
            owners = ", ".join(self.owners) or "no owner recorded"
            evidence["upstream_owners"] = list(self.owners)
            lines.append(
                f"Recurring: {self.in_window} times in {WINDOW_DAYS} days. A recurring heal is an upstream "
                f"bug: fix it at the source (owner: {owners})."
            )
        return Recurrence(
            evidence,
            tuple(lines),
            RECURRING_PRIORITY if self.recurring else None,
            self.owners if self.recurring else (),
        )


def _day(at_ms: int | None) -> str:
    return "?" if at_ms is None else datetime.fromtimestamp(at_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")


def _chain(port: MetadataPort, finding: Finding) -> list[Incident]:
    found, generation = [], 0
    while (
        incident := read_incident(port, incident_urn(finding.dataset, finding.kind.value, finding.column, generation))
    ) is not None:
        found.append(incident)
        generation += 1
    return found


def recall(
    port: MetadataPort, finding: Finding, now_ms: int, *, threshold: int = THRESHOLD, window_days: int = WINDOW_DAYS
) -> Recall:
    """What DataHub remembers of this failure mode (the ACTIVE incident it would reuse is not "earlier")."""
    mode = fingerprint(finding)
    earlier = [
        incident
        for incident in _chain(port, finding)
        if incident.state == IncidentState.RESOLVED and incident.evidence.get("fingerprint") == mode
    ]
    since = now_ms - window_days * _DAY_MS
    in_window = 1 + sum(1 for incident in earlier if incident.created_ms >= since)
    heal = next((h for incident in reversed(earlier) if (h := read_heal(incident.status.message))), None)
    last = earlier[-1] if earlier else None
    recurring = in_window >= threshold
    return Recall(
        mode,
        tuple(incident.urn for incident in earlier),
        len(earlier) + 1,
        in_window,
        heal.get("run") if heal else None,
        last.status.at_ms if last else None,
        heal,
        upstream_owners(port, finding) if recurring else (),
        recurring,
    )


def upstream_owners(port: MetadataPort, finding: Finding) -> tuple[str, ...]:
    """The owners of the upstreams whose schema has the finding's column (the table's own owners otherwise)."""
    producers = [
        node.urn
        for node in walk_upstream(port, finding.dataset)
        if finding.column and _has_field(port, node.urn, finding.column)
    ]
    owners = [o for urn in producers or [finding.dataset] for o in read_owners(port, urn)]
    return tuple(dict.fromkeys(owners))


def _has_field(port: MetadataPort, dataset: str, column: str) -> bool:
    schema = read_schema(port, dataset)
    return schema is not None and any(c.name == column for c in schema)


def reuse(finding: Finding, remembered: dict[str, Any] | None) -> tuple[Finding, bool]:
    """The finding with the verified heal parameters of its last occurrence, when its fingerprint matched. A finding
    the guard could not settle alone (no playbook: a unit the batch cannot tell from its runner-up) takes the
    playbook of that verified heal's step on its kind and column: the past names the cause the batch cannot."""
    params = (remembered or {}).get("finding_params")
    if not isinstance(params, dict) or not params:
        return finding, False
    playbook = finding.playbook or _healed_with(finding, remembered or {})
    return replace(finding, params={**finding.params, **params}, playbook=playbook), True


def _healed_with(finding: Finding, remembered: dict[str, Any]) -> str | None:
    steps = _steps_on(remembered.get("steps") or [], finding.kind.value, finding.column or "")
    playbook = steps[0].get("playbook") if steps else None
    return playbook if isinstance(playbook, str) else None


def _steps_on(steps: list[Any], kind: str, column: str) -> list[dict[str, Any]]:
    """The heal steps taken on one finding kind and column."""
    return [
        st
        for st in steps
        if isinstance(st, dict) and st.get("finding_kind") == kind and (st.get("column") or "") == column
    ]


def memory_fact(finding: Finding, recalled: Recall) -> dict[str, Any]:
    """What a run keeps of the recall, for its heal (re-use) and its resolution note (the next recall)."""
    identity = {k: finding.params.get(k) for k in _IDENTITY.get(finding.kind.value, ())}
    return {
        "key": list(finding.key),
        "fingerprint": recalled.fingerprint,
        "summary": recalled.summary,
        "earlier": list(recalled.earlier),
        "recurring": recalled.recurring,
        "heal": recalled.heal,
        "finding_params": identity,
    }


def reuse_all(
    findings: tuple[Finding, ...], memory: dict[str, dict[str, Any]]
) -> tuple[tuple[Finding, ...], list[dict[str, Any]]]:
    """Every finding whose failure mode was healed before, with that verified heal's parameters; `memory` is urn ->
    `memory_fact`, as `controlplane.stages.heal.Raised` holds it."""
    remembered = {tuple(m["key"]): m for m in memory.values() if isinstance(m, dict) and "key" in m}
    out, reused = [], []
    for finding in findings:
        memory = remembered.get(finding.key) or {}
        healed, used = reuse(finding, memory.get("heal"))
        out.append(healed)
        if used:
            reused.append(
                {
                    "key": list(finding.key),
                    "from_run": (memory.get("heal") or {}).get("run"),
                    "params": (memory.get("heal") or {}).get("finding_params"),
                    "incidents": memory.get("earlier", []),
                }
            )
    return tuple(out), reused


def resolution_line(memory: dict[str, dict[str, Any]], urn: str, run_id: str, steps: list[dict[str, Any]]) -> str:
    """The heal line of one incident's resolution note: the steps on its column and its finding's parameters."""
    recalled = memory.get(urn) or {}
    key = recalled.get("key") or ["", "", ""]
    mine = _steps_on(steps, key[1], key[2])
    return heal_line(run_id, mine or steps, recalled.get("finding_params") or {})
