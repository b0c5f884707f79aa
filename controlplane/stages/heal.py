"""Incident, heal and verify: raise an incident per blocking finding, heal a sandbox copy of the pinned table
with allowlisted playbooks (pandas, or Spark's for `engine: spark`), and run the same guard on the healed copy."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from controlplane.datahub.incidents import IncidentRef, open_incident
from controlplane.datahub.urns import assertion_urn
from controlplane.runs.context import RunContext
from controlplane.stages.blocked import Blocked
from controlplane.stages.detect import Detected, TrainingView, summary
from controlplane.stages.guarding import guard_table
from controlplane.stages.kept_reference import load_state
from controlplane.stages.memory import memory_fact, recall, reuse_all
from controlplane.stages.pin import file_hash, reading_pinned, verify_file
from controlplane.vocab import LedgerKind, Stage
from guard.contract import Contract
from guard.findings import Finding, GuardReport, Verdict
from guard.kinds import NOT_THE_DATA, FindingKind
from guard.registry import CHECKS
from profiles.records import Record
from remediations.aside import RowsAside, set_aside_by
from remediations.registry import HealStep
from remediations.sandbox import HealOutcome, heal_copy

__all__ = [
    "Healed",
    "Raised",
    "raise_incidents",
    "heal",
    "verify",
    "assertion_of",
    "heal_notes",
    "quarantine_note",
    "way_on_of",
]


@dataclass(frozen=True)
class Healed(Record):
    """A complete heal of the pinned table, in the run's sandbox: the table to publish (exact corrections only)
    and the training view (the published table minus the rows set aside, when any were)."""

    healed_path: str  # workspace-relative: what is published
    before_hash: str
    after_hash: str
    steps: tuple[HealStep, ...]
    training_path: str = ""  # what is verified and trained on ("": the healed table itself)
    training_hash: str = ""
    quarantine: dict[str, Any] | None = None  # rows set aside: {path, rows, by_finding}
    open_keys: tuple[tuple[str, str, str], ...] = ()  # failures only set aside, not corrected: incidents stay open

    @property
    def view_path(self) -> str:
        return self.training_path or self.healed_path

    @property
    def view_hash(self) -> str:
        return self.training_hash or self.after_hash


@dataclass(frozen=True)
class Raised:
    """The incidents a run raised, one per blocking finding, and per incident urn what memory recalled of its
    failure mode (`controlplane.stages.memory.memory_fact`): the heal re-uses it, the resolution note extends it."""

    incidents: tuple[IncidentRef, ...] = ()
    memory: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def urns(self) -> tuple[str, ...]:
        return tuple(r.urn for r in self.incidents)


def assertion_of(finding: Finding) -> str:
    """The assertion that recorded this failure: its check, on its column for per-column checks."""
    check = CHECKS.get(finding.check)
    column = finding.column if check is not None and check.per_column else None
    return assertion_urn(finding.dataset, finding.check or "guard", column)


def raise_incidents(run: RunContext, report: GuardReport) -> Raised:
    """An incident per blocking finding, each with what memory recalls of its failure mode; kept on the record
    (saved with the event that tells it) for a resume at the publish gate."""
    if not run.writes:
        run.event(
            Stage.INCIDENT,
            "skipped",
            "dry-run: would raise an incident per blocking finding",
            would_raise=[list(f.key) for f in report.blocking],
        )
        return Raised()
    refs, remembered = [], {}
    for finding in report.blocking:
        recalled = recall(run.metadata, finding, run.now_ms)
        with run.journal.writing(
            LedgerKind.DATAHUB, finding.dataset, aspect="incidentInfo", key=list(finding.key)
        ) as entry:
            ref = open_incident(
                run.metadata, finding, assertion_of(finding), run.run_id, run.now_ms, recalled.recurrence()
            )
            entry.result.update(urn=ref.urn, created=ref.created)
        refs.append(ref)
        remembered[ref.urn] = memory_fact(finding, recalled)
    raised = Raised(tuple(refs), remembered)
    run.record.incidents, run.record.memory = raised.urns, raised.memory
    run.event(
        Stage.INCIDENT,
        "raised",
        ", ".join(
            f"{'new' if r.created else 'reused'} {r.urn} ({r.key[1]} on {r.key[2] or 'dataset'}; "
            f"{remembered[r.urn]['summary']})"
            for r in refs
        ),
        incidents=[r.to_dict() for r in refs],
        memory=remembered,
    )
    return raised


def heal(run: RunContext, detected: Detected, raised: Raised) -> Healed | Blocked:
    """Heal a copy of the pinned bytes, re-using the verified heal of a failure mode `raised` recalls; Blocked when
    any blocking finding cannot be healed."""
    contract = detected.context.contract
    blocking = detected.report.blocking
    if contract is None:  # nothing can be healed against no contract: say what to do
        why = [f.message for f in blocking]
        run.event(
            Stage.HEAL,
            "failed",
            "cannot heal without a contract: " + "; ".join(why),
            unhealable=[f.to_dict() for f in blocking],
        )
        return Blocked(Stage.HEAL, "BLOCKED: " + "; ".join(why) + " (incident stays open)")
    blocking, reused = reuse_all(blocking, raised.memory)
    pinned = detected.pinned
    with reading_pinned(run.ws, pinned.table, pinned.table_hash, "the heal") as source:  # copied through the door
        outcome = _heal_copy(run, source, detected, blocking, contract)
    if run.engine.spark:  # Spark read the sandbox's copy by path: were they the pinned bytes?
        verify_file(run.ws, run.ws.rel(_sandbox(run) / "input.parquet"), pinned.table_hash, "the heal")
    evidence = {**_evidence(outcome), "reused": reused, "engine": run.engine.name}
    if not outcome.complete:
        why = [f"no safe playbook for {f.kind.value} ({f.message})" for f in outcome.unhealable]
        why += [w for _, w in outcome.refused]
        way_on = way_on_of(run.run_id, run.spec.name, (*outcome.unhealable, *(f for f, _ in outcome.refused)))
        run.event(Stage.HEAL, "failed", "cannot heal: " + "; ".join(why), way_on=way_on, **evidence)
        return Blocked(Stage.HEAL, "BLOCKED: " + "; ".join(why) + f" (incident stays open); to move on: {way_on}")
    quarantine = outcome.quarantine
    run.event(
        Stage.HEAL,
        "healed",
        "sandbox: "
        + "; ".join(step.note() for step in outcome.steps)
        + (f"; {quarantine.note()}" if quarantine is not None else ""),
        **evidence,
    )
    training = outcome.training_path
    return Healed(
        run.ws.rel(outcome.healed_path),
        outcome.before_hash,
        outcome.after_hash,
        outcome.steps,
        run.ws.rel(training) if training is not None else "",
        file_hash(training) if training is not None else "",
        None if quarantine is None else {**quarantine.to_dict(), "path": run.ws.rel(quarantine.path)},
        tuple(f.key for f in outcome.open_findings),
    )


def _heal_copy(
    run: RunContext, source: Path, detected: Detected, blocking: tuple[Finding, ...], contract: Contract
) -> HealOutcome:
    """The pinned bytes healed in the run's sandbox by the pipeline's engine: pandas playbooks, or Spark's."""
    sandbox = _sandbox(run)
    if not run.engine.spark:
        return heal_copy(source, sandbox, blocking, contract, detected.context.reference)
    from remediations.spark.copy import heal_copy_spark

    return heal_copy_spark(run.engine.session(), source, sandbox, blocking, contract, detected.context.reference)


