"""`kintsugi run | guard | approve | reject | undo | recover | promote | runs`: the loop and its gates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from controlplane.cli.lazy import services, views
from controlplane.cli.options import (
    ActorOption,
    JsonOption,
    NowOption,
    ReasonOption,
    WorkspaceOption,
    actor,
    echo_event,
    require_estate,
)
from controlplane.frontdoor.render import outcome_lines, report_table, runs_table, timeline
from controlplane.runs.journal import RunRecord
from controlplane.vocab import EXIT_BLOCKED, ChangedTable, Stage

__all__ = ["register"]


def _finish(record: RunRecord, json_out: bool) -> None:
    """Live events were printed as they came; end with the outcome (or the whole record as JSON) and the exit."""
    typer.echo(json.dumps(views.run_out(record), indent=2) if json_out else "\n".join(outcome_lines(record)))
    raise typer.Exit(record.status.exit_code)


def run(
    pipeline: str,
    workspace: WorkspaceOption = None,
    policy: Annotated[Optional[str], typer.Option(help="auto | ratify | dry-run (default: the spec's).")] = None,
    now: NowOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run the loop for PIPELINE. Exit 0 decided (promoted, champion kept, unchanged, planned); 1 blocked; 2 error;
    3 a person must decide (paused, needs review)."""
    ws = require_estate(workspace)
    record = services.run(ws, pipeline, policy, services.parse_now(now), None if json_out else echo_event)
    _finish(record, json_out)


def guard(
    pipeline: str,
    workspace: WorkspaceOption = None,
    data: Annotated[
        Optional[Path], typer.Option(help="Check this batch file (parquet or CSV) as the next batch instead.")
    ] = None,
    now: NowOption = None,
    json_out: JsonOption = False,
) -> None:
    """Check PIPELINE's data against its contract, read-only. Exit 0 CLEAN, 1 BLOCKED, 2 error."""
    report = services.guard(require_estate(workspace), pipeline, data, services.parse_now(now))
    typer.echo(json.dumps(views.guard_out(report), indent=2) if json_out else report_table(report))
    raise typer.Exit(0 if report.verdict.value == "CLEAN" else EXIT_BLOCKED)


def approve(
    run_id: str,
    reason: ReasonOption,
    workspace: WorkspaceOption = None,
    now: NowOption = None,
    as_: ActorOption = None,
    json_out: JsonOption = False,
) -> None:
    """Continue a run paused at a gate; the current state is read again and the gate decides anew."""
    ws = require_estate(workspace)
    listener = None if json_out else echo_event
    record = services.approve(ws, run_id, reason, services.parse_now(now), listener, actor=actor(as_))
    _finish(record, json_out)


def reject(run_id: str, reason: ReasonOption, workspace: WorkspaceOption = None, as_: ActorOption = None) -> None:
    """Stop a run paused at a gate: nothing more is published or promoted."""
    typer.echo(services.reject(require_estate(workspace), run_id, reason, actor=actor(as_)).outcome)


def accept(
    run_id: str,
    reason: ReasonOption,
    finding: Annotated[
        Optional[list[str]],
        typer.Option(
            "--finding",
            help="KIND:COLUMN (or KIND) of a finding to accept; repeat it. Default: every warning of the run. "
            "A run blocked at the guard: name each of its blocking findings; history_changed alone keeps rows "
            "restated since they passed as the history.",
        ),
    ] = None,
    undo_: Annotated[
        bool,
        typer.Option(
            "--undo",
            help="Take back RUN_ID's accepted blocks: its batch leaves the reference (or the restated batches' "
            "profiles are put back); the acceptances stay on record, marked withdrawn.",
        ),
    ] = False,
    workspace: WorkspaceOption = None,
    now: NowOption = None,
    as_: ActorOption = None,
) -> None:
    """Accept a finding as the new normal, recorded in DataHub with who and why. A warning; or a block of a run
    the guard blocked, named with --finding: its batch joins the reference and the next passport names it."""
    ws = require_estate(workspace)
    now_ms = services.parse_now(now)
    record = services.accept(ws, run_id, reason, finding, actor=actor(as_), undo=undo_, now_ms=now_ms)
    event = record.last_event(Stage.UNDO if undo_ else Stage.APPROVE)
    typer.echo(event.summary if event is not None else record.outcome)


TableOption = Annotated[
    ChangedTable,
    typer.Option(
        "--table",
        help="A table changed since the run published it (a producer's write): refuse (the default), restore the "
        "run's kept bytes over the change, or keep the change and take back the rest.",
    ),
]


def undo(run_id: str, workspace: WorkspaceOption = None, table: TableOption = ChangedTable.REFUSE) -> None:
    """Take back a run: the exact bytes it replaced, its versions, the champion, the incidents it resolved."""
    typer.echo(services.undo(require_estate(workspace), run_id, table).outcome)


def recover(run_id: str, workspace: WorkspaceOption = None, table: TableOption = ChangedTable.REFUSE) -> None:
    """Bring an interrupted run (its process died) to a consistent state, forward or back."""
    record = services.recover(require_estate(workspace), run_id, table)
    typer.echo(f"{record.run_id}: {record.status.value}: {record.outcome}")


def promote(
    model: str, version: int, reason: ReasonOption, workspace: WorkspaceOption = None, as_: ActorOption = None
) -> None:
    """Make VERSION the champion — only if the gate APPROVED it."""
    typer.echo(services.promote(require_estate(workspace), model, version, reason, actor=actor(as_)).outcome)


runs_app = typer.Typer(help="List runs and show a run's timeline.", invoke_without_command=True)


@runs_app.callback()
def runs(
    ctx: typer.Context,
    workspace: WorkspaceOption = None,
    pipeline: Annotated[Optional[str], typer.Option(help="Only this pipeline's runs.")] = None,
    json_out: JsonOption = False,
) -> None:
    """List runs (newest last); unreadable run records are reported, never fatal."""
    if ctx.invoked_subcommand is not None:
        return
    listing = services.runs(require_estate(workspace), pipeline)
    if json_out:
        typer.echo(json.dumps(views.runs_out(listing), indent=2))
        return
    typer.echo(runs_table(list(reversed(listing.runs))))
    for bad in listing.unreadable:
        typer.echo(f"unreadable run {bad.run_id}: {bad.why}", err=True)


@runs_app.command("show")
def runs_show(
    run_id: str,
    workspace: WorkspaceOption = None,
    json_out: JsonOption = False,
    decision: Annotated[
        bool,
        typer.Option(
            "--decision",
            help="Only the decision, as JSON: the blocking findings, the gate's verdict and reasons, candidate vs "
            "champion, what a person must decide, the next call (what MCP's get_run returns).",
        ),
    ] = False,
) -> None:
    """A run's timeline, stage by stage, with its evidence and ledger."""
    record = services.get_run(require_estate(workspace), run_id)
    if decision:
        typer.echo(json.dumps(views.run_decision(record), indent=2))
        return
    typer.echo(json.dumps(views.run_out(record), indent=2) if json_out else timeline(record))


def register(app: typer.Typer) -> None:
    for command in (run, guard, approve, reject, accept, undo, recover, promote):
        app.command()(command)
    app.add_typer(runs_app, name="runs")
