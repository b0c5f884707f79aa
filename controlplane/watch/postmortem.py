"""Postmortems: each resolved incident on a watched dataset gets one — the timeline from detection to resolution,
the evidence, the playbook with its parameters and the rows it touched, the impact (the holdout metric of a model
trained on the poisoned data vs the healed data, measured by the run that healed), the models that were at risk
and what happened to them.

Built from DataHub (the incident's history, the at-risk incidents linked to it) and the run records (the run
that healed it, rollbacks, retrains); deterministic: the same stores give the same text. Written to DataHub as a
note on the incident (`incidentNotes`, markdown) linked from each dataset's institutional memory, and as markdown
in the run folder of the run that healed it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from controlplane.datahub.incident_records import Incident, IncidentState, incident_statuses, read_incident
from controlplane.datahub.incidents import ACTOR
from controlplane.datahub.model_risk import AT_RISK_TYPE, risks_of
from controlplane.datahub.notes import incident_note_mcps, memory_link_mcps, read_incident_note
from controlplane.datahub.port import AspectWrite, MetadataPort
from controlplane.models.champion_health import prior_rollbacks
from controlplane.runs.journal import RunRecord
from controlplane.stages.memory import read_heal
from controlplane.takeback.rollback import resolved_by
from controlplane.vocab import Stage
from controlplane.watch.retrain import is_loop_run
from controlplane.workspace import Workspace

__all__ = [
    "Postmortem",
    "build_postmortem",
    "postmortem_mcps",
    "read_postmortem",
    "healing_run",
    "write_markdown",
    "markdown_path",
    "NOTE_ID",
]

NOTE_ID = "kintsugi-postmortem"


@dataclass(frozen=True)
class Postmortem:
    incident: str
    title: str
    datasets: tuple[str, ...]
    resolved_at_ms: int
    markdown: str
    run_id: str | None  # the run that healed it, if one did


def _when(at_ms: int | None) -> str:
    if at_ms is None:
        return "?"
    return datetime.fromtimestamp(at_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def healing_run(records: list[RunRecord], urn: str) -> RunRecord | None:
    """The run that resolved the incident (its ledger says so), the latest if several did."""
    found = [r for r in records if urn in resolved_by(r) and is_loop_run(r)]
    return found[-1] if found else None


def build_postmortem(
    ws: Workspace, port: MetadataPort, urn: str, records: list[RunRecord], lineages: dict[str, set[str]]
) -> Postmortem | None:
    """The postmortem of a RESOLVED incident (None for one still ACTIVE, unknown, or a model's at-risk record)."""
    info = read_incident(port, urn)
    if info is None or info.state != IncidentState.RESOLVED or info.custom_type == AT_RISK_TYPE:
        return None
    run = healing_run(records, urn)
    resolved = info.status.at_ms
    sections = [
        _header(urn, info, resolved),
        _timeline(port, urn, run),
        _evidence(info),
        _heal(info, run),
        _impact(run),
        _models(ws, port, urn, info, run, records, resolved, lineages),
    ]
    markdown = "\n\n".join(section for section in sections if section) + "\n"
    return Postmortem(urn, info.title or urn, info.datasets, resolved, markdown, run.run_id if run else None)


def _header(urn: str, info: Incident, resolved: int) -> str:
    started = info.started_ms if info.started_ms is not None else info.created_ms
    minutes = max(0, resolved - started) / 60_000
    evidence = info.evidence
    lines = [
        f"# Postmortem: {info.title or urn}",
        "",
        f"- incident: `{urn}`",
        f"- datasets: {', '.join(f'`{d}`' for d in info.datasets)}",
        f"- type: {info.custom_type or info.type}, priority: {info.priority}",
        f"- raised {_when(info.created_ms)} by {info.created_by}; resolved {_when(resolved)} by "
        f"{info.status.by} ({minutes:.0f} min after it started)",
    ]
    if evidence.get("seen"):
        before = evidence.get("seen_before") or []
        lines.append(
            f"- memory: seen {evidence['seen']} time(s)"
            + (f"; earlier: {', '.join(before)}" if before else " (first seen)")
        )
    if evidence.get("upstream_owners"):
        lines.append(f"- recurring: an upstream bug; owners {', '.join(evidence['upstream_owners'])}")
    return "\n".join(lines)


def _timeline(port: MetadataPort, urn: str, run: RunRecord | None) -> str:
    lines = ["## Timeline", ""]
    for status in incident_statuses(port, urn):
        message = status.message.splitlines()[0] if status.message else ""
        lines.append(f"- {_when(status.at_ms)} {status.state} ({status.stage}) by {status.by}: {message}")
    if run is not None:
        stages = [f"{e.stage} {e.status}" for e in run.events if e.stage != Stage.ERROR.value]
        lines.append(f"- run {run.run_id} ({run.policy.value}, at {_when(run.now_ms)}): " + " -> ".join(stages))
        lines.append(f"- run outcome: {run.status.value}: {run.outcome}")
    return "\n".join(lines)


def _evidence(info: Incident) -> str:
    evidence = info.evidence
    lines = ["## Evidence", "", info.description.splitlines()[0] if info.description else ""]
    if "observed" in evidence or "expected" in evidence:
        lines.append(f"- observed: `{json.dumps(evidence.get('observed'), default=str)}`")
        lines.append(f"- expected: `{json.dumps(evidence.get('expected'), default=str)}`")
    if info.source_urn:
        lines.append(f"- source: {info.source_type} `{info.source_urn}`")
    return "\n".join(line for line in lines if line is not None)


def _heal(info: Incident, run: RunRecord | None) -> str:
    heal = read_heal(info.status.message)
    event = next((e for e in reversed(run.events) if e.stage == Stage.HEAL.value), None) if run else None
    if heal is None and event is None:
        return "## Heal\n\nNo Kintsugi heal: resolved at the source by " + info.status.by
    steps = (heal or {}).get("steps") or (event.evidence.get("steps", []) if event else [])
    lines = ["## Heal", ""]
    for step in steps:
        lines.append(
            f"- playbook `{step.get('playbook')}` on `{step.get('column')}` with "
            f"`{json.dumps(step.get('params'), sort_keys=True, default=str)}`: "
            f"{step.get('rows_touched', 0)} rows touched, {step.get('rows_dropped', 0)} dropped"
        )
    for reused in event.evidence.get("reused", []) if event else []:
        lines.append(
            f"- re-used the verified heal of run {reused.get('from_run')} "
            f"(`{json.dumps(reused.get('params'), sort_keys=True, default=str)}`)"
        )
    if event is not None:
        lines.append(f"- bytes: {event.evidence.get('before_hash')} -> {event.evidence.get('after_hash')}")
    verify = next((e for e in reversed(run.events) if e.stage == Stage.VERIFY.value), None) if run else None
    if verify is not None:
        lines.append(f"- verified: guard {verify.status} on the healed copy")
    return "\n".join(lines)


def _impact(run: RunRecord | None) -> str:
    impact = run.impact if run else None
    if impact is None:
        return ""
    metric = impact.metric
    if impact.poisoned is None:
        return f"## Impact\n\nNot measured: {impact.error or 'no model was trained on the poisoned data'}"
    gap = impact.poisoned - impact.healed if impact.healed is not None else None
    return (
        "## Impact\n\n"
        f"- holdout {metric} of a model trained on the poisoned data: {impact.poisoned:.4g}\n"
        f"- holdout {metric} of the model trained on the healed data (v{impact.version}): "
        f"{impact.healed:.4g}\n"
        + (f"- difference: {gap:+.4g} on {impact.holdout_rows} holdout rows" if gap is not None else "")
    )


def _models(
    ws: Workspace,
    port: MetadataPort,
    urn: str,
    info: Incident,
    run: RunRecord | None,
    records: list[RunRecord],
    resolved: int,
    lineages: dict[str, set[str]],
) -> str:
    lines = ["## Models", ""]
    if run is not None:
        promote = run.last_event(Stage.PROMOTE)
        if promote is not None:
            lines.append(
                f"- {run.pipeline} v{promote.evidence.get('version')} trained on the healed data: {promote.status}"
            )
    for mark in risks_of(port, caused_by=urn):
        lines.append(f"- at risk: {mark.pipeline} v{mark.version} ({mark.state}: {mark.message})")
    for pipeline in sorted({m.pipeline for m in risks_of(port, caused_by=urn)}):
        for past in prior_rollbacks(ws, pipeline):
            if urn in past.causes:
                lines.append(
                    f"- rollback of {pipeline} v{past.from_version} -> v{past.to_version} "
                    f"(run {past.run_id}): {past.status.value}"
                )
    lines.extend(_retrains(records, info, resolved, run, lineages))
    return "\n".join(lines) if len(lines) > 2 else "## Models\n\nNo model version was at risk."


def _retrains(
    records: list[RunRecord],
    info: Incident,
    resolved: int,
    run: RunRecord | None,
    lineages: dict[str, set[str]],
) -> list[str]:
    """For an incident resolved at the source, the first run of the loop after the resolution of each pipeline
    that reads its datasets (the retrain); a run that healed is its own retrain."""
    if run is not None:
        return []
    lines = []
    for pipeline, datasets in sorted(lineages.items()):
        if not set(info.datasets) & datasets:
            continue
        after = [
            r for r in records if r.pipeline == pipeline and is_loop_run(r) and r.policy.writes and r.now_ms >= resolved
        ]
        if after:
            first = min(after, key=lambda r: r.now_ms)
            lines.append(f"- retrained: {pipeline} run {first.run_id}: {first.status.value} ({first.outcome[:160]})")
        else:
            lines.append(f"- retrain of {pipeline}: not started yet")
    return lines


def postmortem_mcps(port: MetadataPort, postmortem: Postmortem) -> list[AspectWrite]:
    """The note on the incident and the links in the datasets' institutional memory, where they differ."""
    at_ms = postmortem.resolved_at_ms
    mcps = incident_note_mcps(port, postmortem.incident, NOTE_ID, postmortem.markdown, at_ms, ACTOR)
    for dataset in postmortem.datasets:
        mcps += memory_link_mcps(
            port,
            dataset,
            url=postmortem.incident,
            description=f"Postmortem: {postmortem.title} (resolved {_when(at_ms)})",
            at_ms=at_ms,
            by=ACTOR,
            once=True,
        )
    return mcps


def read_postmortem(port: MetadataPort, urn: str) -> str | None:
    """The postmortem DataHub holds on the incident, or None."""
    return read_incident_note(port, urn, NOTE_ID)


def markdown_path(ws: Workspace, postmortem: Postmortem, folder_run: str) -> Path:
    return ws.run_dir(folder_run) / ("postmortem-" + postmortem.incident.rsplit(":", 1)[-1][:16] + ".md")


def write_markdown(ws: Workspace, postmortem: Postmortem, folder_run: str) -> str:
    """The postmortem as markdown in a run's folder; returns its workspace-relative path."""
    path = markdown_path(ws, postmortem, folder_run)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(postmortem.markdown)
    return ws.rel(path)
