"""The drill on any onboarded pipeline: its own scenarios, each in the newest batch only and in every row, through
the real loop on scratch copies of its workspace, plus clean controls; then the scoreboard.

    copy the workspace once (chaos.drill.copies) ─► per scenario x scope x seed: fork, corrupt, run the loop, read back
                                          └─► per control: fork, the clean batch (the newest, then earlier ones)

The workspace is only read (under the pipeline's lock, while it is copied). Scenarios come from the pipeline's
contract and spec (`chaos.failures.generic`); those that do not apply are skipped and listed with why. The work runs in
spawned workers under `chaos.drill.demo.isolated` like the demo's drill. The scoreboard has the demo drill's shape
(`chaos.drill.scoreboard.build_scoreboard`), with `drill.mode = "pipeline"`, a row per scenario@scope, and:
`detected` = a blocking finding; `localized` = a blocking finding names the true cause (kind, column, and for a
unit change the unit); a correction is judged against the clean newest batch's run (a heal that verifies should
end as the clean batch ended); a quarantine leaves its rows as they came and its incident open; a block leaves
the run BLOCKED and the incident open; no published cell may hold an invented value. A control's alarm is a
blocking finding (or a run that stopped before training) on a clean batch; warnings are listed, not counted.
Controls are the newest clean batches with at least MIN_CONTROL_REFERENCE batches before them.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from chaos.drill.copies import PipelineCopy, contract_of, copy_pipeline
from chaos.drill.demo import isolated, workers
from chaos.drill.pipeline_tasks import SCOPES, expected_of, held_right, judge_case, run_case, run_control
from chaos.drill.scoreboard import build_scoreboard
from chaos.errors import InjectionError, UnknownScenario
from chaos.failures.families import FAMILIES, NAMES, family_scenarios
from chaos.failures.generic import Skipped
from chaos.failures.registry import Scenario
from controlplane.spec import load_spec
from controlplane.workspace import Workspace

__all__ = ["PipelinePlan", "run_pipeline_drill", "DEFAULT_PIPELINE_CONTROLS", "MIN_CONTROL_REFERENCE", "control_count"]

DEFAULT_PIPELINE_CONTROLS = 3
# a control is a clean batch run against the batches before it: with fewer than this many, the reference holds
# too little of the data's natural variation for a block on it to say anything about the guard
MIN_CONTROL_REFERENCE = 3
Say = Callable[[str], None]


@dataclass(frozen=True)
class PipelinePlan:
    pipeline: str
    scenarios: tuple[str, ...] = ()  # (): every scenario of the family that applies
    scopes: tuple[str, ...] = SCOPES
    seeds: tuple[int, ...] = (1,)
    controls: int = DEFAULT_PIPELINE_CONTROLS  # clean batches run as controls: the newest, then earlier ones
    jobs: int = 1
    now_ms: int | None = None  # when the runs happen (default: an hour after the workspace's last run)
    family: str = "ours"  # whose failures: ours (chaos.failures.generic) or badgers (chaos.failures.thirdparty)

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise UnknownScenario(f"unknown family of failures {self.family!r}", f"use one of: {', '.join(FAMILIES)}")
        unknown = sorted(set(self.scenarios) - set(NAMES[self.family]))
        if unknown:
            raise UnknownScenario(
                f"unknown {self.family} drill scenario(s): {', '.join(unknown)}",
                f"use some of: {', '.join(NAMES[self.family])}",
            )
        if not self.scopes or set(self.scopes) - set(SCOPES):
            raise InjectionError(f"scopes {', '.join(self.scopes) or 'none'}", f"use {' and/or '.join(SCOPES)}")
        if not self.seeds or self.controls < 0 or self.jobs < 1:
            raise InjectionError(
                f"seeds={len(self.seeds)}, controls={self.controls}, jobs={self.jobs}",
                "use --seeds >= 1, --controls >= 0 and --jobs >= 1",
            )


def run_pipeline_drill(
    ws: Workspace, plan: PipelinePlan, *, say: Say = lambda _: None, keep: Path | None = None
) -> dict[str, Any]:
    """Run the plan on scratch copies of `ws`; `say` gets one progress line per step."""
    started = time.monotonic()
    load_spec(ws, plan.pipeline)  # an unknown pipeline is one line before anything is copied
    root = Path(tempfile.mkdtemp(prefix="kintsugi-drill-")) if keep is None else keep
    root.mkdir(parents=True, exist_ok=True)
    try:
        copy = copy_pipeline(ws, plan.pipeline, root, plan.now_ms)
        with isolated():
            chosen, skipped = _chosen(copy, plan)
            _say_copy(copy, plan, chosen, skipped, say)
            with workers(plan.jobs) as submit:
                runs, controls = _work(copy, plan, chosen, submit, say, keep is not None)
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    board = _board(copy, plan, chosen, skipped, runs, controls)
    board["timings"] = {"drill_seconds": round(time.monotonic() - started, 1), "jobs": plan.jobs}
    return board


def _chosen(copy: PipelineCopy, plan: PipelinePlan) -> tuple[dict[str, Scenario], list[Skipped]]:
    spec = load_spec(copy.base, copy.pipeline)
    built, skipped = family_scenarios(plan.family, contract_of(copy.base, spec), spec)
    wanted = set(plan.scenarios or NAMES[plan.family])
    return {s.name: s for s in built if s.name in wanted}, [s for s in skipped if s.name in wanted]


def control_count(copy: PipelineCopy, wanted: int) -> int:
    """How many of the newest batches run as controls: at most `wanted`, each with MIN_CONTROL_REFERENCE before it."""
    return max(0, min(wanted, copy.newest - MIN_CONTROL_REFERENCE + 1))


def _say_copy(
    copy: PipelineCopy, plan: PipelinePlan, chosen: dict[str, Scenario], skipped: list[Skipped], say: Say
) -> None:
    newest = copy.batches[-1]
    say(
        f"copy    {copy.pipeline}: {len(copy.batches)} batches; the newest ({newest.batch_id}) is corrupted; runs at "
        f"{_iso(copy.now_ms)}"
    )
    controls = control_count(copy, plan.controls)
    if controls < plan.controls:
        say(
            f"controls {controls} of {plan.controls}: only the newest {controls} batch(es) have "
            f"{MIN_CONTROL_REFERENCE} batches before them to be judged against"
        )
    for s in chosen.values():
        say(f"scenario {s.name:<16} {s.summary} -> expect {s.kind.value}, {expected_of(s)}")
    for skip in skipped:
        say(f"skipped {skip.name:<16} {skip.why}")


def _work(
    copy: PipelineCopy, plan: PipelinePlan, chosen: dict[str, Scenario], submit: Any, say: Say, keep: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    jobs = [("control", submit(run_control, copy, i, keep)) for i in range(control_count(copy, plan.controls))]
    jobs += [
        ("run", submit(run_case, copy, name, scope, seed, keep))
        for name in chosen
        for scope in plan.scopes
        for seed in plan.seeds
    ]
    found: dict[str, list[dict[str, Any]]] = {"run": [], "control": []}
    for done, (kind, future) in enumerate(jobs, start=1):
        result = future.result()
        found[kind].append(result)
        say(f"[{done:>3}/{len(jobs)}] " + _progress(kind, result))
    return found["run"], found["control"]


def _progress(kind: str, result: dict[str, Any]) -> str:
    if kind == "control":
        alarm = "ALARM" if result["alarm"] else "quiet"
        return (
            f"{alarm} control batch {result['batch']}: {result['status']}"
            + (f" {', '.join(result['findings'])}" if result["findings"] else "")
            + (f" (warnings: {', '.join(result['warnings'])})" if result.get("warnings") else "")
        )
    findings = ", ".join(result["findings"]) or "no finding"
    return f"ran  {result['scenario']:<26} seed {result['seed']}: {result['status']:<12} {findings}"


def _board(
    copy: PipelineCopy,
    plan: PipelinePlan,
    chosen: dict[str, Scenario],
    skipped: list[Skipped],
    runs: list[dict[str, Any]],
    controls: list[dict[str, Any]],
) -> dict[str, Any]:
    cases = {f"{name}@{scope}": s for name, s in chosen.items() for scope in plan.scopes}
    control = next((c["status"] for c in controls if c["batch_seed"] == 0), None)
    for run in runs:
        scenario = cases[run["scenario"]]
        failures = judge_case(run, scenario, control)
        run.update(
            failures=failures,
            passed=not failures,
            expected_outcome=expected_of(scenario),
            blocked_correctly=None if scenario.healable else held_right(run, scenario),
            repair=None,
            impact={},
            seconds_to_promoted=run["seconds"] if run["promoted"] else None,
        )
    board = build_scoreboard(
        list(cases), plan.seeds, runs, controls, [], _iso(copy.now_ms), lookup=cases.__getitem__, pipeline=copy.pipeline
    )
    healable = [r for r in runs if cases[r["scenario"]].healable]
    board["heal_rate"] = _rate(r["healed"] and r["verified"] and r["passed"] for r in healable)
    board["drill"].update(
        mode="pipeline",
        family=plan.family,
        scopes=list(plan.scopes),
        newest_batch=copy.batches[-1].batch_id,
        batches=len(copy.batches),
        control_status=control,
    )
    board["skipped"] = [{"name": s.name, "why": s.why} for s in skipped]
    board["quarantine_rate"] = _rate(
        r["quarantined"] > 0 and r["incident_open"] for r in runs if cases[r["scenario"]].quarantines
    )
    board["invented_cells"] = sum(r["invented_cells"] for r in runs)
    for row in board["scenarios"]:
        scenario = cases[row["name"]]
        row["scope"] = row["name"].rsplit("@", 1)[1]
        row["expected"]["outcome"] = expected_of(scenario) + (
            f", then as the clean batch ({control})" if scenario.healable and control else ""
        )
        row["expected"]["unit"] = getattr(scenario, "unit", None) or None
        row["expected"]["kinds"] = sorted(k.value for k in getattr(scenario, "kinds", None) or {scenario.kind})
    return board


def _rate(flags: Any) -> float | None:
    values = [1.0 if f else 0.0 for f in flags]
    return round(sum(values) / len(values), 6) if values else None


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat()
