"""`kintsugi init | land`: onboard a pipeline from where its data lives, and land new batches into it."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from controlplane.cli.lazy import landing, onboarding, services, unitguess
from controlplane.cli.options import NowOption, WorkspaceOption, require_estate
from controlplane.errors import InputError
from controlplane.workspace import resolve_workspace

if TYPE_CHECKING:
    from controlplane.onboard.infer import ColumnProposal, Hints, Question
    from controlplane.onboard.init import InitPlan

__all__ = ["register", "review_lines"]

_Many = Optional[list[str]]


def init(
    name: str,
    data: Annotated[
        str,
        typer.Option(
            help="Where the table lives: a parquet/CSV file, a folder (hive "
            "partitions too), a glob, or s3://bucket/prefix."
        ),
    ],
    target: Annotated[str, typer.Option(help="The label column the model predicts.")],
    time_column: Annotated[str, typer.Option("--time-column", help="The event time (orders the holdout).")],
    task: Annotated[
        Optional[str], typer.Option(help="regression | classification (default: from the target's values).")
    ] = None,
    key: Annotated[_Many, typer.Option(help="A key column (unique, never null); repeat for more.")] = None,
    label_time: Annotated[Optional[str], typer.Option(help="When each label became known.")] = None,
    label_sla: Annotated[
        Optional[float], typer.Option(help="Label freshness SLA in hours (default 24, with --label-time).")
    ] = None,
    dataset: Annotated[
        Optional[str], typer.Option(help="The DataHub dataset URN (default: from the location).")
    ] = None,
    upstream: Annotated[
        _Many, typer.Option(help="URN[=SLA_HOURS] of a dataset this table is made from; repeat for more.")
    ] = None,
    unit: Annotated[_Many, typer.Option(help="COLUMN=UNIT (or COLUMN=none); repeat for more.")] = None,
    column_lineage: Annotated[
        _Many,
        typer.Option(
            "--column-lineage",
            help="COLUMN=UPSTREAM_URN:COLUMN: a column made from a column of an --upstream (DataHub's column "
            "lineage, which the gate's governance scan traces); repeat for more.",
        ),
    ] = None,
    estimator: Annotated[
        Optional[str], typer.Option(help="Import path (default: HistGradientBoostingRegressor/Classifier).")
    ] = None,
    metric: Annotated[
        Optional[str], typer.Option(help="mae, rmse, r2 | roc_auc, accuracy, f1, log_loss (default mae / roc_auc).")
    ] = None,
    owner: Annotated[Optional[str], typer.Option(help="Owner URN (default: urn:li:corpuser:$USER).")] = None,
    now: NowOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Take the proposals as they are; ask nothing.")] = False,
    force: Annotated[
        bool, typer.Option(help="Onboard an existing pipeline again (its contract is kept as an earlier version).")
    ] = False,
    workspace: WorkspaceOption = None,
) -> None:
    """Onboard a pipeline: register the dataset in DataHub, propose and apply its contract, write its spec, and
    record the data as the reference. Asks about every guess it is unsure of (unless --yes)."""
    now_ms = services.parse_now(now) or int(time.time() * 1000)
    request = onboarding.InitRequest(
        name,
        data,
        target,
        time_column,
        task,
        tuple(key or ()),
        label_time,
        dataset,
        tuple(upstream or ()),
        tuple(unit or ()),
        estimator,
        metric,
        label_sla,
        owner,
        force,
        tuple(column_lineage or ()),
    )
    onboarding.check_request(request)  # a wrong option is refused before the workspace is made
    ws = resolve_workspace(workspace).ensure()
    plan = onboarding.plan_init(ws, request, now_ms=now_ms, cwd=Path.cwd())
    typer.echo("\n".join(review_lines(plan)))
    if yes:
        unitless = plan.proposal.unitless()
        typer.echo(f"recorded unitless: {', '.join(unitless) if unitless else 'none'}")
        purpose = f"Proposed by `kintsugi init --yes` from {plan.proposal.rows} rows of {plan.data_text}."
    else:
        plan = _ask(plan)
        purpose = f"Proposed by `kintsugi init` from {plan.proposal.rows} rows of {plan.data_text}, and reviewed."
    done = onboarding.apply_init(ws, plan, now_ms=now_ms, purpose=purpose, say=typer.echo)
    typer.echo(f"\npipeline {name} onboarded: dataset {plan.dataset}")
    typer.echo(
        f"  contract  {ws.rel(done.contract_file)}"
        + (f" (the earlier one kept as {ws.rel(done.kept_contract)})" if done.kept_contract else "")
    )
    typer.echo(f"  spec      {ws.rel(done.spec.source)}")
    typer.echo(f"  reference {done.reference_rows} rows")
    if done.created_upstreams:
        typer.echo(f"  upstreams registered: {', '.join(done.created_upstreams)}")
    when = f" --now {now}" if now else ""
    typer.echo(
        f"\nnext:\n  kintsugi run {name}{when}            # a first champion\n"
        f"  kintsugi land {name} BATCH.parquet     # a new batch, then `kintsugi run {name}` again\n"
        f"  kintsugi contract show '{plan.dataset}'"
    )


def review_lines(plan: InitPlan) -> list[str]:
    """The proposal, column by column with its evidence, and the spec it makes."""
    proposal = plan.proposal
    lines = [f"{plan.data_text}: {proposal.rows} rows, {len(proposal.columns)} columns -> {plan.dataset}", ""]
    lines += [_column_line(c) for c in proposal.columns]
    numeric, categorical, left = onboarding.features_of(proposal)
    spec = onboarding.spec_document(plan)
    lines += [
        "",
        f"task {plan.task}: predict {plan.request.target} with {spec['model']['estimator']}, "
        f"metric {spec['promotion']['metric']}",
        f"features: numeric {', '.join(numeric) or '-'}; categorical {', '.join(categorical) or '-'}",
    ]
    lines += [f"left out: {name} ({why})" for name, why in left.items()]
    lines += [said] if (said := onboarding.time_read_line(plan)) else []
    if proposal.questions:
        lines.append(f"unsure: {', '.join(f'{q.kind} of {q.column}' for q in proposal.questions)}")
    return lines


def _column_line(column: ColumnProposal) -> str:
    parts = [f"  {column.name:<20} {column.logical_type:<9}"]
    if column.role or column.key:
        parts.append(f"[{column.role or 'key'}]")
    if column.unit is not None:
        spelt = column.contract_unit
        named = column.unit.unit
        if named and spelt is None:
            parts.append(f"unit none ({named}: this guard cannot name it yet; {column.unit.evidence})")
        else:
            parts.append(f"unit {spelt or 'none'} ({column.unit.evidence})")
    if column.minimum is not None or column.maximum is not None:
        low = "-inf" if column.minimum is None else f"{column.minimum:g}"
        high = "inf" if column.maximum is None else f"{column.maximum:g}"
        parts.append(f"in [{low}, {high}] ({column.bounds_why})")
    elif column.logical_type in ("number", "integer") and not column.key:
        parts.append(f"unbounded ({column.bounds_why})")
    if column.categories is not None:
        parts.append(f"seen {', '.join(column.categories)} (a new value warns)")
    if column.null_limit is not None:
        parts.append(f"nulls <= {column.null_limit:g}% (seen {column.nulls_seen:g}%)")
    elif column.role not in ("label", "label_timestamp"):
        parts.append(f"nulls against their history (seen {column.nulls_seen:g}%)")
    return " ".join(parts)


def _ask(plan: InitPlan) -> InitPlan:
    hints = plan.hints
    for question in plan.proposal.questions:
        hints = _answer(hints, question)
    answered = plan.answered(hints)
    typer.echo("\n".join(["", "reviewed:"] + [_column_line(c) for c in answered.proposal.columns]))
    if not typer.confirm(f"write pipeline {plan.request.name}?", default=True):
        raise typer.Abort()
    return answered


def _answer(hints: Hints, question: Question) -> Hints:
    if question.kind == "key":
        yes = typer.confirm(f"is {question.column} a key? ({question.evidence})", default=True)
        keys = hints.keys + ((question.column,) if yes else ())
        return replace(hints, keys=keys, settled=hints.settled | {f"key:{question.column}"})
    if question.kind == "label_time":
        yes = typer.confirm(f"is {question.column} when the label became known? ({question.evidence})", default=True)
        return replace(hints, label_time=question.column if yes else None, settled=hints.settled | {"label_time"})
    while True:
        text = typer.prompt(
            f"unit of {question.column}? ({question.evidence}; `none` for unitless)",
            default=question.proposal or "none",
        )
        try:
            unit = unitguess.given_unit(text)
        except InputError as exc:
            typer.echo(str(exc))
            continue
        if unit.unit is not None and unitguess.contract_unit(unit) is None:
            typer.echo(f"  this guard cannot name {unit.unit} yet: {question.column} is recorded unitless")
        return replace(hints, units={**hints.units, question.column: unit})


def land(
    pipeline: str,
    batch: Path,
    workspace: WorkspaceOption = None,
    now: NowOption = None,
    upstream: Annotated[
        _Many,
        typer.Option(
            help="Also record the load on this upstream URN (for upstreams "
            "whose own loads nothing reports); repeat for more."
        ),
    ] = None,
    column_lineage: Annotated[
        _Many,
        typer.Option(
            "--column-lineage",
            help="COLUMN=UPSTREAM_URN:COLUMN: record that a column of the table is made from a column of an "
            "upstream DataHub knows (its earlier column lineage replaced); repeat for more.",
        ),
    ] = None,
) -> None:
    """Append BATCH (a parquet or CSV file) to PIPELINE's table where it lives, and record the load in DataHub."""
    landed = landing.land(
        require_estate(workspace),
        pipeline,
        batch,
        now_ms=services.parse_now(now),
        upstreams=tuple(upstream or ()),
        column_lineage=tuple(column_lineage or ()),
    )
    typer.echo(landed.record.outcome)
    if landed.created:
        typer.echo(f"next: kintsugi run {pipeline}")


def register(app: typer.Typer) -> None:
    app.command()(init)
    app.command()(land)
