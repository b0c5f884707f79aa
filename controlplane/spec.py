"""Pipeline specs: one YAML file per pipeline under <workspace>/pipelines/.

Beside the model and the gate, a spec names the engine that profiles and heals its table (`engine: arrow`, the
default, in this process; `engine: spark` with `spark: {master: "local[2]" | "sc://host:port"}`) and the row budget
of training (`training: {row_budget: N}`: more labelled rows than that train on a seeded, time-stratified sample), and its
governance rules (`governance: {pii_allowed_in_domain: urn:li:domain:ID, escalate: [deprecated_upstream]}`), which
may only escalate a finding of the governance scan or record an exception (`controlplane.models.governance`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from controlplane.datahub.urns import check_dataset_urn, check_domain_urn
from controlplane.documents.safeyaml import YamlRefused, load_yaml
from controlplane.errors import InputError, PipelineNotFound, SpecError
from controlplane.vocab import Policy
from controlplane.workspace import Workspace
from profiles.records import Record
from training.errors import TrainingError
from training.spec import TrainingSpec

__all__ = [
    "PipelineSpec",
    "PromotionRules",
    "load_spec",
    "list_specs",
    "parse_spec",
    "check_pipeline_name",
    "ENGINES",
    "DEFAULT_MASTER",
    "DEFAULT_ROW_BUDGET",
    "DEFAULT_MIN_GAIN",
    "DEFAULT_MAX_REGRESSION",
    "DEFAULT_LEVEL_WITHIN",
    "check_rules",
    "GovernanceKind",
    "GovernanceRules",
]

_EXAMPLE = "compare it with demo/pipelines/delivery-eta.yaml"
ENGINES = ("arrow", "spark")
# the promotion gate's defaults: a spec may make the gate stricter, never looser (`check_rules`; the gate is
# `models.gate`)
DEFAULT_MIN_GAIN = 0.005  # a candidate must beat the champion by 0.5% to be APPROVED
DEFAULT_MAX_REGRESSION = 0.02  # worse than the champion by more than 2% is BLOCKED
# A shortfall under one sampling error of the gain is level with the champion. Chosen, not tuned: one standard
# error is the least a holdout must show before it says the champion is better (a paired bootstrap's spread).
DEFAULT_LEVEL_WITHIN = 1.0


def check_rules(min_gain: float, max_regression: float, level_within: float = DEFAULT_LEVEL_WITHIN) -> None:
    """Configuration may make the gate stricter, never looser."""
    if (
        min_gain < DEFAULT_MIN_GAIN
        or max_regression > DEFAULT_MAX_REGRESSION
        or max_regression < 0
        or not 0 <= level_within <= DEFAULT_LEVEL_WITHIN
    ):
        raise SpecError(
            f"promotion rules min_gain={min_gain} max_regression={max_regression} level_within={level_within} "
            "loosen the gate",
            f"use min_gain >= {DEFAULT_MIN_GAIN}, 0 <= max_regression <= {DEFAULT_MAX_REGRESSION} and "
            f"0 <= level_within <= {DEFAULT_LEVEL_WITHIN}",
        )


class GovernanceKind(StrEnum):
    PII = "pii"
    RESTRICTED = "restricted"
    DEPRECATED_UPSTREAM = "deprecated_upstream"
    LINEAGE_LEAKAGE = "lineage_leakage"


@dataclass(frozen=True)
class GovernanceRules(Record):
    """The spec's `governance:` section: rules that only escalate a finding or record an exception."""

    pii_allowed_in_domain: str | None = None  # PII is an exception where its datasets all lie in this domain
    escalate: tuple[GovernanceKind, ...] = ()  # kinds whose REVIEW findings block


DEFAULT_MASTER = "local[2]"  # a spark pipeline without `spark: {master: ...}`
DEFAULT_ROW_BUDGET = 2_000_000  # labelled rows trained on whole; more: a sample of this many
_MASTER = re.compile(r"local\[(\d+|\*)\]|sc://[A-Za-z0-9.\-]+(:\d+)?(/.*)?")


