"""Pipeline specs: one YAML file per pipeline under <workspace>/pipelines/."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controlplane.datahub.urns import check_dataset_urn
from controlplane.errors import InputError, PipelineNotFound, SpecError
from controlplane.promotion import DEFAULT_MAX_REGRESSION, DEFAULT_MIN_GAIN, check_rules
from controlplane.safeyaml import YamlRefused, load_yaml
from controlplane.vocab import Policy
from controlplane.workspace import Workspace
from training.errors import TrainingError
from training.spec import TrainingSpec

__all__ = ["PipelineSpec", "PromotionRules", "load_spec", "list_specs", "parse_spec", "check_pipeline_name"]

_EXAMPLE = "compare it with demo/pipelines/delivery-eta.yaml"


@dataclass(frozen=True)
class PromotionRules:
    metric: str
    min_gain: float
    max_regression: float


@dataclass(frozen=True)
class PipelineSpec:
    name: str
    feature_table: str
    data: Path  # where the table lives, resolved against the workspace root
    data_text: str  # `data:` as written in the spec (workspace-relative, or a URI)
    training: TrainingSpec
    promotion: PromotionRules
    policy: Policy
    source: Path
    schedule: str | None = None  # cron, e.g. "0 2 * * *": `kintsugi serve` runs the pipeline when due
    quiet_hours: str | None = None  # "22-06" (UTC hours): `kintsugi watch` starts no retrain in them
    impact: bool = True  # a run that heals also scores a model trained on the poisoned bytes (the postmortem's impact)


def check_pipeline_name(name: str) -> str:
    """A pipeline name names files: letters, digits, '-', '_' and '.', not starting with '.'."""
    if not name or len(name) > 64 or name.startswith(".") or not all(c.isalnum() or c in "-_." for c in name):
        raise InputError(f"{name[:80]!r} is not a pipeline name",
                         "use letters, digits, '-', '_' and '.' (at most 64), e.g. delivery-eta")
    return name


def list_specs(ws: Workspace) -> list[str]:
    return sorted(p.stem for p in ws.pipelines.glob("*.yaml"))


def load_spec(ws: Workspace, name: str) -> PipelineSpec:
    path = ws.pipelines / f"{check_pipeline_name(name)}.yaml"
    if not path.is_file():
        known = ", ".join(list_specs(ws)) or "none"
        raise PipelineNotFound(f"unknown pipeline {name!r} in {ws.root} (known: {known})",
                               "check the name, or onboard it with `kintsugi init`")
    try:
        raw = load_yaml(path.read_text())
    except YamlRefused as exc:
        raise SpecError(f"pipeline spec {path} {exc}", "fix the YAML syntax in that file") from exc
    return parse_spec(raw, path, ws)


def parse_spec(raw: Any, path: Path, ws: Workspace) -> PipelineSpec:
    if not isinstance(raw, dict):
        raise SpecError(f"pipeline spec {path} must be a mapping", _EXAMPLE)
    try:
        spec = _build(raw, path, ws)
    except TrainingError as exc:
        raise SpecError(f"pipeline spec {path}: {exc.message}", exc.fix) from exc
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise SpecError(f"pipeline spec {path} is missing or mistypes {exc}", _EXAMPLE) from exc
    check_rules(spec.promotion.min_gain, spec.promotion.max_regression)
    check_dataset_urn(spec.feature_table, f"pipeline spec {path} feature_table")
    _check_schedule(spec.schedule, path)
    return spec


def _build(raw: dict[str, Any], path: Path, ws: Workspace) -> PipelineSpec:
    features, model, promotion = raw["features"], raw["model"], raw["promotion"]
    training = TrainingSpec(
        task=raw["task"], target=raw["target"], numeric_features=list(features.get("numeric", [])),
        categorical_features=list(features.get("categorical", [])), time_column=raw["time_column"],
        estimator=model["estimator"], params=dict(model.get("params") or {}), metric=promotion["metric"],
        seed=int(model.get("seed", 0)), holdout_fraction=float(raw.get("holdout_fraction", 0.2)))
    rules = PromotionRules(promotion["metric"], float(promotion.get("min_gain", DEFAULT_MIN_GAIN)),
                           float(promotion.get("max_regression", DEFAULT_MAX_REGRESSION)))
    policy = raw.get("policy", Policy.AUTO.value)
    if policy not in {p.value for p in Policy}:
        raise SpecError(f"pipeline spec {path} has policy {policy!r}", f"use one of {', '.join(p.value for p in Policy)}")
    return PipelineSpec(check_pipeline_name(str(raw["name"])), str(raw["feature_table"]), ws.path(str(raw["data"])),
                        str(raw["data"]), training, rules, Policy(policy), path, raw.get("schedule"),
                        _quiet_hours(raw.get("quiet_hours"), path), _flag(raw.get("impact", True), "impact", path))


def _quiet_hours(value: Any, path: Path) -> str | None:
    """`quiet_hours: "22-06"`: from hour 22 up to hour 6, UTC (may wrap midnight)."""
    if value is None:
        return None
    start, dash, end = str(value).partition("-")
    if not (dash and start.isdigit() and end.isdigit() and int(start) < 24 and int(end) < 24 and start != end):
        raise SpecError(f"pipeline spec {path} has quiet_hours {value!r}",
                        'write two UTC hours, e.g. quiet_hours: "22-06" (22:00 to 06:00), or remove it')
    return f"{int(start):02d}-{int(end):02d}"


def _flag(value: Any, name: str, path: Path) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"pipeline spec {path} has {name}: {value!r}", f"write {name}: true or {name}: false")
    return value


def _check_schedule(schedule: Any, path: Path) -> None:
    from croniter import croniter

    if schedule is not None and not (isinstance(schedule, str) and croniter.is_valid(schedule)):
        raise SpecError(f"pipeline spec {path} has schedule {schedule!r}, not a cron expression",
                        "use five cron fields, e.g. schedule: \"0 2 * * *\" (daily at 02:00 UTC), or remove it")