def _sandbox(run: RunContext) -> Path:
    return run.journal.run_dir / "sandbox"


def _evidence(outcome: HealOutcome) -> dict[str, Any]:
    return {
        "steps": [asdict(s) for s in outcome.steps],
        "before_hash": outcome.before_hash,
        "after_hash": outcome.after_hash,
        "unhealable": [f.to_dict() for f in outcome.unhealable],
        "refused": [{"finding": f.to_dict(), "why": why} for f, why in outcome.refused],
        "quarantine": outcome.quarantine.to_dict() if outcome.quarantine is not None else None,
    }


def verify(run: RunContext, healed: Healed) -> TrainingView | Blocked:
    """The same guard on the training view (the healed copy, less any rows set aside): its new batch and its
    history; Blocked unless CLEAN. The view, and the table to publish where rows were set aside, are read through
    `reading_pinned`: bytes other than the heal's end the run."""
    rules = tuple(rule for step in healed.steps if (rule := set_aside_by(step)) is not None)
    state, aside, spark = load_state(run.ws, run.spec.name), None, run.engine.spark
    with ExitStack() as reading:
        view = reading.enter_context(
            reading_pinned(run.ws, healed.view_path, healed.view_hash, "verifying the heal", by_path=spark)
        )
        if rules and state is not None:  # what the training view lacks of each kept batch, from the table to publish
            published = reading.enter_context(
                reading_pinned(run.ws, healed.healed_path, healed.after_hash, "verifying the heal")
            )
            aside = RowsAside.read(published, rules, state.time_column)
        guarded = guard_table(
            run.ws, run.metadata, run.spec, view, run.now_ms, engine=run.engine, keep_caches=run.writes, aside=aside
        )
    report = guarded.report
    run.event(
        Stage.VERIFY,
        report.verdict.value,
        summary(report),
        verdict=report.verdict.value,
        findings=[f.to_dict() for f in report.findings],
    )
    if report.verdict is not Verdict.CLEAN:
        return Blocked(Stage.VERIFY, "BLOCKED: the heal did not verify (incident stays open)")
    profile = guarded.context.snapshot.profile if guarded.context.snapshot is not None else None
    return TrainingView(
        healed.view_path, healed.view_hash, "", report, profile, guarded.batch, guarded.keys, rules, healed.healed_path
    )


