"""Retrain when the cause is gone, level-based: a pipeline is due when an incident on its feature table or any
of its upstreams was resolved after its last run of the loop. A resolution that a run has followed (the run that
healed it included) needs nothing, so a restart never replays a burst: one run per pipeline covers every
resolution before it. Quiet hours (`quiet_hours: "22-06"` in the spec, UTC) defer it to the next pass after them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from controlplane.datahub.incident_records import IncidentState, all_incidents
from controlplane.datahub.port import MetadataPort
from controlplane.runs.journal import RunRecord
from controlplane.spec import PipelineSpec
from controlplane.vocab import RunKind

__all__ = ["RetrainDue", "due_retrains", "is_loop_run", "last_loop_run_ms", "in_quiet_hours"]


@dataclass(frozen=True)
class RetrainDue:
    pipeline: str
    incidents: tuple[str, ...]  # resolved after the pipeline's last run
    resolved_at_ms: int  # the latest of their resolutions
    quiet: bool = False  # due, but inside the spec's quiet hours


def in_quiet_hours(quiet_hours: str | None, now_ms: int) -> bool:
    """Whether `now_ms` falls in "HH-HH" (UTC, the end hour excluded; it may wrap midnight)."""
    if not quiet_hours:
        return False
    start, end = (int(part) for part in quiet_hours.split("-"))
    hour = datetime.fromtimestamp(now_ms / 1000, tz=timezone.utc).hour
    return start <= hour < end if start < end else hour >= start or hour < end


def is_loop_run(record: RunRecord) -> bool:
    """A run of the loop: not a watch pass, a rollback or a promote by hand, nor an init or a land."""
    return record.kind is RunKind.LOOP


def last_loop_run_ms(records: list[RunRecord], pipeline: str) -> int | None:
    """The instant of the pipeline's latest run of the loop (not a watch pass, a promote by hand, an init, a land
    or a dry-run)."""
    instants = [r.now_ms for r in records if r.pipeline == pipeline and is_loop_run(r) and r.policy.writes]
    return max(instants) if instants else None


def _resolutions(port: MetadataPort, datasets: set[str], now_ms: int) -> list[tuple[str, int]]:
    found = []
    for incident in all_incidents(port):
        if incident.state != IncidentState.RESOLVED or not set(incident.datasets) & datasets:
            continue
        resolved = incident.status.at_ms
        if resolved <= now_ms:
            found.append((incident.urn, resolved))
    return found


def due_retrains(
    port: MetadataPort, specs: list[PipelineSpec], lineages: dict[str, set[str]], records: list[RunRecord], now_ms: int
) -> list[RetrainDue]:
    """Each pipeline with a resolution on its datasets after its last run of the loop."""
    due = []
    for spec in specs:
        last = last_loop_run_ms(records, spec.name)
        after = sorted((r, u) for u, r in _resolutions(port, lineages[spec.name], now_ms) if last is None or r > last)
        if after:
            due.append(
                RetrainDue(
                    spec.name, tuple(u for _, u in after), after[-1][0], in_quiet_hours(spec.quiet_hours, now_ms)
                )
            )
    return due
