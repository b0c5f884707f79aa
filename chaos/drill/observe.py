"""What the loop made of a scenario: read back from its run record and DataHub, then judged.

`observe` gathers the evidence (findings at detect, heal, verify, outcome, the incident left ACTIVE);
`judge` is the pure decision: did the loop do what the scenario says it should, and if not, why not.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos.drill.impact import HARM_THRESHOLD
from chaos.failures.registry import Scenario
from controlplane.datahub.connect import metadata_session
from controlplane.datahub.incident_records import IncidentState, all_incidents
from controlplane.runs.journal import RunRecord
from controlplane.workspace import Workspace
from guard.findings import Finding
from guard.kinds import DEFAULT_SEVERITY, Severity

__all__ = [
    "Observed",
    "observe",
    "judge",
    "held_correctly",
    "expected_outcome",
    "finding_label",
    "errored",
    "PROMOTED",
    "BLOCKED",
    "HELD",
    "UNCHANGED",
    "QUARANTINED",
]

PROMOTED, BLOCKED, HELD = "promoted", "blocked", "needs-review"
UNCHANGED = "unchanged"  # the healed rows are exactly the champion's training rows: it stands, as promoted would
QUARANTINED = "quarantined"  # rows set aside, incident left open; the run may train on the rest or stop


@dataclass(frozen=True)
class Observed:
    status: str
    outcome: str
    findings: tuple[Finding, ...]
    healed: bool
    verified: bool
    incident_open: bool
    heal_summary: str = ""
    verify_summary: str = ""
    labels: tuple[str, ...] = field(default=())

    @property
    def detected(self) -> bool:
        return bool(self.findings)

    @property
    def blocking(self) -> bool:
        return any(f.severity is Severity.BLOCK for f in self.findings)


def finding_label(finding: Finding) -> str:
    return f"{finding.kind.value}:{finding.column or '-'}:{finding.severity.value}"


def expected_outcome(scenario: Scenario) -> str:
    if scenario.healable:
        return PROMOTED
    if scenario.quarantines:
        return QUARANTINED
    return BLOCKED if DEFAULT_SEVERITY[scenario.kind] is Severity.BLOCK else HELD


def observe(ws: Workspace, record: RunRecord, scenario: Scenario | None, dataset: str) -> Observed:
    events = {e.stage: e for e in record.events}
    detect = events.get("detect")
    findings = tuple(Finding.from_dict(f) for f in (detect.evidence.get("findings", []) if detect else []))
    heal, verify = events.get("heal"), events.get("verify")
    return Observed(
        status=record.status,
        outcome=record.outcome,
        findings=findings,
        healed=heal is not None and heal.status == "healed",
        verified=verify is not None and verify.status == "CLEAN",
        incident_open=scenario is not None and _incident_open(ws, scenario, dataset),
        heal_summary=heal.summary if heal else "",
        verify_summary=verify.summary if verify else "",
        labels=tuple(finding_label(f) for f in findings),
    )


def _incident_open(ws: Workspace, scenario: Scenario, dataset: str) -> bool:
    """An ACTIVE incident on the feature table for the scenario's failure (kind, and column if any)."""
    columns = set(scenario.columns) or {""}
    with metadata_session(ws, read_only=True) as metadata:
        for incident in all_incidents(metadata):
            if incident.state != IncidentState.ACTIVE or dataset not in incident.datasets:
                continue
            key = incident.key
            if key is not None and key[1] == scenario.kind.value and key[2] in columns:
                return True
    return False


def held_correctly(status: str, expected: str, incident_open: bool) -> bool:
    """Not promoted; and where a block is expected, BLOCKED with its incident left open. Quarantined rows: the
    incident left open, whether the run stopped or trained on the rows that passed."""
    if expected == QUARANTINED:
        return incident_open
    if status == PROMOTED:
        return False
    return expected != BLOCKED or (status == BLOCKED and incident_open)


def judge(scenario: Scenario, seen: Observed, impact: dict[str, Any]) -> list[str]:
    """Why the loop fell short on this scenario; an empty list is a pass."""
    reasons: list[str] = []
    if not seen.detected:
        return [f"missed: the guard found nothing (expected {_where(scenario)}); the loop ended {seen.status}"]
    if not any(scenario.localizes(f) for f in seen.findings):
        reasons.append(f"mislocalized: expected {_where(scenario)}, the guard said {', '.join(seen.labels)}")
    expected = expected_outcome(scenario)
    if expected == PROMOTED:
        reasons += _heal_shortfalls(seen, impact)
    elif expected == BLOCKED:
        if seen.status != BLOCKED:
            reasons.append(f"expected BLOCKED, the loop ended {seen.status}: {seen.outcome}")
        if not seen.incident_open:
            reasons.append(f"no ACTIVE incident left open for {_where(scenario)}")
    elif expected == QUARANTINED:
        if not seen.incident_open:
            reasons.append(
                f"rows of {_where(scenario)} cannot be corrected, yet no ACTIVE incident was left open "
                f"(the loop ended {seen.status})"
            )
    elif seen.status == PROMOTED:
        reasons.append(f"promoted despite {', '.join(seen.labels)}")
    return reasons


def _heal_shortfalls(seen: Observed, impact: dict[str, Any]) -> list[str]:
    if not seen.healed:
        return [f"not healed: {seen.heal_summary or seen.outcome}"]
    if not seen.verified:
        return [f"the heal did not verify: {seen.verify_summary}"]
    reasons = []
    if seen.status not in (PROMOTED, UNCHANGED):
        reasons.append(f"healed and verified but not promoted: {seen.outcome}")
    gap = impact.get("healed_vs_clean")
    if gap is None or abs(gap) > HARM_THRESHOLD:
        shown = "unknown" if gap is None else f"{gap:+.1%}"
        reasons.append(
            f"healed model's holdout metric is {shown} against the clean model's (limit ±{HARM_THRESHOLD:.0%})"
        )
    return reasons


def _where(scenario: Scenario) -> str:
    where = scenario.upstream or "/".join(scenario.columns) or "the dataset"
    return f"{scenario.kind.value} on {where}"


def errored(exc: Exception, ws: Workspace) -> dict[str, Any]:
    """A scenario whose loop raised: the error, where in Kintsugi it broke, and a run that did nothing (held, no
    finding); each drill adds the fields it records."""
    frames = traceback.extract_tb(exc.__traceback__)
    stack = [f for f in frames if "site-packages" not in f.filename] or list(frames)
    frame = stack[-1] if stack else None
    where = f" (at {Path(frame.filename).name}:{frame.lineno} in {frame.name})" if frame is not None else ""
    reason = f"the loop raised {type(exc).__name__}: {str(exc).replace(str(ws.root), '<workspace>')}{where}"
    return {
        "status": "error",
        "outcome": reason,
        "findings": [],
        "detected": False,
        "blocking": False,
        "localized": False,
        "healed": False,
        "verified": False,
        "promoted": False,
        "held": True,
        "incident_open": False,
        "seconds": None,
    }
