"""`kintsugi init`: from a data location to a runnable pipeline.

    plan (reads only)   pin the table where it lives, profile it, propose the contract and the spec
    review              the front door asks a person about every guess the proposal is unsure of
    apply (writes)      under the pipeline's lock, each write journaled in an `init` record under runs/:
                        the contract and the spec under the workspace (an earlier contract kept, renamed),
                        the dataset in DataHub (properties, schema in DataHub's field types with the arrow
                        type, owner, upstream lineage; unknown upstreams created with their freshness SLA;
                        the column lineage declared with --column-lineage, as DataHub's fineGrainedLineages),
                        the MLflow store (created with its migrations and marked with the workspace's id, so
                        the first run pays for neither; an existing store is only checked), the contract
                        (through `contracts.apply_contract_file`: a new version of the dataContract aspect, DataHub
                        keeps the earlier ones), and the reference (`reference.establish_reference`)

Nothing is written before the plan succeeds: a location that is missing, unreadable, forbidden or in another
format is one line naming the fix, and DataHub and MLflow are left as they were.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from controlplane.datahub.column_lineage import OPTION as COLUMN_LINEAGE
from controlplane.datahub.column_lineage import ColumnEdge, column_lineage_mcps, parse_column_edge
from controlplane.datahub.connect import metadata_session
from controlplane.datahub.datasets import SchemaColumn, dataset_mcps, upstream_mcps
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import check_dataset_urn, dataset_urn
from controlplane.errors import DataError, InputError, KintsugiError, SpecError, TableChanged
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.onboard.contracts import apply_contract_file
from controlplane.onboard.infer import KEY_TYPES, Hints, Proposal, infer_task, key_candidates, propose
from controlplane.onboard.land import operator_urn
from controlplane.onboard.unitguess import given_unit
from controlplane.runs.identity import check_datahub
from controlplane.runs.journal import RunJournal, RunRecord, new_run_id
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import (
    DEFAULT_LEVEL_WITHIN,
    DEFAULT_MAX_REGRESSION,
    DEFAULT_MIN_GAIN,
    PipelineSpec,
    check_pipeline_name,
    parse_spec,
)
from controlplane.stages.kept_reference import establish_reference
from controlplane.stages.pin import DELTA_PREFIX, ICEBERG_PREFIX, pin_location, table_format
from controlplane.takeback.recovery import recover_pipeline
from controlplane.vocab import LedgerKind, Policy, RunKind, RunStatus, Stage
from controlplane.workspace import Workspace
from profiles.profile import DatasetProfile
from profiles.snapshot import Snapshot, SnapshotError, read_snapshot

__all__ = [
    "InitRequest",
    "Upstream",
    "InitPlan",
    "Onboarded",
    "check_request",
    "plan_init",
    "apply_init",
    "features_of",
    "resolve_data",
    "default_dataset",
    "parse_upstream",
]

_ESTIMATORS = {
    "regression": "sklearn.ensemble.HistGradientBoostingRegressor",
    "classification": "sklearn.ensemble.HistGradientBoostingClassifier",
}
_METRICS = {"regression": "mae", "classification": "roc_auc"}


@dataclass(frozen=True)
class InitRequest:
    """`kintsugi init`'s options, as given."""

    name: str
    data: str
    target: str
    time_column: str
    task: str | None = None
    keys: tuple[str, ...] = ()
    label_time: str | None = None
    dataset: str | None = None
    upstreams: tuple[str, ...] = ()  # URN or URN=SLA_HOURS
    units: tuple[str, ...] = ()  # COLUMN=UNIT
    estimator: str | None = None
    metric: str | None = None
    label_sla_hours: float | None = None
    owner: str | None = None
    force: bool = False
    column_lineage: tuple[str, ...] = ()  # COLUMN=UPSTREAM_URN:COLUMN


@dataclass(frozen=True)
class Upstream:
    urn: str
    sla_hours: float | None


