"""`kintsugi datahub push|pull`, `kintsugi doctor` and `kintsugi workspace adopt`: a team's servers and the
workspace's stores. Errors reach the CLI's one handler (one line, exit 2)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from controlplane.cli.options import WorkspaceOption
from controlplane.datahub.config import ENV_URL, config_path, load_gms_config
from controlplane.errors import MetadataError
from controlplane.workspace import Workspace, resolve_workspace

if TYPE_CHECKING:
    from controlplane.datahub.gms import GmsMetadata

__all__ = ["register"]

datahub_app = typer.Typer(
    help="Publish the workspace's DataHub Lite store to a team's DataHub (GMS), or pull datasets from it.",
    no_args_is_help=True,
)

EXIT_PROBLEMS = 1


@datahub_app.command("push")
def push_command(
    workspace: WorkspaceOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Compare and report; write nothing.")] = False,
) -> None:
    """Publish everything in the workspace's DataHub Lite store, history included, to the configured GMS.

    Idempotent: what GMS already holds is not written again."""
    from controlplane.datahub.sync import plan_push, push

    ws = resolve_workspace(workspace)
    gms = _gms(ws, read_only=dry_run)
    try:
        plan = plan_push(ws.datahub_db, gms)
        if not dry_run:
            push(plan, gms)
    finally:
        gms.close()
    for item in plan.items:
        if item.pending:
            typer.echo(f"  {item.state:<8} {item.aspect} of {item.urn}: {len(item.pending)} version(s)")
    typer.echo(plan.summary(done=not dry_run))


@datahub_app.command("pull")
def pull_command(
    urns: Annotated[list[str], typer.Argument(help="Dataset URNs to bring into the workspace.")],
    workspace: WorkspaceOption = None,
) -> None:
    """Bring datasets (properties, schema, lineage, owners) and their upstreams' properties from the configured
    GMS into the workspace's DataHub Lite store."""
    from controlplane.datahub.lite import LiteMetadata
    from controlplane.datahub.sync import pull

    ws = resolve_workspace(workspace).ensure()
    gms = _gms(ws, read_only=True)
    lite = LiteMetadata(ws.datahub_db)
    try:
        report = pull(gms, lite, urns, int(time.time() * 1000))
    finally:
        gms.close()
        lite.close()
    typer.echo(report.summary())


def doctor_command(workspace: WorkspaceOption = None) -> None:
    """Check the configured DataHub and MLflow: reachable, authenticated, versions, the endpoints the loop uses.
    Exit 0 when all answer, 1 when something does not."""
    from controlplane.frontdoor.doctor import diagnose

    diagnosis = diagnose(resolve_workspace(workspace))
    for line in diagnosis.lines():
        typer.echo(line)
    raise typer.Exit(0 if diagnosis.ok else EXIT_PROBLEMS)


def _gms(ws: Workspace, *, read_only: bool) -> GmsMetadata:
    from controlplane.datahub.gms import GmsMetadata

    config = load_gms_config(ws)
    if config is None:
        raise MetadataError(
            "no DataHub GMS is configured",
            f"set {ENV_URL} (and DATAHUB_GMS_TOKEN), or [datahub] server in {config_path(ws)}",
        )
    return GmsMetadata(config, read_only=read_only)


workspace_app = typer.Typer(help="The workspace's identity and its stores.", no_args_is_help=True)


@workspace_app.command("adopt")
def adopt_command(workspace: WorkspaceOption = None) -> None:
    """Accept the configured DataHub and MLflow as this workspace's stores on purpose (a new server, a restore)."""
    from controlplane.datahub.connect import metadata_session
    from controlplane.models.modelstore import training_errors_mapped
    from controlplane.runs.identity import adopt_stores
    from training.registry import ModelStore

    ws = resolve_workspace(workspace).ensure()
    with metadata_session(ws) as metadata, training_errors_mapped():
        identity = adopt_stores(ws, metadata, ModelStore(ws.mlflow_uri, ws.artifacts))
    typer.echo(
        f"workspace {identity.workspace_id}: DataHub at {metadata.location} and MLflow at {ws.mlflow_uri} "
        "are its stores"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(datahub_app, name="datahub")
    app.command("doctor")(doctor_command)
    app.add_typer(workspace_app, name="workspace")
