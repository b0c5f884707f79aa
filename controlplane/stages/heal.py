"""Incident, heal and verify: raise an incident per blocking finding, heal a sandbox copy of the pinned table
with allowlisted playbooks, and run the same guard on the healed copy."""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from controlplane.context import RunContext
from controlplane.datahub.incidents import IncidentRef, open_incident
from controlplane.datahub.urns import assertion_urn
from controlplane.memory import memory_fact, recall, reuse_all
from controlplane.snapshot import file_hash, verify_file
from controlplane.stages.detect import Detected, TrainingView, summary
from controlplane.vocab import LedgerKind, RunStatus, Stage
from guard.context import GuardContext
from guard.findings import Finding, GuardReport, Verdict
from guard.registry import CHECKS
from guard.runner import run_guard
from guard.snapshot import SnapshotError, read_snapshot
from remediations.registry import HealStep
from remediations.sandbox import HealOutcome, heal_copy

__all__ = ["Healed", "raise_incidents", "heal", "verify", "assertion_of", "heal_notes"]


@dataclass(frozen=True)
class Healed:
    """A complete heal of the pinned table, in the run's sandbox."""

    healed_path: str  # workspace-relative
    before_hash: str
    after_hash: str
    steps: tuple[HealStep, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"healed_path": self.healed_path, "before_hash": self.before_hash, "after_hash": self.after_hash,
                "steps": [asdict(s) for s in self.steps]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Healed:
        return cls(data["healed_path"], data["before_hash"], data["after_hash"],
                   tuple(HealStep(**s) for s in data["steps"]))


def assertion_of(finding: Finding) -> str:
    """The assertion that recorded this failure: its check, on its column for per-column checks."""
    check = CHECKS.get(finding.check)
    column = finding.column if check is not None and check.per_column else None
    return assertion_urn(finding.dataset, finding.check or "guard", column)


def raise_incidents(run: RunContext, report: GuardReport) -> tuple[IncidentRef, ...]:
    if not run.writes:
        run.event(Stage.INCIDENT, "skipped", "dry-run: would raise an incident per blocking finding",
                  would_raise=[list(f.key) for f in report.blocking])
        return ()
    refs, remembered = [], {}
    for finding in report.blocking:
        recalled = recall(run.metadata, finding, run.now_ms)
        with run.journal.writing(LedgerKind.DATAHUB, finding.dataset, aspect="incidentInfo",
                                 key=list(finding.key)) as entry:
            ref = open_incident(run.metadata, finding, assertion_of(finding), run.run_id, run.now_ms,
                                recalled.recurrence())
            entry.result.update(urn=ref.urn, created=ref.created)
        refs.append(ref)
        remembered[ref.urn] = memory_fact(finding, recalled)
    run.record.facts["incidents"] = [r.urn for r in refs]
    run.record.facts["memory"] = remembered
    run.event(Stage.INCIDENT, "raised", ", ".join(
        f"{'new' if r.created else 'reused'} {r.urn} ({r.key[1]} on {r.key[2] or 'dataset'}; "
        f"{remembered[r.urn]['summary']})" for r in refs),
        incidents=[r.to_dict() for r in refs], memory=remembered)
    return tuple(refs)


def heal(run: RunContext, detected: Detected) -> Healed | None:
    """Heal a copy of the pinned bytes; None (and the run BLOCKED) when any blocking finding cannot be healed."""
    verify_file(run.ws, detected.pinned.table, detected.pinned.table_hash, "the heal")
    contract = detected.context.contract
    blocking = detected.report.blocking
    if contract is None:  # nothing can be healed against no contract: say what to do
        why = [f.message for f in blocking]
        run.event(Stage.HEAL, "failed", "cannot heal without a contract: " + "; ".join(why),
                  unhealable=[f.to_dict() for f in blocking])
        run.finish(RunStatus.BLOCKED, "BLOCKED: " + "; ".join(why) + " (incident stays open)")
        return None
    blocking, reused = reuse_all(blocking, run.record.facts.get("memory") or {})
    outcome = heal_copy(detected.pinned.path(run.ws), run.journal.run_dir / "sandbox", blocking, contract, detected.context.reference)
    evidence = {**_evidence(outcome), "reused": reused}
    if not outcome.complete:
        why = [f"no safe playbook for {f.kind.value} ({f.message})" for f in outcome.unhealable]
        why += [w for _, w in outcome.refused]
        run.event(Stage.HEAL, "failed", "cannot heal: " + "; ".join(why), **evidence)
        run.finish(RunStatus.BLOCKED, "BLOCKED: " + "; ".join(why) + " (incident stays open)")
        return None
    run.event(Stage.HEAL, "healed", "sandbox: " + "; ".join(
        f"{s.playbook} on {s.column} ({s.rows_touched} rows, {s.params})" for s in outcome.steps), **evidence)
    return Healed(run.ws.rel(outcome.healed_path), outcome.before_hash, outcome.after_hash, outcome.steps)


def _evidence(outcome: HealOutcome) -> dict[str, Any]:
    return {"steps": [asdict(s) for s in outcome.steps], "before_hash": outcome.before_hash,
            "after_hash": outcome.after_hash, "unhealable": [f.to_dict() for f in outcome.unhealable],
            "refused": [{"finding": f.to_dict(), "why": why} for f, why in outcome.refused]}


def verify(run: RunContext, context: GuardContext, healed: Healed) -> TrainingView | None:
    """The same guard on the healed copy; None (and the run BLOCKED) unless it is CLEAN."""
    path = run.ws.path(healed.healed_path)
    try:
        if file_hash(path) != healed.after_hash:
            raise SnapshotError(f"the healed copy {healed.healed_path} changed after the heal")
        snapshot = read_snapshot(path)
    except (SnapshotError, OSError) as exc:
        run.event(Stage.VERIFY, "failed", f"healed copy unreadable: {exc}")
        run.finish(RunStatus.BLOCKED, "BLOCKED: the healed copy could not be read (incident stays open)")
        return None
    report = run_guard(replace(context, snapshot=snapshot, snapshot_error=None))
    run.event(Stage.VERIFY, report.verdict.value, summary(report), verdict=report.verdict.value,
              findings=[f.to_dict() for f in report.findings])
    if report.verdict is not Verdict.CLEAN:
        run.finish(RunStatus.BLOCKED, "BLOCKED: the heal did not verify (incident stays open)")
        return None
    return TrainingView(healed.healed_path, healed.after_hash, "", report, snapshot.profile)


def heal_notes(run_id: str, healed: Healed) -> str:
    notes = "; ".join(f"{s.playbook} {s.params} on {s.column}, {s.rows_touched} rows" for s in healed.steps)
    return (f"healed by run {run_id}: {notes}; before {healed.before_hash} after {healed.after_hash}; "
            "verified CLEAN")