@dataclass(frozen=True)
class InitPlan:
    """What init would write: the proposal over the table as pinned, and the answers so far."""

    request: InitRequest
    data_text: str  # as the spec says it: workspace-relative, absolute, or s3://
    dataset: str
    upstreams: tuple[Upstream, ...]
    profile: DatasetProfile
    arrow_types: dict[str, str]
    content_hash: str
    unique: frozenset[str]
    hints: Hints
    proposal: Proposal
    task: str
    time_read: str | None = None  # how a CSV table's time column was read from its text
    column_edges: tuple[ColumnEdge, ...] = ()  # the column lineage declared

    def answered(self, hints: Hints) -> InitPlan:
        """The plan proposed again with more answers."""
        proposal = propose(self.profile, hints, dataset=self.dataset, table=self.request.name, unique=self.unique)
        return replace(self, hints=hints, proposal=proposal)


@dataclass(frozen=True)
class Onboarded:
    record: RunRecord
    spec: PipelineSpec
    contract_file: Path
    kept_contract: Path | None  # the earlier contract, renamed (a re-init with --force)
    created_upstreams: tuple[str, ...]
    reference_rows: int


# ------------------------------------------------------------------------------------------------ plan


def resolve_data(ws: Workspace, data: str, cwd: Path) -> str:
    """The location as the spec will say it: relative paths are the caller's (cwd's); inside the workspace they
    are kept relative to it (a copied workspace takes its table along), elsewhere absolute; s3:// as given."""
    text = data.strip()
    if text.startswith(ICEBERG_PREFIX):  # a table in a catalog, not a path
        return text
    prefix = DELTA_PREFIX if text.startswith(DELTA_PREFIX) else ""
    text = text.removeprefix(prefix)
    if not text or "://" in text:
        return prefix + text
    path = Path(os.path.normpath(Path(cwd) / os.path.expanduser(text)))
    try:
        return prefix + path.relative_to(ws.root).as_posix()
    except ValueError:
        return prefix + str(path)


def default_dataset(ws: Workspace, data_text: str) -> str:
    """The dataset URN a location names when --dataset is not given: platform iceberg (the table's name), delta-lake,
    s3 or file (the path as its name)."""
    kind = table_format(ws, data_text)
    if kind == "iceberg":
        return dataset_urn("iceberg", data_text.removeprefix(ICEBERG_PREFIX))
    if kind == "delta":
        return dataset_urn("delta-lake", data_text.removeprefix(DELTA_PREFIX).rstrip("/"))
    if data_text.startswith("s3://"):
        return dataset_urn("s3", data_text[len("s3://") :].strip("/"))
    return dataset_urn("file", data_text.rstrip("/"))


def parse_upstream(text: str) -> Upstream:
    urn, sep, hours = text.rpartition("=")
    if sep and _number(hours) is not None:
        sla = _number(hours)
        if sla is None or sla <= 0:
            raise InputError(f"--upstream {text[:120]!r} has a freshness SLA of {hours} h", "give a positive number")
        return Upstream(check_dataset_urn(urn, "--upstream"), sla)
    return Upstream(check_dataset_urn(text, "--upstream"), None)


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _units(options: tuple[str, ...], profile: DatasetProfile) -> dict[str, Any]:
    units = {}
    for option in options:
        column, sep, unit = option.partition("=")
        if not sep or column not in profile.columns:
            raise InputError(
                f"--unit {option[:80]!r} is not COLUMN=UNIT for a column of the table",
                f"use one of the columns: {', '.join(profile.columns)}",
            )
        units[column] = given_unit(unit)
    return units


