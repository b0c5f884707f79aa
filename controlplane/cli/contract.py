"""`kintsugi contract infer | apply | show`: data contracts (ODCS v3) in DataHub."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from controlplane.cli.lazy import contracts, services
from controlplane.cli.options import UnreadWorkspaceOption, WorkspaceOption, require_estate
from controlplane.workspace import resolve_workspace

__all__ = ["register"]

contract_app = typer.Typer(help="Data contracts (ODCS v3) in DataHub.", no_args_is_help=True)


@contract_app.command("infer")
def contract_infer(
    data: Path,
    dataset: Annotated[str, typer.Option(help="DataHub URN of the dataset the contract governs.")],
    unit: Annotated[Optional[list[str]], typer.Option(help="COLUMN=UNIT, once per numeric column.")] = None,
    out: Annotated[Optional[Path], typer.Option(help="Write the YAML here instead of stdout.")] = None,
    workspace: UnreadWorkspaceOption = None,
) -> None:
    """Propose an ODCS contract from a reference snapshot, for review (reads the file only, no workspace)."""
    text, unanswered = contracts.infer_contract(data, dataset, unit or [])
    if out is not None:
        out.write_text(text)
    else:
        typer.echo(text, nl=False)
    if unanswered:
        typer.echo(
            f"units guessed, to review: {', '.join(unanswered)}; answer with --unit COLUMN=UNIT (or "
            "COLUMN=none), or edit the YAML before `kintsugi contract apply`",
            err=True,
        )


@contract_app.command("apply")
def contract_apply(
    file: Path,
    workspace: WorkspaceOption = None,
    reference: Annotated[
        Optional[Path], typer.Option(help="Record this parquet file's profile as the reference.")
    ] = None,
) -> None:
    """Validate an ODCS contract, keep it under contracts/, and write it (and a reference profile) to DataHub."""
    urn = services.apply_contract(resolve_workspace(workspace).ensure(), file, reference)
    typer.echo(f"contract for {urn} written to DataHub" + (" with its reference profile" if reference else ""))


@contract_app.command("show")
def contract_show(urn: str, workspace: WorkspaceOption = None) -> None:
    """Print the contract DataHub holds for a dataset URN."""
    typer.echo(services.show_contract(require_estate(workspace), urn))


def register(app: typer.Typer) -> None:
    app.add_typer(contract_app, name="contract")
