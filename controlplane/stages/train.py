"""Train and assess: fit on exactly the guarded bytes, score candidate and champion on the same holdout,
register the version, and gather the evidence the promotion gate decides on.

More labelled rows than the spec's `training: {row_budget}` train on a seeded, time-stratified sample of that
many, drawn by the pipeline's engine (`profiles.engines.training`); its size, seed and the full table's content hash
go to the MLflow dataset record, the run's event and the passport."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from controlplane.datahub.history import health_at, unhealed_at
from controlplane.datahub.incidents import IncidentRef, read_incidents
from controlplane.documents.odcs import read_contract
from controlplane.errors import DataError, KintsugiError
from controlplane.models import passport_signing as passport
from controlplane.models.champion_scores import PredictionsKey, load_known, save_known
from controlplane.models.gate import GuardWarning, PromotionDecision, PromotionEvidence, decide
from controlplane.models.governance import GovernanceSeverity
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.runs.context import RunContext, crash_point
from controlplane.stages.detect import TrainingView
from controlplane.stages.governance import govern, lineage_of
from controlplane.stages.kept_reference import set_aside_rules
from controlplane.stages.pin import reading_pinned
from controlplane.vocab import LedgerKind, Stage
from profiles.profiler import frame_of
from profiles.records import Record
from remediations.aside import without_set_aside
from tables import readonce
from training import errors as training_errors
from training.known import row_keys, score_known
from training.model import Predictions, fit, gain_error_of, leaned_on, score, time_holdout, training_rows_key

if TYPE_CHECKING:
    from guard.findings import GuardReport
    from training.registry import ModelStore

__all__ = [
    "Trained",
    "ChampionStands",
    "TRAINING_ROWS_TAG",
    "Assessment",
    "ChampionScore",
    "Split",
    "train",
    "assess",
    "holdout_of",
    "labelled_of",
    "Labelled",
    "score_champion",
    "rescore_champion",
]


# The MLflow run tag holding `training.model.training_rows_key` of the rows and spec a version was fit on.
TRAINING_ROWS_TAG = "kintsugi.training_rows"


@dataclass(frozen=True)
class ChampionStands(Record):
    """No candidate: it would be fit on exactly the rows and spec the champion was, so it would be the champion."""

    version: int  # the champion's
    rows_key: str  # `training.model.training_rows_key` of both
    rows: int  # the training rows

    @property
    def summary(self) -> str:
        return (
            f"the champion v{self.version} stands: a candidate would be fit on exactly its {self.rows} training rows "
            "and spec, so it would be the champion again; nothing was trained or registered"
        )


@dataclass(frozen=True)
class Trained(Record):
    """A registered candidate and everything its passport will say about how it was made."""

    version: int
    mlflow_run: str
    metrics: dict[str, float]
    champion_version: int | None
    champion_metrics: dict[str, float]
    view: TrainingView
    rows: dict[str, int]
    detect_report: dict[str, Any]
    incidents: tuple[IncidentRef, ...]  # raised and healed by this run
    remediations: tuple[dict[str, Any], ...]
    trained_at_ms: int
    unsealed: str | None = None  # why the model's files could not be signed (the gate then blocks)
    sample: dict[str, Any] | None = None  # the training sample's description, when the table was over the budget
    # the features the candidate leans on (`training.model.leaned_on`), measured where a guard warning names a
    # feature: the gate reads them for nothing else (`controlplane.models.gate`), so () where none does
    leaned_on: tuple[str, ...] = ()
    gain_error: float | None = None  # the gain's sampling error on the holdout (`training.model.gain_error_of`)


@dataclass(frozen=True)
class Assessment(Record):
    """The gate's inputs read from the stores, and its decision."""

    evidence: PromotionEvidence
    decision: PromotionDecision
    lineage: tuple[str, ...]
    health: dict[str, list[dict[str, Any]]]
    unhealed: tuple[str, ...]
    label_freshness: str | None = None  # the label freshness SLA the guard checked; None: the contract sets none