def check_request(request: InitRequest) -> None:
    """What the options alone can refuse, checked before anything is written (the workspace's folders included):
    the name, the target against the time columns, the task, the units' spelling and the upstreams."""
    check_pipeline_name(request.name)
    for option, column in (("--time-column", request.time_column), ("--label-time", request.label_time)):
        if column is not None and column == request.target:
            raise InputError(
                f"--target {request.target!r} is also the {option}",
                "the target is the label the model predicts: name the label column as --target, and the time "
                f"column as {option}",
            )
    if request.task is not None and request.task not in _METRICS:
        raise InputError(f"--task {request.task!r} is not known", "use regression or classification")
    for option in request.units:
        column, sep, unit = option.partition("=")
        if not sep or not column:
            raise InputError(f"--unit {option[:80]!r} is not COLUMN=UNIT", "write it as COLUMN=UNIT, or COLUMN=none")
        given_unit(unit)
    upstreams = {parse_upstream(u).urn for u in request.upstreams}
    for text in request.column_lineage:
        edge = parse_column_edge(text)
        if edge.source.dataset not in upstreams:
            raise InputError(
                f"{COLUMN_LINEAGE} {text[:160]!r} names an upstream that is not an --upstream",
                f"name {edge.source.dataset} with --upstream too (its lineage is declared with the dataset's)",
            )


def _column_edges(request: InitRequest, profile: DatasetProfile) -> tuple[ColumnEdge, ...]:
    """The declared column lineage, each column one of the table's."""
    edges = tuple(parse_column_edge(text) for text in request.column_lineage)
    for edge in edges:
        if edge.column not in profile.columns:
            raise InputError(
                f"{COLUMN_LINEAGE} names {edge.column!r}, not a column of the table",
                f"use one of the columns: {', '.join(profile.columns)}",
            )
    return edges


def plan_init(ws: Workspace, request: InitRequest, *, now_ms: int, cwd: Path) -> InitPlan:
    """Pin and profile the table, and propose; reads only (the pin is a scratch copy, removed after)."""
    check_request(request)
    refuse_existing(ws, request)
    data_text = resolve_data(ws, request.data, cwd)
    dataset = check_dataset_urn(request.dataset or default_dataset(ws, data_text), "--dataset")
    upstreams = tuple(parse_upstream(u) for u in request.upstreams)
    scratch = Path(tempfile.mkdtemp(prefix=".init-", dir=ws.runs))
    try:
        times = (request.time_column,) + ((request.label_time,) if request.label_time else ())
        pinned, kinds = pin_location(ws, data_text, scratch / "pin", f"--data {request.data}", time_columns=times)
        snapshot = _read(ws, pinned.table, request.data)
        profile = snapshot.profile
        unique = _unique(ws.path(pinned.table), key_candidates(profile))
        columns = profile.columns
        if request.keys and all(k in columns and columns[k].logical_type in KEY_TYPES for k in request.keys):
            _require_unique_key(ws.path(pinned.table), request.keys)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    hints = Hints(
        request.target,
        request.time_column,
        request.label_time,
        request.keys,
        _units(request.units, profile),
        request.label_sla_hours,
        now_year=time.gmtime(now_ms / 1000).tm_year,
    )
    proposal = propose(profile, hints, dataset=dataset, table=request.name, unique=unique)
    task = request.task or infer_task(profile, request.target)
    return InitPlan(
        request,
        data_text,
        dataset,
        upstreams,
        profile,
        snapshot.arrow_types,
        pinned.content_hash,
        unique,
        hints,
        proposal,
        task,
        _TIME_READ.get(kinds.get(request.time_column, "")),
        _column_edges(request, profile),
    )


_TIME_READ = {
    "datetime": "ISO-8601 text, parsed as UTC timestamps (offsets honoured; none given: read as UTC)",
    "date": "ISO-8601 dates (YYYY-MM-DD)",
}


def time_read_line(plan: InitPlan) -> str | None:
    """What the proposal says of a CSV table's time column: read from ISO-8601 text, and how offsets were taken."""
    return f"event time {plan.request.time_column}: {plan.time_read}" if plan.time_read else None


def _read(ws: Workspace, table: str, data: str) -> Snapshot:
    try:
        return read_snapshot(ws.path(table))
    except SnapshotError as exc:
        raise DataError(f"--data {data}: {exc}", "point --data at a readable parquet or CSV table") from exc


