"""`kintsugi passport show | verify`, `kintsugi trust`, `kintsugi audit` and `kintsugi incidents`: models and what they
rest on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from controlplane.cli.lazy import passport, passports, services, views
from controlplane.cli.options import JsonOption, WorkspaceOption, require_estate
from controlplane.vocab import EXIT_BLOCKED

__all__ = ["register"]

passport_app = typer.Typer(help="Model Passports: show and verify.", no_args_is_help=True)


@passport_app.command("show")
def passport_show(
    model: str, version: Annotated[Optional[int], typer.Argument()] = None, workspace: WorkspaceOption = None
) -> None:
    """Print a version's passport (default: the champion's)."""
    typer.echo(json.dumps(passports.show_passport(require_estate(workspace), model, version), indent=2, sort_keys=True))


@passport_app.command("verify")
def passport_verify(
    model: str,
    version: Annotated[Optional[int], typer.Argument()] = None,
    workspace: WorkspaceOption = None,
    public_key: Annotated[
        Optional[Path], typer.Option("--public-key", help="Trust this public key (PEM) instead of the workspace's.")
    ] = None,
) -> None:
    """Check a passport with the public key only: its signature, the model's files, and that DataHub and MLflow
    hold the same document. Exit 1 if not."""
    check = passports.verify_passport(require_estate(workspace), model, version, public_key=public_key)
    typer.echo(
        (f"verified ({check.status}): " if check.ok else f"NOT verified ({check.status}): ") + "; ".join(check.reasons)
    )
    raise typer.Exit(0 if check.ok else EXIT_BLOCKED)


@passport_app.command("key")
def passport_key(workspace: WorkspaceOption = None) -> None:
    """Print the public key passports are signed with (created on first use), and its id."""
    key = passport.public_key(require_estate(workspace))
    typer.echo(f"key id {key.keyid}\n{key.pem.decode()}", nl=False)


def trust(
    model: str, version: Annotated[Optional[int], typer.Argument()] = None, workspace: WorkspaceOption = None
) -> None:
    """A version's trust score (default: the champion's) with its named deductions, as its signed passport states
    it, and whether that passport verifies now. Exit 1 if it does not."""
    view = services.trust(require_estate(workspace), model, version)
    score = view.trust
    typer.echo(
        f"{view.model} v{view.version}: trust {score.score}/100 ({score.band.value}); passport {view.check.status}"
    )
    for deduction in score.deductions:
        typer.echo(f"  -{deduction.points:<3} {deduction.reason}: {deduction.evidence}")
    if not score.deductions:
        typer.echo("  no deductions")
    raise typer.Exit(0 if view.check.ok else EXIT_BLOCKED)


def governance(pipeline: str, workspace: WorkspaceOption = None) -> None:
    """The governance scan of PIPELINE's training lineage as DataHub holds it now, read-only, before any training:
    each finding with its severity. Exit 1 if one would block a candidate."""
    findings = services.governance(require_estate(workspace), pipeline)
    for finding in findings:
        typer.echo(f"{finding.severity.value:<9} {finding.kind.value}: {finding.message}")
    if not findings:
        typer.echo(f"{pipeline}: nothing in the training lineage for the gate to block, review or note")
    raise typer.Exit(EXIT_BLOCKED if any(f.severity.value == "block" for f in findings) else 0)


def audit(
    model: Annotated[Optional[str], typer.Argument(help="A model name; omit with --all.")] = None,
    all_models: Annotated[bool, typer.Option("--all", help="Audit every model.")] = False,
    write: Annotated[bool, typer.Option(help="Tag unsafe versions in DataHub.")] = False,
    workspace: WorkspaceOption = None,
) -> None:
    """Recompute each version's data health at its training instant; exit 1 if a champion is unsafe."""
    if model is None and not all_models:
        raise typer.BadParameter("name a MODEL or pass --all", param_hint="MODEL")
    rows = passports.audit_versions(require_estate(workspace), None if all_models else model, write=write)
    ws = require_estate(workspace)
    for row in rows:
        state = "UNSAFE" if row.unsafe else "ok"
        flag = " (passport disagrees)" if row.disagrees else ""
        signature = "" if row.signature == "valid" else f" signature {row.signature}"
        typer.echo(
            f"{row.model} v{row.version}{' [champion]' if row.champion else ''}: {state}{flag}{signature} "
            + (f"unhealed at training: {', '.join(row.recomputed)}" if row.recomputed else "")
        )
    disagree = [
        line for name in sorted({r.model for r in rows}) for ok, line in [passports.champions_agree(ws, name)] if not ok
    ]
    for line in disagree:
        typer.echo(f"DataHub and MLflow disagree on the champion: {line}")
    raise typer.Exit(EXIT_BLOCKED if any(r.champion and r.unsafe for r in rows) or disagree else 0)


def incidents(
    workspace: WorkspaceOption = None,
    active: Annotated[bool, typer.Option("--active", help="Only ACTIVE incidents.")] = False,
    json_out: JsonOption = False,
) -> None:
    """Incidents in DataHub, with the models downstream of each (at risk)."""
    found = services.incidents(require_estate(workspace), active_only=active)
    if json_out:
        typer.echo(json.dumps(views.incidents_out(found)["incidents"], indent=2))
        return
    for info in found:
        typer.echo(
            f"{info.row.state:<9} {info.row.urn}  {info.row.title}\n          at risk: "
            + (", ".join(info.at_risk_models) or "no model")
        )
    if not found:
        typer.echo("no incidents")


def register(app: typer.Typer) -> None:
    app.add_typer(passport_app, name="passport")
    app.command()(audit)
    app.command()(trust)
    app.command()(governance)
    app.command()(incidents)
