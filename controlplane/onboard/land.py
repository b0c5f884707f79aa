"""`kintsugi land`: append a batch to a pipeline's table where it lives, and record the load in DataHub.

Under the pipeline's lock, journaled in a `land` record under runs/ (listed by `kintsugi runs`, not a run of the
loop). The batch goes in through `TableLocation.append`: a new content-named file in a folder, glob or S3 prefix
(landing the same batch twice changes nothing), or an atomic rewrite of a single file; a batch whose bytes a
land record already put in is not landed again. A parquet batch whose
columns differ from the table's (a renamed column) is landed as it is: the table reads by column name, and the
next run's guard judges the change.

The load is recorded as DataHub's standard `operation` aspect on the feature table (INSERT, rows, time) and as its
`datasetProperties.lastModified`: the aspects DataHub's own ingestion writes, and the ones the guard reads for an
upstream's freshness (the `kintsugi.freshnessSlaHours` custom property only says how fresh it must be). With
`--upstream URN` the load is also recorded on an upstream that nothing else reports loads of. With
`--column-lineage COLUMN=UPSTREAM_URN:COLUMN` the table's column lineage is recorded first (DataHub's
fineGrainedLineages: the columns named get these edges, every other edge is kept), whether or not the batch is new.
"""

from __future__ import annotations

import getpass
import os
import time
from dataclasses import dataclass
from pathlib import Path

from controlplane.datahub.column_lineage import OPTION as COLUMN_LINEAGE
from controlplane.datahub.column_lineage import ColumnEdge, column_lineage_mcps, parse_column_edge
from controlplane.datahub.connect import metadata_session
from controlplane.datahub.datasets import is_known, operation_mcp, read_schema
from controlplane.datahub.loads import last_modified_mcps
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import check_dataset_urn
from controlplane.errors import DataError, InputError, KintsugiError
from controlplane.runs.context import crash_point
from controlplane.runs.identity import check_datahub
from controlplane.runs.journal import RunJournal, RunRecord, list_runs, new_run_id
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import PipelineSpec, load_spec
from controlplane.stages.pin import append_batch, batch_row_count, file_hash, live_hash
from controlplane.takeback.recovery import recover_pipeline
from controlplane.vocab import LedgerKind, Policy, RunKind, RunStatus, Stage
from controlplane.workspace import Workspace

__all__ = ["Landed", "land", "operator_urn"]


@dataclass(frozen=True)
class Landed:
    record: RunRecord
    rows: int
    names: tuple[str, ...]
    created: bool  # False: this very batch had been landed already; nothing changed


def land(
    ws: Workspace,
    pipeline: str,
    batch: Path,
    *,
    now_ms: int | None = None,
    upstreams: tuple[str, ...] = (),
    column_lineage: tuple[str, ...] = (),
) -> Landed:
    spec = load_spec(ws, pipeline)
    now_ms = now_ms or int(time.time() * 1000)
    batch = Path(batch).expanduser().resolve()
    if not batch.is_file():
        raise DataError(f"batch {batch} does not exist or is not a file", "pass the path of a parquet or CSV file")
    if batch_row_count(batch) == 0:  # a header only: an empty load is not a load, and is not recorded as one
        raise InputError(f"batch {batch.name} has no rows; nothing was landed", "land a file with at least one row")
    for urn in upstreams:
        check_dataset_urn(urn, "--upstream")
    edges = tuple(parse_column_edge(text) for text in column_lineage)
    with pipeline_lock(ws, spec.name, f"land {batch.name}"):
        recover_pipeline(ws, spec.name)
        record = RunRecord(
            new_run_id(now_ms),
            spec.name,
            Policy.AUTO,
            started_ms=int(time.time() * 1000),
            now_ms=now_ms,
            pid=os.getpid(),
            kind=RunKind.LAND,
            batch=str(batch),
        )
        journal = RunJournal(ws, record)
        journal.save()
        try:
            if edges:
                _record_column_lineage(ws, spec, journal, edges)
            return _land(ws, spec, batch, journal, upstreams)
        except Exception as exc:
            what = str(exc) if isinstance(exc, KintsugiError) else f"{type(exc).__name__}: {exc}"
            journal.event(Stage.ERROR, "failed", what, code=getattr(exc, "code", "internal"))
            journal.finish(RunStatus.FAILED, f"land of {batch.name} failed: {what}")
            raise


def _landed_before(ws: Workspace, pipeline: str, sha: str) -> str | None:
    """The land record that already put these very bytes into the pipeline's table, if any."""
    for earlier in reversed(list_runs(ws)):
        if (
            earlier.pipeline == pipeline
            and earlier.kind is RunKind.LAND
            and any(
                e.done and e.detail.get("batch_sha256") == sha and e.result.get("created")
                for e in earlier.entries(LedgerKind.APPEND)
            )
        ):
            return earlier.run_id
    return None