def _require_unique_key(table: Path, keys: tuple[str, ...]) -> None:
    """The given key identifies every row of the init data: no two rows share it (a null is the nulls check's)."""
    rows = pq.read_table(table, columns=list(keys)).drop_null()
    repeated = rows.group_by(list(keys)).aggregate([([], "count_all")]).filter(pc.field("count_all") > 1)
    if repeated.num_rows:
        extra = int(pc.sum(repeated.column("count_all")).as_py()) - repeated.num_rows
        first = ", ".join(f"{k}={repeated.column(k)[0].as_py()!r}" for k in keys)
        raise InputError(
            f"--key {','.join(keys)} is not unique: {extra} rows repeat a key ({repeated.num_rows} keys, "
            f"first {first})",
            "name the columns that together identify a row (a panel's key is its entity and its period)",
        )


def _unique(table: Path, candidates: list[str]) -> frozenset[str]:
    found = set()
    for name in candidates:
        column = pq.read_table(table, columns=[name]).column(name)
        if pc.count_distinct(column).as_py() == len(column):
            found.add(name)
    return frozenset(found)


def refuse_existing(ws: Workspace, request: InitRequest) -> None:
    if (ws.pipelines / f"{request.name}.yaml").exists() and not request.force:
        raise InputError(
            f"pipeline {request.name!r} already exists in {ws.root}",
            "pass --force to onboard it again (its contract is kept as an earlier version), or choose another name",
        )


def features_of(proposal: Proposal) -> tuple[list[str], list[str], dict[str, str]]:
    """(numeric, categorical, left out with why): every column but the label, its time, keys and the time column."""
    numeric, categorical, left = [], [], {}
    for column in proposal.columns:
        if column.role is not None or column.key:
            continue
        if column.logical_type in ("number", "integer"):
            numeric.append(column.name)
        elif column.logical_type == "boolean" or column.categories is not None:
            categorical.append(column.name)
        else:
            left[column.name] = (
                "a timestamp"
                if column.logical_type in ("timestamp", "date")
                else "an identifier or free text (too many distinct values)"
            )
    return numeric, categorical, left


def spec_document(plan: InitPlan) -> dict[str, Any]:
    numeric, categorical, _ = features_of(plan.proposal)
    request = plan.request
    return {
        "name": request.name,
        "feature_table": plan.dataset,
        "data": plan.data_text,
        "task": plan.task,
        "target": request.target,
        "time_column": request.time_column,
        "holdout_fraction": 0.2,
        "features": {"numeric": numeric, "categorical": categorical},
        "model": {"estimator": request.estimator or _ESTIMATORS[plan.task], "params": {}, "seed": 0},
        "promotion": {
            "metric": request.metric or _METRICS[plan.task],
            "min_gain": DEFAULT_MIN_GAIN,
            "max_regression": DEFAULT_MAX_REGRESSION,
            "level_within": DEFAULT_LEVEL_WITHIN,
        },
        "policy": Policy.AUTO.value,
    }


def _spec_text(plan: InitPlan) -> str:
    header = (
        f"# Written by `kintsugi init {plan.request.name}` from {plan.data_text}. Paths are relative to the "
        'workspace.\n# policy: auto | ratify | dry-run;  schedule: "0 2 * * *" (cron, UTC) runs it daily '
        "under `kintsugi serve`\n"
    )
    if (said := time_read_line(plan)) is not None:
        header += f"# {said}\n"
    return header + yaml.safe_dump(spec_document(plan), sort_keys=False, default_flow_style=None)


def check_spec(ws: Workspace, plan: InitPlan) -> PipelineSpec:
    """The spec init would write, parsed like any spec, and its estimator importable."""
    from training._estimator import make_estimator

    path = ws.pipelines / f"{plan.request.name}.yaml"
    try:
        spec = parse_spec(yaml.safe_load(_spec_text(plan)), path, ws)
    except SpecError as exc:
        raise InputError(f"the pipeline init would write is not valid: {exc.message}", exc.fix) from exc
    with training_errors_mapped():
        make_estimator(spec.training.estimator, {}, 0)
    return spec