@dataclass(frozen=True)
class PromotionRules:
    metric: str
    min_gain: float
    max_regression: float
    level_within: float = DEFAULT_LEVEL_WITHIN  # sampling errors a shortfall may be and still be level (`gate`)


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
    engine: str = "arrow"  # what profiles and heals the table: arrow (this process) or spark
    spark_master: str | None = None  # engine spark: local[N] or sc://host:port (Spark Connect)
    row_budget: int = DEFAULT_ROW_BUDGET  # labelled rows above this train on a seeded, time-stratified sample
    governance: GovernanceRules = GovernanceRules()  # escalations and the PII exception (`models.governance`)


def check_pipeline_name(name: str) -> str:
    """A pipeline name names files: letters, digits, '-', '_' and '.', not starting with '.'."""
    if not name or len(name) > 64 or name.startswith(".") or not all(c.isalnum() or c in "-_." for c in name):
        raise InputError(
            f"{name[:80]!r} is not a pipeline name",
            "use letters, digits, '-', '_' and '.' (at most 64), e.g. delivery-eta",
        )
    return name


def list_specs(ws: Workspace) -> list[str]:
    return sorted(p.stem for p in ws.pipelines.glob("*.yaml"))


def load_spec(ws: Workspace, name: str) -> PipelineSpec:
    path = ws.pipelines / f"{check_pipeline_name(name)}.yaml"
    if not path.is_file():
        known = ", ".join(list_specs(ws)) or "none"
        raise PipelineNotFound(
            f"unknown pipeline {name!r} in {ws.root} (known: {known})",
            "check the name, or onboard it with `kintsugi init`",
        )
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
    check_rules(spec.promotion.min_gain, spec.promotion.max_regression, spec.promotion.level_within)
    check_dataset_urn(spec.feature_table, f"pipeline spec {path} feature_table")
    _check_schedule(spec.schedule, path)
    return spec


def _build(raw: dict[str, Any], path: Path, ws: Workspace) -> PipelineSpec:
    features, model, promotion = raw["features"], raw["model"], raw["promotion"]
    training = TrainingSpec(
        task=raw["task"],
        target=raw["target"],
        numeric_features=list(features.get("numeric", [])),
        categorical_features=list(features.get("categorical", [])),
        time_column=raw["time_column"],
        estimator=model["estimator"],
        params=dict(model.get("params") or {}),
        metric=promotion["metric"],
        seed=int(model.get("seed", 0)),
        holdout_fraction=float(raw.get("holdout_fraction", 0.2)),
    )
    rules = PromotionRules(
        promotion["metric"],
        float(promotion.get("min_gain", DEFAULT_MIN_GAIN)),
        float(promotion.get("max_regression", DEFAULT_MAX_REGRESSION)),
        float(promotion.get("level_within", DEFAULT_LEVEL_WITHIN)),
    )
    policy = raw.get("policy", Policy.AUTO.value)
    if policy not in {p.value for p in Policy}:
        raise SpecError(
            f"pipeline spec {path} has policy {policy!r}", f"use one of {', '.join(p.value for p in Policy)}"
        )
    engine, master = _engine(raw, path)
    return PipelineSpec(
        check_pipeline_name(str(raw["name"])),
        str(raw["feature_table"]),
        ws.path(str(raw["data"])),
        str(raw["data"]),
        training,
        rules,
        Policy(policy),
        path,
        raw.get("schedule"),
        _quiet_hours(raw.get("quiet_hours"), path),
        _flag(raw.get("impact", True), "impact", path),
        engine,
        master,
        _row_budget(raw.get("training"), path),
        _governance(raw.get("governance"), path),
    )


def _quiet_hours(value: Any, path: Path) -> str | None:
    """`quiet_hours: "22-06"`: from hour 22 up to hour 6, UTC (may wrap midnight)."""
    if value is None:
        return None
    start, dash, end = str(value).partition("-")
    if not (dash and start.isdigit() and end.isdigit() and int(start) < 24 and int(end) < 24 and start != end):
        raise SpecError(
            f"pipeline spec {path} has quiet_hours {value!r}",
            'write two UTC hours, e.g. quiet_hours: "22-06" (22:00 to 06:00), or remove it',
        )
    return f"{int(start):02d}-{int(end):02d}"


