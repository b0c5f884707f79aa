"""Pipeline specs: one YAML file per pipeline under <workspace>/pipelines/."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from controlplane.errors import PipelineNotFound, SpecError
from controlplane.promotion import DEFAULT_MAX_REGRESSION, DEFAULT_MIN_GAIN, check_rules
from controlplane.workspace import Workspace
from training.errors import TrainingError
from training.spec import TrainingSpec

__all__ = ["PipelineSpec", "PromotionRules", "load_spec", "list_specs", "POLICIES"]

POLICIES = ("auto", "ratify", "dry-run")


@dataclass(frozen=True)
class PromotionRules:
    metric: str
    min_gain: float
    max_regression: float


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    feature_table: str
    data: Path
    training: TrainingSpec
    promotion: PromotionRules
    policy: str
    source: Path
    schedule: str | None = None  # cron, e.g. "0 2 * * *": `kintsugi serve` runs the pipeline when due


def list_specs(ws: Workspace) -> list[str]:
    return sorted(p.stem for p in ws.pipelines.glob("*.yaml"))


def load_spec(ws: Workspace, name: str) -> PipelineSpec:
    path = ws.pipelines / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(list_specs(ws)) or "none"
        raise PipelineNotFound(f"unknown pipeline {name!r} in {ws.root} (known: {known})",
                               "check the name, or seed the demo estate with `kintsugi demo`")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise SpecError(f"pipeline spec {path} is not valid YAML ({exc.__class__.__name__})",
                        "fix the YAML syntax in that file") from exc
    return parse_spec(raw, path, ws)


def parse_spec(raw: Any, path: Path, ws: Workspace) -> PipelineSpec:
    if not isinstance(raw, dict):
        raise SpecError(f"pipeline spec {path} must be a mapping", "see demo/pipelines/delivery-eta.yaml")
    try:
        features, model, promotion = raw["features"], raw["model"], raw["promotion"]
        training = TrainingSpec(
            task=raw["task"], target=raw["target"], numeric_features=list(features.get("numeric", [])),
            categorical_features=list(features.get("categorical", [])), time_column=raw["time_column"],
            estimator=model["estimator"], params=dict(model.get("params") or {}), metric=promotion["metric"],
            seed=int(model.get("seed", 0)), holdout_fraction=float(raw.get("holdout_fraction", 0.2)))
        rules = PromotionRules(promotion["metric"], float(promotion.get("min_gain", DEFAULT_MIN_GAIN)),
                               float(promotion.get("max_regression", DEFAULT_MAX_REGRESSION)))
        spec = PipelineSpec(raw["name"], raw["feature_table"], ws.root / raw["data"], training, rules,
                            raw.get("policy", "auto"), path, raw.get("schedule"))
    except TrainingError as exc:
        raise SpecError(f"pipeline spec {path}: {exc.message}", exc.fix) from exc
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise SpecError(f"pipeline spec {path} is missing or mistypes {exc}",
                        "compare it with demo/pipelines/delivery-eta.yaml") from exc
    check_rules(rules.min_gain, rules.max_regression)
    if spec.policy not in POLICIES:
        raise SpecError(f"pipeline spec {path} has policy {spec.policy!r}", f"use one of {', '.join(POLICIES)}")
    _check_schedule(spec.schedule, path)
    return spec


def _check_schedule(schedule: Any, path: Path) -> None:
    from croniter import croniter

    if schedule is not None and not (isinstance(schedule, str) and croniter.is_valid(schedule)):
        raise SpecError(f"pipeline spec {path} has schedule {schedule!r}, not a cron expression",
                        "use five cron fields, e.g. schedule: \"0 2 * * *\" (daily at 02:00 UTC), or remove it")