# ------------------------------------------------------------------------------------------------ apply


def apply_init(
    ws: Workspace, plan: InitPlan, *, now_ms: int, purpose: str, say: Callable[[str], None] = lambda _: None
) -> Onboarded:
    """Write everything, under the pipeline's lock, each write journaled in an init record."""
    spec = check_spec(ws, plan)
    name = plan.request.name
    with pipeline_lock(ws, name, f"init {name}"):
        refuse_existing(ws, plan.request)
        if spec.source.exists():
            recover_pipeline(ws, name)
        record = RunRecord(
            new_run_id(now_ms),
            name,
            Policy.AUTO,
            started_ms=int(time.time() * 1000),
            now_ms=now_ms,
            pid=os.getpid(),
            kind=RunKind.INIT,
            dataset=plan.dataset,
        )
        journal = RunJournal(ws, record)
        journal.save()
        try:
            done = _write(ws, plan, spec, journal, now_ms, purpose)
        except Exception as exc:
            what = str(exc) if isinstance(exc, KintsugiError) else f"{type(exc).__name__}: {exc}"
            journal.event(Stage.ERROR, "failed", what, code=getattr(exc, "code", "internal"))
            journal.finish(RunStatus.FAILED, f"init of {name} failed: {what}")
            raise
    say(f"init record {record.run_id} (see `kintsugi runs show {record.run_id}`)")
    return done


def _write(
    ws: Workspace, plan: InitPlan, spec: PipelineSpec, journal: RunJournal, now_ms: int, purpose: str
) -> Onboarded:
    contract_file, kept = _write_files(ws, plan, spec, journal, purpose)
    with metadata_session(ws) as metadata:
        check_datahub(ws, metadata)
        created = _register(metadata, plan, journal, now_ms)
    with journal.writing(LedgerKind.MLFLOW_TAGS, "workspace marker", what="the MLflow store, created and marked"):
        open_store(ws)  # its migrations and its marker now, so that the first run pays for neither
    with journal.writing(LedgerKind.DATAHUB, plan.dataset, aspect="dataContract", file=ws.rel(contract_file)):
        apply_contract_file(ws, contract_file, None, now_ms)
    with (
        metadata_session(ws) as metadata,
        journal.writing(LedgerKind.DATAHUB, plan.dataset, aspect="datasetProfile") as entry,
    ):
        established = establish_reference(ws, spec, metadata, now_ms)
        entry.result.update(rows=established.rows, content_hash=established.content_hash)
    if established.content_hash != plan.content_hash:
        raise TableChanged(
            f"{plan.data_text} changed while init was reading it",
            f"run `kintsugi init {plan.request.name} --force` again when its writer has finished",
        )
    journal.event(
        Stage.INIT,
        "onboarded",
        f"{plan.request.name} onboarded: {plan.dataset}, "
        f"{len(plan.proposal.columns)} columns, {established.rows} rows as the reference",
        dataset=plan.dataset,
        contract=ws.rel(contract_file),
        spec=ws.rel(spec.source),
        upstreams_created=list(created),
        unitless=plan.proposal.unitless(),
    )
    journal.finish(RunStatus.ONBOARDED, f"onboarded from {plan.data_text}")
    return Onboarded(journal.record, spec, contract_file, kept, tuple(created), established.rows)