@dataclass(frozen=True)
class Split:
    """What a model is fit and scored on: the labelled rows of the guarded bytes, or a sample of them."""

    train: pd.DataFrame
    holdout: pd.DataFrame
    total: int  # rows of the table
    labelled: int  # its labelled rows
    sample: dict[str, Any] | None = None  # the sample's description (`profiles.engines.training`), when drawn
    set_aside: int = 0  # rows left out of both: set aside by a quarantine the kept reference holds


def holdout_of(run: RunContext, view: TrainingView) -> Split:
    """The time split of exactly the guarded bytes' labelled rows (a sample of them over the row budget)."""
    labelled = labelled_of(run, view.table, view.table_hash)
    with training_errors_mapped():
        train_df, holdout = time_holdout(
            labelled.rows, run.spec.training.time_column, run.spec.training.holdout_fraction
        )
    return Split(train_df, holdout, labelled.total, labelled.labelled, labelled.sample, labelled.set_aside)


@dataclass(frozen=True)
class Labelled:
    """What training reads of a pinned table: its labelled rows (or a sample of them), less the rows set aside."""

    rows: pd.DataFrame  # the rows to train on
    total: int  # the table's rows (less those set aside)
    labelled: int  # its labelled rows (less those set aside)
    sample: dict[str, Any] | None  # the sample's description, when one was drawn
    set_aside: int  # rows left out: a quarantine the kept reference holds (`remediations.aside`)


def labelled_of(run: RunContext, table: str, table_hash: str) -> Labelled:
    """The labelled rows of a pinned table file (workspace-relative, with the hash the guard passed), decoded from
    bytes checked as they are read (`reading_pinned`: no check before an open, no second open); or, over the row
    budget, a sample of `row_budget` of them drawn by the run's engine (a Spark session's reads are checked after).
    Rows a quarantine set aside (every rule the kept reference holds) are left out either way."""
    training = run.spec.training
    rules = set_aside_rules(run.ws, run.spec.name)
    with reading_pinned(run.ws, table, table_hash, "training", by_path=run.engine.spark) as path:
        parquet = readonce.open_parquet(path)
        if (
            parquet.metadata.num_rows > run.spec.row_budget
            and _labelled_rows(parquet, training.target) > run.spec.row_budget
        ):
            drawn, total, sample = _sample(run, path)
            rows, aside = without_set_aside(drawn, rules)
            return Labelled(rows, total, int(sample["labelled_rows"]), sample, aside)
        wanted = {*training.features, training.target, training.time_column, *(r.column for r in rules)}
        wanted |= {r.window.column for r in rules if r.window is not None}
        present = [name for name in parquet.schema_arrow.names if name in wanted]  # a missing one: fit names it
        frame, aside = without_set_aside(frame_of(parquet.read(columns=present)), rules)
    rows = frame[frame[training.target].notna()] if training.target in frame else frame
    return Labelled(rows, len(frame), len(rows), None, aside)


def _labelled_rows(parquet: pq.ParquetFile, target: str) -> int:
    """Rows with a label (all rows when the table has no label column: training says what is missing)."""
    if target not in parquet.schema_arrow.names:
        return parquet.metadata.num_rows
    column = parquet.read(columns=[target]).column(0)
    return len(column) - column.null_count


def _sample(run: RunContext, path: Path) -> tuple[pd.DataFrame, int, dict[str, Any]]:
    """(the sampled labelled rows, the table's rows, the sample's description), drawn by the run's engine."""
    from profiles.engines.training import training_sample

    spec, training = run.spec, run.spec.training
    try:
        session = run.engine.session() if run.engine.spark else None
        drawn = training_sample(
            run.engine.name,
            path,
            rows=spec.row_budget,
            time_column=training.time_column,
            label_column=training.target,
            seed=training.seed,
            session=session,
        )
    except KintsugiError:
        raise
    except Exception as exc:  # the engine's or the data's: fail closed, name the fix
        raise DataError(
            f"cannot draw the training sample of {spec.row_budget} rows from {run.ws.rel(path)}: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
            f"check time_column and target in {spec.source}, or raise training: {{row_budget}}",
        ) from exc
    frame = drawn.frame[drawn.frame[training.target].notna()]  # a NaN label is no label
    return frame, int(drawn.description["table_rows"]), drawn.description


