"""The scoreboard: per scenario, mean and spread over seeds; overall detection, localization, false alarms
and heals; the magnitude sweeps' thresholds and harmful misses. Pure: runs in, a JSON-able dict out."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from chaos.drill.impact import HARM_THRESHOLD
from chaos.drill.observe import expected_outcome
from chaos.failures.catalog import get_scenario
from chaos.failures.registry import Scenario
from demo.seed import PIPELINE

__all__ = ["build_scoreboard", "stat", "strip_timings"]

_FLAGS = (
    "detected",
    "localized",
    "healed",
    "verified",
    "promoted",
    "held",
    "blocked_correctly",
    "incident_open",
    "passed",
)
_IMPACT = ("poisoned", "healed", "clean", "poisoned_vs_clean", "healed_vs_clean", "recovery")
_REPAIR = (("repair_accuracy", "accuracy"), ("collateral_damage", "collateral"), ("rows_dropped", "rows_dropped"))


def stat(values: Iterable[Any]) -> dict[str, Any] | None:
    """Mean and spread (population standard deviation) of the values that are there; None if none are."""
    present = [float(v) for v in values if v is not None]
    if not present:
        return None
    return {"mean": round(float(np.mean(present)), 6), "spread": round(float(np.std(present)), 6), "n": len(present)}


def build_scoreboard(
    scenarios: Sequence[str],
    seeds: Sequence[int],
    runs: list[dict[str, Any]],
    controls: list[dict[str, Any]],
    sweeps: list[dict[str, Any]],
    now: str,
    *,
    lookup: Callable[[str], Scenario] = get_scenario,
    pipeline: str = PIPELINE,
) -> dict[str, Any]:
    """`lookup` names each scenario's Scenario (the demo's registry by default; a pipeline drill's own)."""
    runs = sorted(runs, key=lambda r: (scenarios.index(r["scenario"]), r["seed"]))
    controls = sorted(controls, key=lambda c: (c["seed"], c["batch_seed"]))
    rows = [
        _scenario_row(
            name, lookup(name), [r for r in runs if r["scenario"] == name], [s for s in sweeps if s["scenario"] == name]
        )
        for name in scenarios
    ]
    healable = [r for r in runs if lookup(r["scenario"]).healable]
    unhealable = [r for r in runs if not lookup(r["scenario"]).healable]
    alarms = [c for c in controls if c["alarm"]]
    return {
        "drill": {
            "pipeline": pipeline,
            "now": now,
            "seeds": list(seeds),
            "scenarios": list(scenarios),
            "runs": len(runs),
            "controls": len(controls),
            "harm_threshold": HARM_THRESHOLD,
        },
        "detection_recall": _mean(r["detected"] for r in runs),
        "localization_rate": _mean(r["localized"] for r in runs),
        "false_alarms": len(alarms),
        "false_alarm_rate": _mean(c["alarm"] for c in controls),
        "heal_rate": _mean(r["healed"] and r["verified"] and r["promoted"] for r in healable),
        "block_rate": _mean(r["blocked_correctly"] for r in unhealable),
        "pass_rate": _mean(r["passed"] for r in runs),
        "harmful_misses": sum(row["sweep"]["harmful_misses"] for row in rows if row["sweep"]),
        "scenarios_passed": [row["name"] for row in rows if row["passed_all"]],
        "scenarios_failed": [row["name"] for row in rows if not row["passed_all"]],
        "controls_promoted": sum(1 for c in controls if c["promoted"]),
        "scenarios": rows,
        "controls": controls,
    }


def _scenario_row(
    name: str, scenario: Scenario, runs: list[dict[str, Any]], sweeps: list[dict[str, Any]]
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "name": name,
        "summary": scenario.summary,
        "side": scenario.side,
        "expected": {
            "kind": scenario.kind.value,
            "columns": list(scenario.columns),
            "upstream": scenario.upstream,
            "healable": scenario.healable,
            "outcome": expected_outcome(scenario),
        },
        "magnitude": scenario.magnitude,
        "magnitude_unit": scenario.magnitude_unit,
        "selection": scenario.selection.label(),
        "seeds": len(runs),
    }
    row.update({flag: stat(r[flag] for r in runs) for flag in _FLAGS})
    row["passed_all"] = bool(runs) and all(r["passed"] for r in runs)
    row["outcomes"] = dict(sorted(Counter(r["status"] for r in runs).items()))
    row["findings"] = dict(sorted(Counter(f for r in runs for f in r["findings"]).items()))
    row["failures"] = sorted({reason for r in runs for reason in r["failures"]})
    for key, field in _REPAIR:
        row[key] = stat((r["repair"] or {}).get(field) for r in runs)
    row["impact"] = {key: stat(r["impact"].get(key) for r in runs) for key in _IMPACT}
    row["impact"]["poisoned_untrainable"] = sum(1 for r in runs if r["impact"].get("poisoned_untrainable"))
    row["seconds_to_promoted"] = stat(r["seconds_to_promoted"] for r in runs)
    row["sweep"] = _sweep(scenario.sweep, sweeps) if sweeps else None
    row["runs"] = [{k: v for k, v in r.items() if k not in ("scenario",)} for r in runs]
    return row


def _sweep(magnitudes: Sequence[float], sweeps: list[dict[str, Any]]) -> dict[str, Any]:
    """Per magnitude: detection rate and mean impact over the sweep seeds; the smallest magnitude detected on
    every seed; misses (any magnitude, any seed) whose model would be worse than clean by more than the limit."""
    points: list[dict[str, Any]] = []
    for magnitude in magnitudes:
        at = [p for s in sweeps for p in s["points"] if p["magnitude"] == magnitude]
        points.append(
            {
                "magnitude": magnitude,
                "detected": _mean(p["detected"] for p in at),
                "localized": _mean(p["localized"] for p in at),
                "impact": stat(p["impact"] for p in at),
                "harmful_misses": sum(1 for p in at if p["harmful"] and not p["detected"]),
                "findings": sorted({f for p in at for f in p["findings"]}),
            }
        )
    detected = [p["magnitude"] for p in points if p["detected"] == 1.0]
    smallest = min(detected) if detected else None
    below = [p for p in points if smallest is None or p["magnitude"] < smallest]
    return {
        "seeds": sorted(s["seed"] for s in sweeps),
        "points": points,
        "smallest_detected": smallest,
        "harmful_misses": sum(p["harmful_misses"] for p in points),
        "harmful_below_threshold": [
            p["magnitude"] for p in below if p["impact"] is not None and p["impact"]["mean"] > HARM_THRESHOLD
        ],
    }


def _mean(flags: Iterable[Any]) -> float | None:
    values = [1.0 if f else 0.0 for f in flags]
    return round(float(np.mean(values)), 6) if values else None


def strip_timings(value: Any) -> Any:
    """The scoreboard without wall-clock timings: what must be identical for identical seeds."""
    if isinstance(value, dict):
        return {k: strip_timings(v) for k, v in value.items() if "seconds" not in k and k != "timings"}
    if isinstance(value, list):
        return [strip_timings(v) for v in value]
    return value