def _land(ws: Workspace, spec: PipelineSpec, batch: Path, journal: RunJournal, upstreams: tuple[str, ...]) -> Landed:
    record = journal.record
    sha = file_hash(batch)
    earlier = _landed_before(ws, spec.name, sha)
    if earlier is not None:  # a single file would take the rows twice; a folder already holds the file
        summary = f"{batch.name} was landed already by {earlier}; nothing changed"
        journal.event(Stage.LAND, "unchanged", summary, landed_by=earlier)
        journal.finish(RunStatus.LANDED, summary)
        return Landed(record, 0, (), False)
    try:
        before: str | None = live_hash(ws, spec)
    except DataError:
        before = None  # no table yet: the first batch creates it
    with journal.writing(
        LedgerKind.APPEND, spec.data_text, batch=str(batch), batch_sha256=sha, before_hash=before
    ) as entry:
        appended = append_batch(ws, spec, batch)
        crash_point("land:appended")
        entry.result.update(names=list(appended.names), rows=appended.rows, created=appended.created)
    if appended.created:
        with metadata_session(ws) as metadata:
            check_datahub(ws, metadata)
            _record_load(metadata, spec, journal, appended.rows, upstreams, batch.name)
    where = ", ".join(appended.names)
    summary = (
        f"{appended.rows} rows from {batch.name} landed in {spec.data_text} ({where})"
        if appended.created
        else f"{batch.name} was landed already ({where}); nothing changed"
    )
    journal.event(
        Stage.LAND,
        "landed" if appended.created else "unchanged",
        summary,
        rows=appended.rows,
        files=list(appended.names),
        created=appended.created,
    )
    journal.finish(RunStatus.LANDED, summary)
    return Landed(record, appended.rows, appended.names, appended.created)


def _record_load(
    metadata: MetadataPort, spec: PipelineSpec, journal: RunJournal, rows: int, upstreams: tuple[str, ...], batch: str
) -> None:
    now_ms, actor = journal.record.now_ms, operator_urn()
    unknown = [u for u in upstreams if not is_known(metadata, u)]
    if unknown:
        raise InputError(
            f"--upstream {unknown[0]} is not a dataset DataHub knows",
            f"register it with `kintsugi init {spec.name} --force --upstream URN=SLA_HOURS ...`",
        )
    mcps = [
        operation_mcp(spec.feature_table, rows=rows, at_ms=now_ms, actor=actor),
        *last_modified_mcps(metadata, spec.feature_table, now_ms),
    ]
    with journal.writing(LedgerKind.DATAHUB, spec.feature_table, aspect="operation+lastModified", rows=rows):
        metadata.emit(mcps, now_ms)
    for urn in upstreams:
        load = operation_mcp(
            urn,
            rows=None,
            at_ms=now_ms,
            actor=actor,
            properties={"recordedBy": "kintsugi land", "batch": batch, "into": spec.feature_table},
        )
        with journal.writing(LedgerKind.DATAHUB, urn, aspect="operation"):
            metadata.emit([load], now_ms)


def _record_column_lineage(
    ws: Workspace, spec: PipelineSpec, journal: RunJournal, edges: tuple[ColumnEdge, ...]
) -> None:
    """The declared column lineage, each column one of the table's registered schema and each upstream known."""
    with metadata_session(ws) as metadata:
        check_datahub(ws, metadata)
        columns = [c.name for c in read_schema(metadata, spec.feature_table) or []]
        for edge in edges:
            if edge.column not in columns:
                raise InputError(
                    f"{COLUMN_LINEAGE} names {edge.column!r}, not a column of {spec.feature_table} in DataHub",
                    f"use one of the columns: {', '.join(columns) or 'none registered: onboard it with `kintsugi init`'}",
                )
            if not is_known(metadata, edge.source.dataset):
                raise InputError(
                    f"{COLUMN_LINEAGE} names {edge.source.dataset}, not a dataset DataHub knows",
                    f"register it with `kintsugi init {spec.name} --force --upstream URN ...`",
                )
        mcps = column_lineage_mcps(metadata, spec.feature_table, edges)
        if mcps:
            with journal.writing(
                LedgerKind.DATAHUB,
                spec.feature_table,
                aspect="upstreamLineage",
                columns=sorted({e.column for e in edges}),
            ):
                metadata.emit(mcps, journal.record.now_ms)


def operator_urn() -> str:
    """The person running the command, as a DataHub user (the OS user name; `kintsugi` when there is none)."""
    try:
        name = getpass.getuser() or "kintsugi"
    except (KeyError, OSError):
        name = "kintsugi"
    return f"urn:li:corpuser:{name}"