def _sample_source(sample: dict[str, Any] | None) -> dict[str, Any]:
    """The sample as the MLflow dataset record names it: `sample_*` keys (run tags and dataset input tags)."""
    if sample is None:
        return {}
    return {
        "sample_rows": sample["rows"],
        "sample_seed": sample["seed"],
        "sample_engine": sample["engine"],
        "sample_labelled_rows": sample["labelled_rows"],
        "sample_table_rows": sample["table_rows"],
        "sample_table_hash": sample["table_hash"],
        "sample_cadence": sample["cadence"],
        "sample_format": sample["format"],
    }


@dataclass(frozen=True)
class ChampionScore:
    """The champion on the candidate's holdout: its version, metrics, and the sampling error of the gain."""

    version: int | None
    metrics: dict[str, float]
    gain_error: float | None = None


def score_champion(
    run: RunContext, store: ModelStore, holdout: pd.DataFrame, rows: np.ndarray, candidate: Predictions
) -> ChampionScore:
    """The champion on the candidate's holdout (its rows keyed `rows`), predicting only the rows it has not
    predicted before (`training.known`), which are then kept for a later run; an unreadable champion gives empty
    scores (the gate blocks)."""
    version = store.champion_version(run.spec.name)
    if version is None:
        return ChampionScore(None, {})
    training = run.spec.training
    try:
        key = _predictions_key(run, version, store.run_for_version(run.spec.name, version))
        scored, predicted = score_known(
            training, holdout, rows, load_known(run.ws, key), lambda: store.load_model(run.spec.name, version)
        )
        if predicted:
            save_known(run.ws, key, rows, scored.said)
        error = gain_error_of(training, holdout, candidate, scored.said)
        return ChampionScore(version, scored.metrics, error if math.isfinite(error) else None)  # records hold no NaN
    except training_errors.TrainingError as exc:
        run.event(Stage.TRAIN, "warning", f"champion v{version} could not be scored: {exc}")
        return ChampionScore(version, {})


def rescore_champion(run: RunContext, store: ModelStore, view: TrainingView, candidate_version: int) -> ChampionScore:
    """The champion now against the registered candidate, on the candidate's holdout again (a resumed run whose
    champion moved since it paused)."""
    holdout = holdout_of(run, view).holdout
    with training_errors_mapped():
        candidate = score(run.spec.training, store.load_model(run.spec.name, candidate_version), holdout)
        rows = row_keys(run.spec.training, holdout)
        return score_champion(run, store, holdout, rows, candidate.said)


def _predictions_key(run: RunContext, version: int, mlflow_run: str) -> PredictionsKey:
    training = run.spec.training
    return PredictionsKey(run.spec.name, version, mlflow_run, training.task, tuple(training.features))


