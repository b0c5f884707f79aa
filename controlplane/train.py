"""Train on verified data, score candidate and champion on the same holdout, gate, register, write back."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterator

import pandas as pd

from controlplane.datahub.estate import walk_upstream
from controlplane.datahub.incidents import IncidentRef
from controlplane.datahub.models import TrainedVersion, model_mcps
from controlplane.errors import RegistryError, SpecError
from controlplane.history import health_at
from controlplane.passport import sign
from controlplane.promotion import PromotionDecision, PromotionEvidence, PromotionVerdict, decide
from controlplane.workspace import Workspace
from guard.findings import GuardReport
from remediations.sandbox import HealOutcome
from training import errors as training_errors
from training.model import evaluate, fit, time_holdout

if TYPE_CHECKING:
    from controlplane.loop import LoopState
    from training.registry import ModelStore

__all__ = ["Candidate", "train_and_promote", "conclude", "open_model_store", "open_store", "training_errors_mapped",
           "unhealed_at_training"]

STATUS_BY_VERDICT = {"APPROVED": "promoted", "NEEDS_REVIEW": "needs-review", "BLOCKED": "blocked"}


@dataclass(frozen=True)
class Candidate:
    """A trained, registered version and the gate's decision on it: what the promote gate acts on."""

    version: int
    mlflow_run: str
    metrics: dict[str, float]
    verdict: str
    reasons: list[str]
    gain: float | None
    passport: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def training_errors_mapped() -> Iterator[None]:
    """The one place training's errors become the control plane's."""
    try:
        yield
    except training_errors.SpecError as exc:
        raise SpecError(exc.message, exc.fix) from exc
    except training_errors.TrainingError as exc:
        raise RegistryError(exc.message, exc.fix) from exc


def open_store(ws: Workspace) -> ModelStore:
    """The workspace's MLflow store (imported lazily: MLflow is slow to import)."""
    from training.registry import ModelStore

    with training_errors_mapped():
        return ModelStore(ws.mlflow_uri, ws.artifacts)


def open_model_store(state: LoopState) -> ModelStore:
    return open_store(state.ws)


def train_and_promote(state: LoopState, report: GuardReport, *, heal: HealOutcome | None,
                      incidents: list[IncidentRef]) -> None:
    """Train, gate, and (unless the policy pauses at the promote gate) conclude."""
    if not state.writes:
        state.journal.event("train", "skipped", "dry-run: no training, no MLflow writes")
        state.journal.finish("planned", f"dry-run: guard {report.verdict.value}; nothing was written")
        return
    with training_errors_mapped():
        candidate = _train_candidate(state, report, heal, incidents)
        if candidate.verdict == PromotionVerdict.APPROVED.value and state.journal.record.policy == "ratify":
            state.journal.record.state.update(gate="promote", candidate=candidate.to_dict())
            state.journal.event("promote", "paused", f"ratify: v{candidate.version} is APPROVED by the gate; "
                                f"waiting for `kintsugi approve {state.run_id}`", version=candidate.version)
            state.journal.finish("paused", f"paused at the promote gate (v{candidate.version} APPROVED)")
            return
        conclude(state, candidate)


def conclude(state: LoopState, candidate: Candidate, *, rejected: str | None = None) -> None:
    """Record the verdict in MLflow, move the alias if APPROVED (and not rejected), write back to DataHub."""
    with training_errors_mapped():
        store = open_model_store(state)
        verdict = "REJECTED" if rejected else candidate.verdict
        reasons = [f"rejected by an operator: {rejected}"] if rejected else candidate.reasons
        _write_back(state, candidate, verdict, reasons)  # DataHub first: no evidence written, no promotion
        _record_verdict(state, store, candidate.version, verdict, reasons, candidate.gain)


def _train_candidate(state: LoopState, report: GuardReport, heal: HealOutcome | None,
                     incidents: list[IncidentRef]) -> Candidate:
    spec, journal = state.spec, state.journal
    store = open_model_store(state)
    frame = pd.read_parquet(spec.data)
    labelled = frame[frame[spec.training.target].notna()]
    train_df, holdout = time_holdout(labelled, spec.training.time_column, spec.training.holdout_fraction)
    model = fit(spec.training, train_df)
    candidate = evaluate(spec.training, model, holdout)
    champion_version, champion = _score_champion(store, state, holdout)
    journal.event("train", "trained", f"{spec.training.estimator} on {len(train_df)} rows; holdout {len(holdout)} rows; "
                  f"{spec.training.metric}={candidate[spec.training.metric]:.4g}"
                  + (f" vs champion v{champion_version} {champion.get(spec.training.metric, float('nan')):.4g}"
                     if champion_version else " (no champion yet)"),
                  candidate=candidate, champion=champion, champion_version=champion_version,
                  rows_train=len(train_df), rows_holdout=len(holdout), rows_unlabelled=len(frame) - len(labelled))
    content_hash = journal.record.state.get("source_hash") if heal is None else heal.after_hash
    lineage = [node.urn for node in walk_upstream(state.metadata, spec.feature_table)]
    health = health_at(state.metadata, {spec.feature_table, *lineage}, state.now_ms)
    unhealed = unhealed_at_training(health, spec.feature_table, [r.urn for r in incidents])
    decision = decide(PromotionEvidence(
        metric=spec.training.metric, guard_verdict=report.verdict.value, guard_warnings=len(report.warnings),
        unhealed_upstream_incidents=tuple(unhealed), candidate_score=candidate.get(spec.training.metric),
        has_champion=champion_version is not None, champion_score=champion.get(spec.training.metric),
        snapshot_hash=content_hash), spec.promotion.min_gain, spec.promotion.max_regression)
    mlflow_run = store.log_training(
        experiment=spec.name, spec=spec.training, model=model, train_df=train_df, metrics=candidate,
        dataset_source={"urn": spec.feature_table, "content_hash": content_hash, "path": str(spec.data)},
        tags={"kintsugi.run_id": state.run_id}, run_name=state.run_id)
    journal.ledger("mlflow-run", mlflow_run, experiment=spec.name)
    version = store.find_version_by_run(spec.name, mlflow_run) or store.register(spec.name, mlflow_run)
    journal.ledger("mlflow-version", f"{spec.name}/{version}", run=mlflow_run)
    body = _passport_body(state, report, heal, incidents, candidate, champion, champion_version,
                          decision, version, mlflow_run, content_hash, len(frame))
    passport = sign({**body, "lineage": lineage, "health_at_training": health, "unhealed_at_training": unhealed})
    store.log_json_artifact(mlflow_run, "passport.json", passport)
    return Candidate(version, mlflow_run, candidate, decision.verdict.value, list(decision.reasons), decision.gain,
                     passport)


