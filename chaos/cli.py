"""Front doors for chaos: `kintsugi chaos inject|revert|list` (a Typer sub-app) and `kintsugi drill`.

Registered into the CLI through the `kintsugi.commands` entry point (`register`). Errors are KintsugiErrors:
the CLI prints one line and exits 2.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from chaos.errors import InjectionError
from controlplane.errors import WorkspaceError
from controlplane.workspace import Workspace, resolve_workspace

__all__ = ["chaos_app", "drill_command", "register"]

chaos_app = typer.Typer(
    help="Chaos game days: inject a silent failure by hand, then revert to the exact bytes.", no_args_is_help=True
)

WorkspaceOption = Annotated[
    Optional[Path],
    typer.Option(
        "--workspace", "-w", help="Workspace folder (default: $KINTSUGI_HOME or ./.kintsugi).", show_default=False
    ),
]
PipelineOption = Annotated[str, typer.Option("--pipeline", "-p", help="The pipeline whose feature table to corrupt.")]


def _workspace(option: Path | None) -> Workspace:
    ws = resolve_workspace(option)
    if not ws.datahub_db.exists():
        raise WorkspaceError(
            f"no Kintsugi estate in {ws.root}", "run `kintsugi demo` first, or pass --workspace DIR / set KINTSUGI_HOME"
        )
    return ws


@chaos_app.command("inject")
def inject(
    scenario: Annotated[str, typer.Argument(help="A scenario name (see `kintsugi chaos list`).")],
    pipeline: PipelineOption,
    workspace: WorkspaceOption = None,
    seed: Annotated[int, typer.Option(help="Seed of the rows chosen and any noise drawn.")] = 0,
    magnitude: Annotated[
        Optional[float], typer.Option(help="How hard to hit (default: the scenario's; its unit is in `chaos list`).")
    ] = None,
    rows: Annotated[
        Optional[str],
        typer.Option(help="random | window (of the column itself) | window:COLUMN (default: the scenario's)."),
    ] = None,
) -> None:
    """Corrupt PIPELINE's feature table (or its upstreams in DataHub) as SCENARIO; the original bytes are kept."""
    from chaos.failures.selection import Selection
    from chaos.gameday.corrupt import inject_game_day

    game = inject_game_day(
        _workspace(workspace),
        pipeline,
        scenario,
        seed=seed,
        magnitude=magnitude,
        selection=Selection.parse(rows) if rows else None,
    )
    expected = game.expected
    where = expected["upstream"] or "/".join(expected["columns"]) or "the dataset"
    typer.echo(
        f"injected {game.scenario} (magnitude {game.magnitude:g}, rows {game.selection}, seed {game.seed}) "
        f"into {game.pipeline}: {game.summary}"
    )
    typer.echo(
        f"the guard should raise {expected['kind']} on {where}; "
        + (
            "a playbook should heal it"
            if expected["healable"]
            else "no playbook heals it: the loop should hold it back"
        )
    )
    typer.echo(
        f"now run `kintsugi run {game.pipeline}`; afterwards `kintsugi chaos revert --pipeline {game.pipeline}` "
        f"restores {game.data} to {game.original_hash}"
    )


@chaos_app.command("revert")
def revert(pipeline: PipelineOption, workspace: WorkspaceOption = None) -> None:
    """Restore the exact bytes PIPELINE's table had before `chaos inject`, and undo upstream metadata."""
    from chaos.gameday.corrupt import revert_game_day

    game = revert_game_day(_workspace(workspace), pipeline)
    typer.echo(
        f"reverted {game.scenario} on {game.pipeline}: {game.data} is back to {game.original_hash}"
        + (f"; {len(game.undo)} DataHub aspect(s) restored" if game.undo else "")
    )


@chaos_app.command("list")
def list_scenarios(
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    workspace: WorkspaceOption = None,
) -> None:
    """The registered scenarios: what each corrupts and what the guard should say (the same in every workspace)."""
    from chaos.drill.demo import default_scenarios
    from chaos.drill.observe import expected_outcome
    from chaos.failures.catalog import get_scenario

    described = [
        {**get_scenario(n).describe(), "outcome": expected_outcome(get_scenario(n))} for n in default_scenarios()
    ]
    if json_out:
        typer.echo(json.dumps(described, indent=2))
        return
    for d in described:
        where = (d["upstream"] or "").split(",")[1:2] or d["columns"] or ["the dataset"]
        typer.echo(
            f"{d['name']:<20} {d['kind']:<22} {'/'.join(where):<28} "
            f"{d['outcome']:<13} magnitude {d['magnitude']:g} ({d['magnitude_unit']})"
        )


