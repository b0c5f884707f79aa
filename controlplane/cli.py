"""The `kintsugi` command line: parse input, call the service layer, format output. Errors exit 2."""
from __future__ import annotations

import json
import logging
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

from chaos.cli import chaos_app, drill_command
from controlplane.api.commands import mcp_command, serve_command
from controlplane.datahub.commands import datahub_app, doctor_command
from controlplane.errors import KintsugiError, WorkspaceError
from controlplane.options import WorkspaceOption, require_estate
from controlplane.workspace import resolve_workspace

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Kintsugi: a self-healing continuous-training control plane.")
runs_app = typer.Typer(help="List runs and show a run's timeline.", invoke_without_command=True)
passport_app = typer.Typer(help="Model Passports: show and verify.", no_args_is_help=True)
contract_app = typer.Typer(help="Data contracts (ODCS v3) in DataHub.", no_args_is_help=True)
app.add_typer(runs_app, name="runs")
app.add_typer(contract_app, name="contract")
app.add_typer(passport_app, name="passport")

EXIT_BLOCKED = 1
EXIT_BY_STATUS = {"promoted": 0, "clean": 0, "needs-review": 0, "planned": 0, "paused": 0, "blocked": EXIT_BLOCKED}


NowOption = Annotated[Optional[str], typer.Option("--now", help="Evaluate as of this ISO-8601 instant "
                      "(default: the current time).", show_default=False)]


def _now_ms(text: str | None) -> int | None:
    from controlplane.operations import parse_now

    return parse_now(text)


def _echo_event(event) -> None:  # type: ignore[no-untyped-def]
    from controlplane.render import event_line

    typer.echo(event_line(event))


@app.command()
def demo(workspace: WorkspaceOption = None,
         seed: Annotated[int, typer.Option(help="Generator seed.")] = 7,
         reset: Annotated[bool, typer.Option(help="Wipe the workspace first.")] = False,
         to_gms: Annotated[bool, typer.Option("--to-gms", help="Seed the synthetic estate into the "
                                              "configured DataHub GMS.")] = False) -> None:
    """Seed the estate, promote a champion, inject a unit failure, heal it, and show the impact."""
    from controlplane.datahub.config import load_gms_config
    from controlplane.render import timeline
    from demo.story import run_demo

    ws = resolve_workspace(workspace)
    if load_gms_config(ws) is not None and not to_gms:
        raise WorkspaceError("a DataHub GMS is configured; the demo would write a synthetic estate into it",
                             "unset DATAHUB_GMS_URL for the demo, or pass --to-gms")
    if ws.datahub_db.exists() and not reset:
        raise WorkspaceError(f"workspace {ws.root} already holds an estate",
                             "pass --reset to start over, or --workspace DIR for a new one")
    if reset and ws.root.exists():
        shutil.rmtree(ws.root)
    started = time.monotonic()
    result = run_demo(ws.ensure(), seed=seed, say=typer.echo, listener=_echo_event)
    typer.echo("\n=== first run (clean data) ===\n" + timeline(result.first, with_ledger=False))
    typer.echo("\n=== second run (distance written in metres) ===\n" + timeline(result.healed))
    typer.echo("\n=== customer impact: holdout ETA error (MAE, minutes) ===")
    typer.echo(f"  model trained on poisoned data: {result.mae_poisoned:6.2f} min")
    typer.echo(f"  model trained on healed data:   {result.mae_healed:6.2f} min")
    typer.echo(f"\nworkspace {ws.root}  ({time.monotonic() - started:.0f} s)")


