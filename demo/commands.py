"""`kintsugi demo`, registered into the CLI through the `kintsugi.commands` entry point."""

from __future__ import annotations

import shutil
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Annotated

import typer

from controlplane.cli.options import WorkspaceOption, echo_event
from controlplane.datahub.config import load_gms_config
from controlplane.errors import InputError, WorkspaceError
from controlplane.workspace import Workspace, resolve_workspace

if TYPE_CHECKING:
    from demo.serving import ServedDay

__all__ = ["demo", "register", "served_table", "trust_line"]


def demo(
    workspace: WorkspaceOption = None,
    seed: Annotated[int, typer.Option(help="Generator seed.")] = 7,
    reset: Annotated[bool, typer.Option(help="Wipe the workspace first.")] = False,
    to_gms: Annotated[
        bool, typer.Option("--to-gms", help="Seed the synthetic estate into the configured DataHub GMS.")
    ] = False,
    table_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="How the feature tables are kept: parquet (one file each) or delta (Delta Lake tables: the heal is "
            "one commit, undo is time travel).",
        ),
    ] = "parquet",
) -> None:
    """Seed the estate, promote a champion, inject a unit failure, heal it, and show the impact."""
    from demo.feature_tables import FORMATS
    from demo.serving import serve_next_day
    from demo.story import run_demo

    if table_format not in FORMATS:
        raise InputError(
            f"--format {table_format!r} is not a table format the demo keeps", "use --format parquet, delta or iceberg"
        )
    ws = resolve_workspace(workspace)
    if load_gms_config(ws) is not None and not to_gms:
        raise WorkspaceError(
            "a DataHub GMS is configured; the demo would write a synthetic estate into it",
            "unset DATAHUB_GMS_URL for the demo, or pass --to-gms",
        )
    if ws.datahub_db.exists() and not reset:
        raise WorkspaceError(
            f"workspace {ws.root} already holds an estate",
            "pass --reset to start over, or --workspace DIR for a new one",
        )
    if reset and ws.root.exists():
        shutil.rmtree(ws.root)
    started = time.monotonic()
    today = datetime.now(timezone.utc).replace(minute=0, second=0, microsecond=0)
    # the story ends a day back, so that the next day it serves is today: the estate is never in the future
    result = run_demo(
        ws.ensure(),
        seed=seed,
        now=today - timedelta(days=1),
        say=typer.echo,
        listener=echo_event,
        table_format=table_format,
    )
    typer.echo("[5/5] the next day the feed is still broken: its batch lands, the loop runs, the models serve it")
    served = serve_next_day(ws, result.healed, seed=seed, now=result.now, listener=echo_event)
    typer.echo(f"  outcome: {served.run.outcome}")
    typer.echo("\n" + served_table(served))
    typer.echo("\n" + trust_line(ws, served.champion))
    typer.echo(f"\nworkspace {ws.root}  ({time.monotonic() - started:.0f} s)")


def served_table(served: ServedDay) -> str:
    """The next day's served error of each model, as measured, in one short table."""
    rows = [
        ("without the gate: the day's retrain", "served the feed as sent", served.without_gate),
        (
            f"with Kintsugi: the champion v{served.champion} after the day's run",
            "served the batch it healed",
            served.healed,
        ),
        (f"clean baseline: the champion v{served.champion}", "served as a working feed sends", served.clean),
    ]
    lines = [f"=== served the next day: {served.rows} deliveries, ETA error ({served.metric.upper()}, minutes) ==="]
    lines += [f"  {model:<54} {batch:<31} {score:6.2f} min" for model, batch, score in rows]
    lines.append(f"  ({served.gap_measures})")
    return "\n".join(lines)


def trust_line(ws: Workspace, version: int) -> str:
    """The champion's trust score and its deductions, as DataHub's structured properties hold them."""
    from controlplane.datahub.connect import metadata_session
    from controlplane.datahub.trust_properties import read_trust
    from controlplane.datahub.urns import model_urn
    from demo.seed import PIPELINE

    with metadata_session(ws, read_only=True) as metadata:
        trust = read_trust(metadata, model_urn(PIPELINE, version))
    if trust is None or trust.score is None:
        return f"=== trust of the champion v{version}: not recorded ==="
    taken = "; ".join(f"-{d.points} {d.reason}" for d in trust.deductions) or "no deduction"
    return f"=== trust of the champion v{version}: {trust.score:.0f}/100, {trust.band} ({taken}) ==="


def register(app: typer.Typer) -> None:
    app.command()(demo)