def drill_command(
    scenarios: Annotated[
        Optional[list[str]],
        typer.Option(
            "--scenarios", "-s", help="Scenario names, repeated or comma-separated (default: all).", show_default=False
        ),
    ] = None,
    seeds: Annotated[
        Optional[int], typer.Option(help="Seeds per scenario (1..N; default 3, with --pipeline 1).", show_default=False)
    ] = None,
    controls: Annotated[
        Optional[int],
        typer.Option(
            help="Clean control runs, spread over the seeds (default "
            "20); with --pipeline the newest clean batches, newest first "
            "(default 3).",
            show_default=False,
        ),
    ] = None,
    sweep_seeds: Annotated[
        int, typer.Option(help="Seeds the magnitude sweeps run on (0: no sweep; not with --pipeline).")
    ] = 1,
    jobs: Annotated[int, typer.Option(help="Worker processes (0: one per CPU, at most 4).")] = 0,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the scoreboard as JSON (progress goes to stderr).")
    ] = False,
    out: Annotated[Optional[Path], typer.Option(help="Write scoreboard.json, .md and .png here.")] = None,
    keep: Annotated[
        Optional[Path],
        typer.Option(
            help="Keep the throwaway estates in this folder (and reuse the seeds' clean estates already there)."
        ),
    ] = None,
    pipeline: Annotated[
        Optional[str],
        typer.Option(
            "--pipeline",
            "-p",
            help="Drill this onboarded pipeline of the workspace (on scratch copies of it) instead of the demo estate.",
            show_default=False,
        ),
    ] = None,
    scope: Annotated[
        str, typer.Option(help="With --pipeline: corrupt the newest batch only (batch), every row (all-rows), or both.")
    ] = "both",
    now: Annotated[
        Optional[str],
        typer.Option(
            "--now",
            help="With --pipeline: when the runs happen (default: an hour after the workspace's last run).",
            show_default=False,
        ),
    ] = None,
    family: Annotated[
        str,
        typer.Option(
            help="With --pipeline: whose failures: ours (this project's injectors) or badgers (a library nobody "
            "here wrote, at its defaults and at half of them; pip install badgers)."
        ),
    ] = "ours",
    workspace: WorkspaceOption = None,
) -> None:
    """Score the loop like a benchmark: every scenario in a throwaway estate, through the real loop.

    With --pipeline NAME, the scenarios that apply to that onboarded pipeline, in its newest batch and in every
    row, on scratch copies of its workspace, plus its newest clean batches as controls.
    Exit 0 when every scenario passed on every seed with no false alarm, 1 otherwise, 2 on error.
    Never touches your workspace.
    """
    from chaos.drill.report import markdown, write_reports

    names = tuple(n.strip() for value in (scenarios or []) for n in value.split(",") if n.strip())
    keep = keep.resolve() if keep is not None else None  # the copies' specs name paths under it: never relative
    if family != "ours" and pipeline is None:
        raise InjectionError(f"--family {family} drills an onboarded pipeline", "add --pipeline NAME")
    if pipeline is not None:  # progress on stderr: stdout is the scoreboard
        say: Callable[[str], None] = lambda line: typer.echo(line, err=True)  # noqa: E731
        board = _pipeline_drill(pipeline, workspace, names, seeds, controls, jobs, scope, now, keep, say, family)
    else:
        say = lambda line: typer.echo(line, err=json_out)  # noqa: E731
        from chaos.drill.demo import DEFAULT_CONTROLS, DEFAULT_SEEDS, DrillPlan, default_scenarios, run_drill

        plan = DrillPlan(
            names or default_scenarios(),
            tuple(range(1, (seeds or DEFAULT_SEEDS) + 1)),
            DEFAULT_CONTROLS if controls is None else controls,
            sweep_seeds,
            _jobs(jobs),
        )
        board = run_drill(plan, say=say, keep=keep)
    if out is not None:
        written = write_reports(board, out)
        typer.echo("wrote " + ", ".join(str(p) for p in written), err=json_out or pipeline is not None)
    if json_out:
        typer.echo(json.dumps(board, indent=2, sort_keys=True))
    else:
        typer.echo("\n" + markdown(board))
    raise typer.Exit(0 if not board["scenarios_failed"] and not board["false_alarms"] else 1)


def _jobs(jobs: int) -> int:
    return jobs or min(4, os.cpu_count() or 1)


def _pipeline_drill(
    pipeline: str,
    workspace: Path | None,
    names: tuple[str, ...],
    seeds: int | None,
    controls: int | None,
    jobs: int,
    scope: str,
    now: str | None,
    keep: Path | None,
    say: Callable[[str], None],
    family: str,
) -> dict[str, Any]:
    from chaos.drill.pipeline import DEFAULT_PIPELINE_CONTROLS, PipelinePlan, run_pipeline_drill
    from chaos.drill.pipeline_tasks import SCOPES
    from controlplane.frontdoor.services import parse_now

    ws = resolve_workspace(workspace)
    if not ws.datahub_db.exists():
        raise WorkspaceError(
            f"no Kintsugi workspace in {ws.root}",
            "pass --workspace DIR (or set KINTSUGI_HOME) where `kintsugi init` onboarded the pipeline",
        )
    plan = PipelinePlan(
        pipeline,
        names,
        SCOPES if scope == "both" else (scope,),
        tuple(range(1, (seeds or 1) + 1)),
        DEFAULT_PIPELINE_CONTROLS if controls is None else controls,
        _jobs(jobs),
        parse_now(now),
        family,
    )
    return run_pipeline_drill(ws, plan, say=say, keep=keep)


def register(app: typer.Typer) -> None:
    app.add_typer(chaos_app, name="chaos")
    app.command("drill")(drill_command)