@app.command()
def run(pipeline: str, workspace: WorkspaceOption = None,
        policy: Annotated[Optional[str], typer.Option(help="auto | ratify | dry-run (default: the spec's).")] = None,
        now: NowOption = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print the run record as JSON.")] = False) -> None:
    """Run the loop for PIPELINE. Exit 0 promoted or clean, 1 blocked, 2 error."""
    from controlplane.loop import run_pipeline
    from controlplane.render import timeline
    from controlplane.spec import POLICIES, load_spec

    ws = require_estate(workspace)
    spec = load_spec(ws, pipeline)
    if policy is not None and policy not in POLICIES:
        raise typer.BadParameter(f"policy {policy!r}; use one of {', '.join(POLICIES)}", param_hint="--policy")
    record = run_pipeline(ws, spec, policy=policy, now_ms=_now_ms(now), listener=None if json_out else _echo_event)
    typer.echo(json.dumps(record.to_dict(), indent=2, default=str) if json_out else "\n" + timeline(record))
    raise typer.Exit(EXIT_BY_STATUS.get(record.status, 2))


@app.command()
def guard(pipeline: str, workspace: WorkspaceOption = None,
          data: Annotated[Optional[Path], typer.Option(help="Check this parquet file instead.")] = None,
          now: NowOption = None,
          json_out: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False) -> None:
    """Check PIPELINE's data against its contract. Exit 0 CLEAN, 1 BLOCKED, 2 error."""
    from controlplane.render import report_table
    from controlplane.services import guard_pipeline

    report = guard_pipeline(require_estate(workspace), pipeline, data, _now_ms(now))
    if json_out:
        payload = report.to_dict()
        payload["findings"] = [{k: f[k] for k in ("kind", "dataset", "column", "severity", "observed", "expected",
                                                  "playbook", "message")} for f in payload["findings"]]
        typer.echo(json.dumps(payload, indent=2, default=str))
    else:
        typer.echo(report_table(report))
    raise typer.Exit(0 if report.verdict.value == "CLEAN" else EXIT_BLOCKED)


@app.command()
def approve(run_id: str, workspace: WorkspaceOption = None, now: NowOption = None) -> None:
    """Continue a run paused at a ratify gate (publish or promote); the heal is re-verified first."""
    from controlplane.gates import approve as approve_run
    from controlplane.render import timeline

    record = approve_run(require_estate(workspace), run_id, now_ms=_now_ms(now), listener=_echo_event)
    typer.echo("\n" + timeline(record))
    raise typer.Exit(EXIT_BY_STATUS.get(record.status, 2))


@app.command()
def reject(run_id: str, reason: Annotated[str, typer.Option(help="Why the run is stopped.")],
           workspace: WorkspaceOption = None) -> None:
    """Stop a run paused at a ratify gate: nothing more is published or promoted."""
    from controlplane.gates import reject as reject_run

    record = reject_run(require_estate(workspace), run_id, reason)
    typer.echo(record.outcome)


@app.command()
def undo(run_id: str, workspace: WorkspaceOption = None) -> None:
    """Take back a run: restore the exact bytes it replaced, move `champion` back, reopen its incidents."""
    from controlplane.gates import undo as undo_run

    record = undo_run(require_estate(workspace), run_id)
    typer.echo(record.outcome)


@app.command()
def promote(model: str, version: int, workspace: WorkspaceOption = None) -> None:
    """Make VERSION the champion — only if the gate APPROVED it."""
    from controlplane.gates import promote_version

    before = promote_version(require_estate(workspace), model, version)
    typer.echo(f"{model} v{version} is champion" + (f" (v{before} is previous)" if before else ""))


@app.command()
def incidents(workspace: WorkspaceOption = None,
              active: Annotated[bool, typer.Option("--active", help="Only ACTIVE incidents.")] = False,
              json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Incidents in DataHub, with the models downstream of each (at risk)."""
    from controlplane.services import list_incidents

    rows = list_incidents(require_estate(workspace), active_only=active)
    if json_out:
        typer.echo(json.dumps(rows, indent=2))
        return
    for row in rows:
        typer.echo(f"{row['state']:<9} {row['urn']}  {row['title']}\n          at risk: "
                   + (", ".join(row["at_risk_models"]) or "no model"))
    if not rows:
        typer.echo("no incidents")


@passport_app.command("show")
def passport_show(model: str, version: Annotated[Optional[int], typer.Argument()] = None,
                  workspace: WorkspaceOption = None) -> None:
    """Print a version's passport (default: the champion's)."""
    from controlplane.passports import show_passport

    typer.echo(json.dumps(show_passport(require_estate(workspace), model, version), indent=2, sort_keys=True))


@passport_app.command("verify")
def passport_verify(model: str, version: Annotated[Optional[int], typer.Argument()] = None,
                    workspace: WorkspaceOption = None) -> None:
    """Check a passport's signature and that DataHub and MLflow hold the same document. Exit 1 if not."""
    from controlplane.passports import verify_passport

    check = verify_passport(require_estate(workspace), model, version)
    typer.echo(("verified: " if check.ok else "NOT verified: ") + "; ".join(check.reasons))
    raise typer.Exit(0 if check.ok else EXIT_BLOCKED)


@app.command()
def audit(model: Annotated[Optional[str], typer.Argument(help="A model name; omit with --all.")] = None,
          all_models: Annotated[bool, typer.Option("--all", help="Audit every model.")] = False,
          write: Annotated[bool, typer.Option(help="Tag unsafe versions in DataHub.")] = False,
          workspace: WorkspaceOption = None) -> None:
    """Recompute each version's data health at its training instant; exit 1 if a champion is unsafe."""
    from controlplane.passports import audit_versions

    if model is None and not all_models:
        raise typer.BadParameter("name a MODEL or pass --all", param_hint="MODEL")
    rows = audit_versions(require_estate(workspace), None if all_models else model, write=write)
    for row in rows:
        state = "UNSAFE" if row.unsafe else "ok"
        flag = " (passport disagrees)" if row.disagrees else ""
        typer.echo(f"{row.model} v{row.version}{' [champion]' if row.champion else ''}: {state}{flag} "
                   + (f"unhealed at training: {', '.join(row.recomputed)}" if row.recomputed else ""))
    raise typer.Exit(EXIT_BLOCKED if any(r.champion and r.unsafe for r in rows) else 0)


@runs_app.callback()
def runs(ctx: typer.Context, workspace: WorkspaceOption = None) -> None:
    """List runs (newest last)."""
    if ctx.invoked_subcommand is None:
        from controlplane.journal import list_runs
        from controlplane.render import runs_table

        typer.echo(runs_table(list_runs(require_estate(workspace))))


@runs_app.command("show")
def runs_show(run_id: str, workspace: WorkspaceOption = None) -> None:
    """A run's timeline, stage by stage, with its evidence and ledger."""
    from controlplane.journal import load_run
    from controlplane.render import timeline

    typer.echo(timeline(load_run(require_estate(workspace), run_id)))


@contract_app.command("infer")
def contract_infer(data: Path,
                   dataset: Annotated[str, typer.Option(help="DataHub URN of the dataset the contract governs.")],
                   unit: Annotated[Optional[list[str]], typer.Option(help="COLUMN=UNIT, once per numeric column "
                                                                    "(see guard/units.py).")] = None,
                   out: Annotated[Optional[Path], typer.Option(help="Write the YAML here instead of stdout.")] = None
                   ) -> None:
    """Propose an ODCS contract from a reference snapshot, for review. Units are asked for, never guessed."""
    from controlplane.services import infer_contract

    text, unanswered = infer_contract(data, dataset, unit or [])
    if out is not None:
        out.write_text(text)
    else:
        typer.echo(text, nl=False)
    if unanswered:
        typer.echo(f"unit not declared for: {', '.join(unanswered)}; answer with --unit COLUMN=UNIT, or replace "
                   "`unit: ?` by a unit (or delete it for unitless columns) before `kintsugi contract apply`", err=True)


@contract_app.command("apply")
def contract_apply(file: Path, workspace: WorkspaceOption = None,
                   reference: Annotated[Optional[Path], typer.Option(help="Record this parquet file's profile "
                                                                     "as the reference.")] = None) -> None:
    """Validate an ODCS contract and write it (and optionally a reference profile) to DataHub."""
    from controlplane.services import apply_contract

    urn = apply_contract(resolve_workspace(workspace).ensure(), file, reference)
    typer.echo(f"contract for {urn} written to DataHub" + (" with its reference profile" if reference else ""))


@contract_app.command("show")
def contract_show(urn: str, workspace: WorkspaceOption = None) -> None:
    """Print the contract DataHub holds for a dataset URN."""
    from controlplane.services import show_contract

    typer.echo(show_contract(require_estate(workspace), urn))


app.command("mcp")(mcp_command)
app.command("serve")(serve_command)
app.add_typer(datahub_app, name="datahub")
app.command("doctor")(doctor_command)
app.add_typer(chaos_app, name="chaos")
app.command("drill")(drill_command)


def _quiet_libraries() -> None:
    """Third-party chatter (MLflow's table migrations, schema hints) is not the user's business."""
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")  # a dead tracking server fails in seconds,
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")     # not after minutes of MLflow's own retries
    for name in ("mlflow", "alembic", "datahub", "urllib3"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


def main() -> None:
    _quiet_libraries()
    try:
        code = app(standalone_mode=False)  # click returns a command's Exit code instead of raising it
    except KintsugiError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        sys.exit(2)
    except typer.TyperException as exc:  # usage errors and bad parameters
        typer.echo(f"error: {exc.format_message() if hasattr(exc, 'format_message') else exc}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