def train(
    run: RunContext,
    view: TrainingView,
    detect_report: dict[str, Any],
    incidents: tuple[IncidentRef, ...],
    remediations: tuple[dict[str, Any], ...],
) -> Trained | ChampionStands:
    """Fit, score and register a candidate beside the champion's scores on its holdout; or, when the candidate would
    be fit on exactly the rows and spec the champion was and nothing the gate blocks on is open, say the champion
    stands (a second copy of a model is no candidate, and asks no person)."""
    spec = run.spec
    split = holdout_of(run, view)
    train_df, holdout = split.train, split.holdout
    store = open_store(run.ws)
    rows_key = training_rows_key(spec.training, train_df)
    stands = _champion_stands(run, store, rows_key, len(train_df), incidents)
    if stands is not None:
        return stands
    seal, unsealed = _sealer(run)
    with training_errors_mapped():
        model = fit(spec.training, train_df)
        said = score(spec.training, model, holdout)  # the candidate predicts the holdout once
        candidate = said.metrics
        warned = _warns_of_a_feature(view.report, spec.training.features)
        leaning = leaned_on(spec.training, model, holdout) if warned else ()
        keys = row_keys(spec.training, holdout)
        scored = score_champion(run, store, holdout, keys, said.said)
        champion_version, champion = scored.version, scored.metrics
        crash_point("train:before-log")
        with run.journal.writing(LedgerKind.MLFLOW_RUN, spec.name, experiment=spec.name) as entry:
            mlflow_run = store.log_training(
                experiment=spec.name,
                spec=spec.training,
                model=model,
                train_df=train_df,
                metrics=candidate,
                dataset_source={
                    "urn": spec.feature_table,
                    "content_hash": view.table_hash,
                    "location_hash": view.location_hash,
                    "version": view.location_version or None,  # a table format's version: the same as the passport's
                    "path": spec.data_text,
                    **_sample_source(split.sample),
                },
                tags={"kintsugi.run_id": run.run_id, TRAINING_ROWS_TAG: rows_key},
                run_name=run.run_id,
                seal=seal,
            )
            entry.result["mlflow_run"] = mlflow_run
        with run.journal.writing(LedgerKind.MLFLOW_VERSION, spec.name, run=mlflow_run) as entry:
            version = store.find_version_by_run(spec.name, mlflow_run) or store.register(spec.name, mlflow_run)
            entry.result["version"] = version
    keep = () if champion_version is None else (champion_version,)  # and the next run's champion, maybe
    save_known(run.ws, _predictions_key(run, version, mlflow_run), keys, said.said, keep=keep)
    rows = {
        "train": len(train_df),
        "holdout": len(holdout),
        "unlabelled": split.total - split.labelled,
        "total": split.total,
    }
    sampled = (
        f" (a seeded sample of {split.sample['rows']} of {split.labelled} labelled rows, over the row budget)"
        if split.sample
        else ""
    )
    run.event(
        Stage.TRAIN,
        "trained",
        f"{spec.training.estimator} on {rows['train']} rows; holdout {rows['holdout']}"
        f" rows{sampled}; {spec.training.metric}={candidate[spec.training.metric]:.4g}"
        + (
            f" vs champion v{champion_version} {champion.get(spec.training.metric, float('nan')):.4g}"
            if champion_version
            else " (no champion yet)"
        ),
        candidate=candidate,
        champion=champion,
        champion_version=champion_version,
        version=version,
        rows_train=rows["train"],
        rows_holdout=rows["holdout"],
        rows_unlabelled=rows["unlabelled"],
        rows_set_aside=split.set_aside,
        **({"sample": _sample_source(split.sample)} if split.sample else {}),
    )
    return Trained(
        version,
        mlflow_run,
        candidate,
        champion_version,
        champion,
        view,
        rows,
        detect_report,
        incidents,
        remediations,
        run.now_ms,
        unsealed,
        split.sample,
        leaning,
        scored.gain_error,
    )


def _warns_of_a_feature(report: GuardReport, features: Sequence[str]) -> bool:
    """Whether a guard warning on the bytes training reads names one of the features: only then does the gate ask
    which features the candidate leans on (a permutation importance per feature: ~0.4 s of a 1M-row run)."""
    return any(warning.column in features for warning in report.warnings)


def _champion_stands(
    run: RunContext, store: ModelStore, rows_key: str, rows: int, incidents: tuple[IncidentRef, ...]
) -> ChampionStands | None:
    """The champion, when its version was fit on `rows_key` and neither an unhealed upstream incident nor the
    governance scan would block a candidate now (then a candidate is trained, and the gate says so)."""
    with training_errors_mapped():
        version = store.champion_version(run.spec.name)
        if version is None:
            return None
        if store.run_tags(store.run_for_version(run.spec.name, version)).get(TRAINING_ROWS_TAG) != rows_key:
            return None
    lineage = lineage_of(run.metadata, run.spec)
    _, unhealed = _health_at(run, lineage, run.now_ms, incidents)
    if unhealed or any(f.severity is GovernanceSeverity.BLOCK for f in govern(run.metadata, run.spec, lineage)):
        return None
    return ChampionStands(version, rows_key, rows)