def _write_files(
    ws: Workspace, plan: InitPlan, spec: PipelineSpec, journal: RunJournal, purpose: str
) -> tuple[Path, Path | None]:
    ws.contracts.mkdir(parents=True, exist_ok=True)
    contract_file = ws.contracts / f"{plan.request.name}.odcs.yaml"
    kept, version = _keep_earlier(ws, contract_file, journal)
    text = plan.proposal.to_odcs(contract_id=plan.request.name, version=version, purpose=purpose)
    with journal.writing(LedgerKind.WORKSPACE_FILE, ws.rel(contract_file), what="contract"):
        _write_atomic(contract_file, text)
    if spec.source.exists():
        earlier = journal.run_dir / "previous-spec.yaml"
        with journal.writing(LedgerKind.WORKSPACE_FILE, ws.rel(earlier), what="the earlier spec, kept"):
            shutil.copyfile(spec.source, earlier)
    with journal.writing(LedgerKind.WORKSPACE_FILE, ws.rel(spec.source), what="pipeline spec"):
        _write_atomic(spec.source, _spec_text(plan))
    return contract_file, kept


def _keep_earlier(ws: Workspace, contract_file: Path, journal: RunJournal) -> tuple[Path | None, str]:
    """An earlier contract file is renamed after its version, never overwritten; the new one is the next major."""
    if not contract_file.exists():
        return None, "1.0.0"
    try:
        earlier = str((yaml.safe_load(contract_file.read_text()) or {}).get("version") or "0")
    except yaml.YAMLError:
        earlier = "0"
    major = int(earlier.split(".")[0]) if earlier.split(".")[0].isdigit() else 0
    kept = contract_file.with_name(f"{contract_file.name[: -len('.yaml')]}.v{earlier}.yaml")
    if kept.exists():
        kept = kept.with_name(f"{kept.stem}.{journal.record.run_id}.yaml")
    with journal.writing(LedgerKind.WORKSPACE_FILE, ws.rel(kept), what="the earlier contract, kept"):
        os.replace(contract_file, kept)
    return kept, f"{major + 1}.0.0"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _register(metadata: MetadataPort, plan: InitPlan, journal: RunJournal, now_ms: int) -> list[str]:
    """Unknown upstreams created (with their SLA), known ones given a new SLA; then the dataset itself."""
    owner = plan.request.owner or operator_urn()
    created = []
    for upstream in plan.upstreams:
        mcps = upstream_mcps(
            metadata,
            upstream.urn,
            sla_hours=upstream.sla_hours,
            owner=owner,
            now_ms=now_ms,
            description=f"Upstream of {plan.request.name}, registered by kintsugi init "
            "(its last load counted as the moment of onboarding)",
        )
        if mcps:
            with journal.writing(
                LedgerKind.DATAHUB, upstream.urn, aspect="datasetProperties", sla_hours=upstream.sla_hours
            ):
                metadata.emit(mcps, now_ms)
            created += [upstream.urn] if len(mcps) > 1 else []
    columns = [SchemaColumn(c.name, c.logical_type, str(_arrow_type(plan, c.name))) for c in plan.proposal.columns]
    properties = {"kintsugi.pipeline": plan.request.name, "kintsugi.location": plan.data_text}
    mcps = dataset_mcps(
        plan.dataset,
        name=plan.request.name,
        columns=columns,
        owner=owner,
        last_modified_ms=now_ms,
        description=f"Feature table of the {plan.request.name} pipeline, onboarded by kintsugi init",
        upstreams=[u.urn for u in plan.upstreams],
        properties=properties,
    )
    with journal.writing(LedgerKind.DATAHUB, plan.dataset, what="dataset+schema+owner+lineage", count=len(mcps)):
        metadata.emit(mcps, now_ms)
    edges = column_lineage_mcps(metadata, plan.dataset, plan.column_edges) if plan.column_edges else []
    if edges:
        with journal.writing(
            LedgerKind.DATAHUB,
            plan.dataset,
            aspect="upstreamLineage",
            columns=sorted({e.column for e in plan.column_edges}),
        ):
            metadata.emit(edges, now_ms)
    return created


def _arrow_type(plan: InitPlan, column: str) -> str:
    return plan.arrow_types.get(column) or plan.profile.columns[column].logical_type