def unhealed_at_training(health: dict[str, list[dict[str, Any]]], feature_table: str, healed: list[str]) -> list[str]:
    """Incidents ACTIVE at the training instant that this run did not heal, and failing upstream assertions.

    The feature table's own assertions are this guard's: the guard at training time (after heal) speaks for them.
    """
    incidents = [str(i["urn"]) for i in health["incidents"] if i["urn"] not in healed]
    assertions = [str(a["assertion"]) for a in health["failing_assertions"] if a["dataset"] != feature_table]
    return sorted(set(incidents)) + sorted(set(assertions))


def _score_champion(store: ModelStore, state: LoopState, holdout: pd.DataFrame) -> tuple[int | None, dict[str, float]]:
    """The champion on the candidate's holdout; unreadable champion -> empty scores (the gate blocks)."""
    version = store.champion_version(state.spec.name)
    if version is None:
        return None, {}
    try:
        return version, evaluate(state.spec.training, store.load_model(state.spec.name, version), holdout)
    except training_errors.TrainingError as exc:
        state.journal.event("train", "warning", f"champion v{version} could not be scored: {exc}")
        return version, {}


def _record_verdict(state: LoopState, store: ModelStore, version: int, verdict: str, reasons: list[str],
                    gain: float | None) -> None:
    name = state.spec.name
    store.set_version_tags(name, version, {"kintsugi.verdict": verdict, "kintsugi.reasons": " | ".join(reasons),
                                           "kintsugi.run_id": state.run_id})
    if verdict == PromotionVerdict.APPROVED.value:
        before = store.champion_version(name)
        store.promote(name, version)
        state.journal.ledger("mlflow-alias", f"{name}@champion", version=version, previous=before)
    summary = f"{verdict} v{version}: " + "; ".join(reasons)
    state.journal.event("promote", verdict, summary, verdict=verdict, reasons=reasons, version=version, gain=gain)
    state.journal.finish(STATUS_BY_VERDICT.get(verdict, "rejected"), summary)


def _write_back(state: LoopState, candidate: Candidate, verdict: str, reasons: list[str]) -> None:
    trained = TrainedVersion(
        pipeline=state.spec.name, version=candidate.version, run_id=state.run_id, mlflow_run_id=candidate.mlflow_run,
        feature_table=state.spec.feature_table, trained_at_ms=candidate.passport["body"]["trained_at_ms"],
        metrics=candidate.metrics,
        params={"estimator": state.spec.training.estimator, **state.spec.training.params, "seed": state.spec.training.seed},
        verdict=verdict, summary=f"{verdict}: " + "; ".join(reasons), passport=candidate.passport)
    mcps = model_mcps(trained)
    state.metadata.emit(mcps, state.now_ms)
    state.journal.ledger("datahub-aspect", mcps[1].entityUrn or "", what="mlModel+group+lineage+process", count=len(mcps))


def _passport_body(state: LoopState, report: GuardReport, heal: HealOutcome | None, incidents: list[IncidentRef],
                   candidate: dict[str, float], champion: dict[str, float], champion_version: int | None,
                   decision: PromotionDecision, version: int, mlflow_run: str, content_hash: str | None,
                   rows: int) -> dict[str, Any]:
    detect = next(e for e in state.journal.record.events if e.stage == "detect")
    return {
        "pipeline": state.spec.name, "version": version, "run_id": state.run_id,
        "trained_at_ms": state.now_ms,
        "trained_at": datetime.fromtimestamp(state.now_ms / 1000, tz=timezone.utc).isoformat(),
        "snapshot": {"dataset": state.spec.feature_table, "location": str(state.spec.data),
                     "content_hash": content_hash, "rows": rows},
        "guard_at_detect": {"verdict": detect.evidence.get("verdict"), "findings": detect.evidence.get("findings", [])},
        "guard_at_training": report.to_dict(),
        "incidents": [{"urn": r.urn, "key": list(r.key), "created": r.created, "healed_by_this_run": True}
                      for r in incidents],
        "remediations": [s.__dict__ for s in heal.steps] if heal else [],
        "metrics": {"metric": state.spec.training.metric, "candidate": candidate, "champion": champion,
                    "champion_version": champion_version, "gain": decision.gain},
        "verdict": {"verdict": decision.verdict.value, "reasons": list(decision.reasons)},
        "mlflow": {"model": state.spec.name, "version": version, "run_id": mlflow_run},
    }