def _health_at(
    run: RunContext, lineage: tuple[str, ...], at_ms: int, healed: tuple[IncidentRef, ...], also_now: bool = False
) -> tuple[dict[str, list[dict[str, Any]]], tuple[str, ...]]:
    """(the health of the table and its lineage at `at_ms`, the incidents on them unhealed then and not healed by
    this run); `also_now` adds those unhealed at the run's current instant."""
    datasets, urns = {run.spec.feature_table, *lineage}, [r.urn for r in healed] + _set_aside_incidents(run)
    health = health_at(run.metadata, datasets, at_ms)
    found = unhealed_at(health, run.spec.feature_table, urns)
    if also_now and run.now_ms != at_ms:
        found += unhealed_at(health_at(run.metadata, datasets, run.now_ms), run.spec.feature_table, urns)
    return health, tuple(dict.fromkeys(found))


def _set_aside_incidents(run: RunContext) -> list[str]:
    """The table's ACTIVE incidents whose rows every training leaves out (a quarantine the kept reference holds):
    they stay open, since their cause is not corrected, but they do not stand against a candidate that never read
    those rows."""
    keys = {rule.key(run.spec.feature_table) for rule in set_aside_rules(run.ws, run.spec.name)}
    if not keys:
        return []
    return [row.urn for row in read_incidents(run.metadata) if row.state == "ACTIVE" and row.key in keys]


def _sealer(run: RunContext) -> tuple[Callable[[Path], None] | None, str | None]:
    """The workspace key's model-file signer, or why there is none (the gate will refuse the candidate)."""
    try:
        return passport.seal(run.ws), None
    except passport.SigningError as exc:
        run.event(Stage.TRAIN, "warning", f"the model's files cannot be signed: {exc}")
        return None, str(exc)


def assess(run: RunContext, trained: Trained, *, also_now: bool = False) -> Assessment:
    """Read the evidence from the stores now and let the pure gate decide.

    The data's health is read at the training instant (an incident recorded later whose window covers it
    counts); `also_now` adds what is unhealed at the run's current instant (a resumed run's approval). The
    lineage's classification (tags, terms, domains, deprecation, column lineage) is read as DataHub holds it now."""
    spec = run.spec
    lineage = lineage_of(run.metadata, run.spec)
    health, unhealed = _health_at(run, lineage, trained.trained_at_ms, trained.incidents, also_now)
    metric = spec.training.metric
    evidence = PromotionEvidence(
        metric=metric,
        guard_verdict=trained.view.report.verdict.value,
        guard_warnings=tuple(GuardWarning(w.kind.value, w.column) for w in trained.view.report.warnings),
        unhealed_upstream_incidents=unhealed,
        candidate_score=trained.metrics.get(metric),
        has_champion=trained.champion_version is not None,
        champion_score=trained.champion_metrics.get(metric),
        snapshot_hash=trained.view.table_hash,
        label=spec.training.target,
        leaned_on=trained.leaned_on,
        gain_error=trained.gain_error,
        governance=govern(run.metadata, spec, lineage),
    )
    decision = decide(evidence, spec.promotion.min_gain, spec.promotion.max_regression, spec.promotion.level_within)
    return Assessment(evidence, decision, lineage, health, unhealed, _label_freshness(run))


def _label_freshness(run: RunContext) -> str | None:
    """The label freshness the contract asks for and the guard checked (e.g. `label_ts within 24 h`), or None."""
    contract, _ = read_contract(run.metadata, run.spec.feature_table)
    if contract is None or contract.label_timestamp_column is None or contract.label_freshness_hours is None:
        return None
    return f"{contract.label_timestamp_column} within {contract.label_freshness_hours:g} h"
