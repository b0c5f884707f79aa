"""The drill's units of work, each on its own fork of a seed's estate: one scenario through the loop, one clean
control through the loop, one magnitude sweep through the guard. Each returns plain JSON-able data, so the
drill can run them in worker processes."""

from __future__ import annotations

import shutil
import time
from typing import Any

import pandas as pd

from chaos.drill.copies import contract_of
from chaos.drill.estate import DrillEstate, fork, fork_control, write_table
from chaos.drill.impact import HARM_THRESHOLD, Score, clean_holdout, holdout_score, recovery_ratio, relative_change
from chaos.drill.observe import (
    PROMOTED,
    Observed,
    errored,
    expected_outcome,
    finding_label,
    held_correctly,
    judge,
    observe,
)
from chaos.drill.repair import repair_scores
from chaos.errors import InjectionError
from chaos.failures.catalog import get_scenario
from chaos.failures.registry import Injected, Scenario, UpstreamTarget
from chaos.failures.selection import Selection
from controlplane.datahub.connect import metadata_session
from controlplane.frontdoor.services import guard as guard_pipeline
from controlplane.pipeline import run_pipeline
from controlplane.spec import PipelineSpec
from controlplane.workspace import Workspace
from guard.contract import Contract
from training.spec import metric_direction

__all__ = ["run_scenario", "run_control", "run_sweep", "inject", "control_batch_seed"]


def control_batch_seed(seed: int, index: int) -> int:
    """Control 0 runs the very batch the scenarios corrupt; the others fresh clean batches."""
    return seed if index == 0 else seed * 1000 + index


def inject(
    ws: Workspace,
    spec: PipelineSpec,
    scenario: Scenario,
    seed: int,
    at_ms: int,
    magnitude: float | None = None,
    selection: Selection | None = None,
) -> Injected | None:
    """Corrupt the workspace's feature table, or its upstreams' metadata; the table's ground truth, if any."""
    if scenario.upstream_injector is not None:
        assert scenario.upstream is not None
        with metadata_session(ws) as metadata:
            value = scenario.magnitude if magnitude is None else magnitude
            scenario.upstream_injector(metadata, UpstreamTarget(scenario.upstream, value, at_ms))
        return None
    assert scenario.table is not None
    injected = scenario.table(
        pd.read_parquet(spec.data), scenario.target(contract_of(ws, spec, InjectionError), seed, magnitude, selection)
    )
    write_table(spec.data, injected.frame)
    return injected


def run_scenario(estate: DrillEstate, name: str, keep: bool = False) -> dict[str, Any]:
    """Fork the landed estate, inject the scenario, run the real loop, and score what it did."""
    scenario = get_scenario(name)
    ws = fork(estate, f"{name}-{estate.seed}")
    spec = estate.spec(ws)
    clean = pd.read_parquet(spec.data)
    started = time.monotonic()
    try:
        injected = inject(ws, spec, scenario, estate.seed, estate.anchor_ms)
        record = run_pipeline(ws, spec, now_ms=estate.now_ms)
    except Exception as exc:  # the loop breaking on a scenario is a result to record, not a reason to stop
        return _errored(scenario, estate, exc, ws, keep)
    seconds = round(time.monotonic() - started, 3)
    seen = observe(ws, record, scenario, spec.feature_table)
    healed_path = ws.run_dir(record.run_id) / "sandbox" / "healed.parquet"
    healed = pd.read_parquet(healed_path) if seen.healed and healed_path.is_file() else None
    impact = _impact(estate, spec, clean, injected, healed)
    repair = _repair(clean, injected, healed, contract_of(ws, spec, InjectionError))
    _discard(ws, keep)
    return {
        **_verdict(scenario, estate.seed, seen, impact),
        "repair": repair,
        "impact": impact,
        "seconds": seconds,
        "seconds_to_promoted": seconds if seen.status == PROMOTED else None,
    }


def _verdict(scenario: Scenario, seed: int, seen: Observed, impact: dict[str, Any]) -> dict[str, Any]:
    expected = expected_outcome(scenario)
    reasons = judge(scenario, seen, impact)
    return {
        "scenario": scenario.name,
        "seed": seed,
        "magnitude": scenario.magnitude,
        "selection": scenario.selection.label(),
        "status": seen.status,
        "outcome": seen.outcome,
        "findings": list(seen.labels),
        "detected": seen.detected,
        "blocking": seen.blocking,
        "localized": any(scenario.localizes(f) for f in seen.findings),
        "healed": seen.healed,
        "verified": seen.verified,
        "promoted": seen.status == PROMOTED,
        "held": seen.status != PROMOTED,
        "incident_open": seen.incident_open,
        "expected_outcome": expected,
        "blocked_correctly": None if scenario.healable else held_correctly(seen.status, expected, seen.incident_open),
        "passed": not reasons,
        "failures": reasons,
    }