def way_on_of(run_id: str, pipeline: str, findings: tuple[Finding, ...]) -> str:
    """The one command that moves on from a block no playbook heals: accept it as the new normal where a person
    may (a change in the new batch's data), else take the reference again from the table as it is."""
    if findings and not any(f.kind in NOT_THE_DATA for f in findings):
        picks = " ".join(
            dict.fromkeys(f"--finding {f.kind.value}" + (f":{f.column}" if f.column else "") for f in findings)
        )
        return f"correct the source and run again, or if it is the new normal `kintsugi accept {run_id} {picks} --reason ...`"
    if findings and all(f.kind is FindingKind.HISTORY_CHANGED and f.rows is not None for f in findings):
        return (
            "correct the source (or put back what passed) and run again, or if the rewrite is right "
            f"`kintsugi accept {run_id} --finding history_changed --reason ...` keeps it as the history"
        )
    return (
        "correct the source (or put back what passed) and run again, or if the table as it is now is right "
        f"`kintsugi init {pipeline} --force ...` takes the reference again from it"
    )


def heal_notes(run_id: str, healed: Healed) -> str:
    notes = "; ".join(step.note() for step in healed.steps)
    return f"healed by run {run_id}: {notes}; before {healed.before_hash} after {healed.after_hash}; verified CLEAN"


def quarantine_note(run_id: str, healed: Healed) -> str:
    """What an incident whose cause was only set aside says while it stays open."""
    found = healed.quarantine or {}
    parts = ", ".join(f"{count} for {label}" for label, count in sorted(found.get("by_finding", {}).items()))
    return (
        f"not corrected by run {run_id}: {found.get('rows', 0)} row(s) quarantined ({parts}), listed in "
        f"{found.get('path', '?')}; the published table keeps them as they came, training leaves them out"
    )
