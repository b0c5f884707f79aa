"""Plain-text rendering of runs and guard reports for the terminal."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from controlplane.runs.journal import Event, RunRecord
from guard.findings import GuardReport

__all__ = ["event_line", "timeline", "report_table", "runs_table", "outcome_lines"]

_EVIDENCE_KEYS = ("findings", "steps", "incidents", "before_hash", "after_hash", "candidate", "champion", "reasons")


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def event_line(event: Event) -> str:
    return f"  {event.stage:<8} {event.status:<12} {event.summary}"


def _evidence_lines(event: Event) -> list[str]:
    lines = []
    for key in _EVIDENCE_KEYS:
        value = event.evidence.get(key)
        if value in (None, [], {}):
            continue
        if key == "findings":
            for f in value:
                lines.append(
                    f"             finding {f['kind']} on {f['column']}: observed {json.dumps(f['observed'])}"
                    f", expected {json.dumps(f['expected'])}, playbook {f['playbook']}"
                )
        else:
            lines.append(f"             {key}: {json.dumps(value, default=str)[:300]}")
    return lines


def _header(record: RunRecord) -> str:
    return (
        f"run {record.run_id}  pipeline {record.pipeline}  policy {record.policy.value}  "
        f"started {_when(record.started_ms)}  status {record.status.value}"
    )


def _ledger_lines(record: RunRecord) -> list[str]:
    if not record.ledger:
        return []
    return ["  ledger:"] + [
        f"    {e.kind:<15} {e.state:<11} {e.target} {json.dumps(e.detail, default=str)[:140]}" for e in record.ledger
    ]


def timeline(record: RunRecord, *, with_ledger: bool = True) -> str:
    lines = [_header(record)]
    for event in record.events:
        lines.append(event_line(event))
        lines.extend(_evidence_lines(event))
    lines.append(f"  outcome: {record.outcome}")
    if with_ledger:
        lines.extend(_ledger_lines(record))
    return "\n".join(lines)


def outcome_lines(record: RunRecord) -> list[str]:
    """What follows a run's live events: who it was, how it ended, what it wrote."""
    return ["", _header(record), f"  outcome: {record.outcome}", *_ledger_lines(record)]


def report_table(report: GuardReport) -> str:
    lines = [f"dataset {report.dataset}", f"verdict {report.verdict.value}"]
    if not report.findings:
        lines.append(f"no findings ({len(report.outcomes)} checks passed)")
    for f in report.findings:
        lines.append(
            f"  {f.severity.value:<5} {f.kind.value:<22} {f.column or '-':<16} observed={json.dumps(f.observed)} "
            f"expected={json.dumps(f.expected)} playbook={f.playbook or '-'}"
        )
        lines.append(f"        {f.message}")
    return "\n".join(lines)


def runs_table(records: list[RunRecord]) -> str:
    if not records:
        return "no runs yet"
    return "\n".join(
        f"{r.run_id}  {r.pipeline:<14} {r.policy.value:<8} {r.status.value:<13} {r.outcome[:80]}" for r in records
    )