def _flag(value: Any, name: str, path: Path) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"pipeline spec {path} has {name}: {value!r}", f"write {name}: true or {name}: false")
    return value


def _engine(raw: dict[str, Any], path: Path) -> tuple[str, str | None]:
    """(engine, spark master): `engine: arrow` (default) or `engine: spark` with an optional `spark: {master}`."""
    engine, spark = raw.get("engine", "arrow"), raw.get("spark")
    if engine not in ENGINES:
        raise SpecError(
            f"pipeline spec {path} has engine {engine!r}",
            "use engine: arrow (the default, in this process) or engine: spark",
        )
    if spark is None:
        return engine, DEFAULT_MASTER if engine == "spark" else None
    if engine != "spark":
        raise SpecError(
            f"pipeline spec {path} has a spark: section but engine {engine!r}",
            "set engine: spark, or remove the spark: section",
        )
    if not isinstance(spark, dict) or set(spark) - {"master"}:
        raise SpecError(
            f"pipeline spec {path} has spark: {spark!r}",
            'write spark: {master: "local[2]"} or spark: {master: "sc://host:15002"}',
        )
    master = spark.get("master", DEFAULT_MASTER)
    if not isinstance(master, str) or not _MASTER.fullmatch(master):
        raise SpecError(
            f"pipeline spec {path} has spark master {master!r}",
            'use "local[N]" (a session on this machine) or "sc://host:port" (Spark Connect)',
        )
    return engine, master


def _row_budget(training: Any, path: Path) -> int:
    if training is None:
        return DEFAULT_ROW_BUDGET
    if not isinstance(training, dict) or set(training) - {"row_budget"}:
        raise SpecError(
            f"pipeline spec {path} has training: {training!r}",
            f"write training: {{row_budget: N}} (labelled rows trained on whole; default {DEFAULT_ROW_BUDGET})",
        )
    budget = training.get("row_budget", DEFAULT_ROW_BUDGET)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        raise SpecError(
            f"pipeline spec {path} has training row_budget {budget!r}",
            f"use a positive whole number of rows, e.g. row_budget: {DEFAULT_ROW_BUDGET}",
        )
    return budget


def _governance(value: Any, path: Path) -> GovernanceRules:
    """`governance: {pii_allowed_in_domain: DOMAIN_URN, escalate: [KIND, ...]}`: each key optional."""
    example = "write governance: {pii_allowed_in_domain: urn:li:domain:ID, escalate: [deprecated_upstream]}"
    if value is None:
        return GovernanceRules()
    if not isinstance(value, dict) or set(value) - {"pii_allowed_in_domain", "escalate"}:
        raise SpecError(f"pipeline spec {path} has governance: {value!r}", example)
    domain = value.get("pii_allowed_in_domain")
    if domain is not None:
        check_domain_urn(str(domain), f"pipeline spec {path} governance.pii_allowed_in_domain")
    escalate = value.get("escalate") or []
    kinds = {k.value for k in GovernanceKind}
    if not isinstance(escalate, list) or not all(isinstance(k, str) and k in kinds for k in escalate):
        raise SpecError(
            f"pipeline spec {path} has governance escalate {escalate!r}",
            f"list finding kinds among {', '.join(sorted(kinds))}, e.g. escalate: [deprecated_upstream]",
        )
    return GovernanceRules(None if domain is None else str(domain), tuple(GovernanceKind(k) for k in escalate))


def _check_schedule(schedule: Any, path: Path) -> None:
    from croniter import croniter

    if schedule is not None and not (isinstance(schedule, str) and croniter.is_valid(schedule)):
        raise SpecError(
            f"pipeline spec {path} has schedule {schedule!r}, not a cron expression",
            'use five cron fields, e.g. schedule: "0 2 * * *" (daily at 02:00 UTC), or remove it',
        )