def run_control(estate: DrillEstate, index: int, keep: bool = False) -> dict[str, Any]:
    batch_seed = control_batch_seed(estate.seed, index)
    ws = fork_control(estate, f"control-{estate.seed}-{index}", batch_seed)
    spec = estate.spec(ws)
    started = time.monotonic()
    try:
        record = run_pipeline(ws, spec, now_ms=estate.now_ms)
    except Exception as exc:  # recorded as an alarm: a clean batch must run through
        _discard(ws, keep)
        return {
            "seed": estate.seed,
            "batch_seed": batch_seed,
            "status": "error",
            "outcome": f"{type(exc).__name__}: {str(exc).replace(str(ws.root), '<workspace>')}",
            "findings": [],
            "alarm": True,
            "blocking": True,
            "promoted": False,
        }
    seen = observe(ws, record, None, spec.feature_table)
    _discard(ws, keep)
    return {
        "seed": estate.seed,
        "batch_seed": batch_seed,
        "status": seen.status,
        "outcome": seen.outcome,
        "findings": list(seen.labels),
        "alarm": seen.detected,
        "blocking": seen.blocking,
        "promoted": seen.status == "promoted",
        "seconds": round(time.monotonic() - started, 3),
    }


def run_sweep(estate: DrillEstate, name: str, keep: bool = False) -> dict[str, Any]:
    """The guard alone on the scenario at each sweep magnitude, and what each would cost the model."""
    scenario = get_scenario(name)
    spec = estate.spec()
    clean = estate.clean()
    holdout = clean_holdout(spec, clean)
    points = []
    for index, magnitude in enumerate(scenario.sweep):
        ws = fork(estate, f"sweep-{name}-{estate.seed}-{index}")
        fork_spec = estate.spec(ws)
        injected = inject(ws, fork_spec, scenario, estate.seed, estate.anchor_ms, magnitude)
        report = guard_pipeline(ws, spec.name, now_ms=estate.now_ms)
        score = holdout_score(spec, injected.frame, holdout) if injected is not None else Score(None)
        change = relative_change(score.value, estate.clean_score, metric_direction(spec.training.metric))
        detected = bool(report.findings)
        points.append(
            {
                "magnitude": magnitude,
                "detected": detected,
                "localized": any(scenario.localizes(f) for f in report.findings),
                "findings": [finding_label(f) for f in report.findings],
                "impact": _round(change),
                "harmful": change is not None and change > HARM_THRESHOLD,
                "untrainable": score.error,
            }
        )
        _discard(ws, keep)
    return {"scenario": name, "seed": estate.seed, "points": points}


def _impact(
    estate: DrillEstate, spec: PipelineSpec, clean: pd.DataFrame, injected: Injected | None, healed: pd.DataFrame | None
) -> dict[str, Any]:
    if injected is None:
        return {"poisoned": None, "healed": None, "clean": _round(estate.clean_score), "note": "metadata only"}
    holdout = clean_holdout(spec, clean)
    poisoned = holdout_score(spec, injected.frame, holdout)
    healed_score = holdout_score(spec, healed, holdout) if healed is not None else Score(None)
    direction, base = metric_direction(spec.training.metric), estate.clean_score
    return {
        "poisoned": _round(poisoned.value),
        "healed": _round(healed_score.value),
        "clean": _round(base),
        "poisoned_vs_clean": _round(relative_change(poisoned.value, base, direction)),
        "healed_vs_clean": _round(relative_change(healed_score.value, base, direction)),
        "recovery": _round(recovery_ratio(poisoned.value, healed_score.value, base)),
        "poisoned_untrainable": poisoned.error,
    }


def _repair(
    clean: pd.DataFrame, injected: Injected | None, healed: pd.DataFrame | None, contract: Contract
) -> dict[str, Any] | None:
    if injected is None or healed is None or not contract.key_columns:
        return None
    scores = repair_scores(clean, healed, injected, contract.key_columns[0])
    return {
        "accuracy": _round(scores.accuracy),
        "collateral": _round(scores.collateral),
        "rows_dropped": _round(scores.rows_dropped_share),
        "corrupted_units": scores.corrupted,
        "repaired_units": scores.repaired,
    }


def _errored(scenario: Scenario, estate: DrillEstate, exc: Exception, ws: Workspace, keep: bool) -> dict[str, Any]:
    _discard(ws, keep)
    record = errored(exc, ws)
    return record | {
        "scenario": scenario.name,
        "seed": estate.seed,
        "magnitude": scenario.magnitude,
        "selection": scenario.selection.label(),
        "expected_outcome": expected_outcome(scenario),
        "blocked_correctly": None if scenario.healable else False,
        "passed": False,
        "failures": [record["outcome"]],
        "repair": None,
        "impact": {},
        "seconds_to_promoted": None,
    }


def _discard(ws: Workspace, keep: bool) -> None:
    if not keep:
        shutil.rmtree(ws.root, ignore_errors=True)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 6)
