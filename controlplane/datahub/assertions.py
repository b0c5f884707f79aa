"""Guard history in DataHub: one assertion per (dataset, check, column), one run event per guard run.

Each check is recorded in DataHub's own assertion type where DataHub has one, so its UI shows what is asserted:
nulls as a FIELD metric (null percentage), ranges and category sets as FIELD values (between / in), volume as a
VOLUME row count, label freshness as FRESHNESS, schema as DATA_SCHEMA. CUSTOM stays for what DataHub has no type
for: units, leakage, drift, duplicate keys and lineage. Every assertion keeps `customProperties` check/column,
which the temporal join (`history.failing_assertions_at`) reads back whatever the type.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Callable

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.datasets import field_type
from controlplane.datahub.port import MetadataPort
from controlplane.datahub.urns import assertion_urn
from guard.contract import ColumnContract, Contract
from guard.findings import CheckOutcome, GuardReport

__all__ = ["assertion_mcps", "VolumeLimits", "NATIVE_TYPES", "AssertionRef", "read_assertion"]


@dataclass(frozen=True)
class VolumeLimits:
    """The rows the guard's volume check accepted (`guard.checks.volume.volume_limits`)."""

    least: int
    most: int
    of_batch: bool  # the snapshot was the new batch (the table's growth), not a whole table


@dataclass(frozen=True)
class AssertionRef:
    """An assertion as DataHub holds it: the dataset it is on and the check it records (None when unset)."""

    urn: str
    dataset: str | None
    check: str | None


def read_assertion(port: MetadataPort, urn: str) -> AssertionRef | None:
    info = port.aspect(urn, s.AssertionInfoClass)
    if info is None:
        return None
    return AssertionRef(urn, info.entityUrn, (info.customProperties or {}).get("check"))


_STD_TYPES = {
    "number": "NUMBER",
    "integer": "NUMBER",
    "string": "STRING",
    "timestamp": "TIME",
    "date": "DATE",
    "boolean": "BOOLEAN",
}


def assertion_mcps(
    report: GuardReport,
    run_id: str,
    now_ms: int,
    *,
    contract: Contract | None = None,
    volume: VolumeLimits | None = None,
) -> list[MCP]:
    """assertionInfo (idempotent: same URN, same content) plus an assertionRunEvent per check outcome.

    `contract` and `volume` give the native assertions their parameters (the null limit, the range, the
    category set, the row counts the volume check accepts, the freshness SLA); without them the type is native
    and the parameter is left out."""
    mcps: list[MCP] = []
    for outcome in report.outcomes:
        urn = assertion_urn(report.dataset, outcome.check, outcome.column)
        mcps.append(MCP(entityUrn=urn, aspect=_info(report.dataset, outcome, contract, volume)))
        mcps.append(MCP(entityUrn=urn, aspect=_run_event(report.dataset, urn, outcome, run_id, now_ms)))
    return mcps


def _info(
    dataset: str, outcome: CheckOutcome, contract: Contract | None, volume: VolumeLimits | None
) -> s.AssertionInfoClass:
    column = contract.column(outcome.column) if contract is not None and outcome.column else None
    info = s.AssertionInfoClass(
        type=s.AssertionTypeClass.CUSTOM,
        source=s.AssertionSourceClass(type=s.AssertionSourceTypeClass.EXTERNAL),
        customProperties={"check": outcome.check, "column": outcome.column or ""},
        description=f"Kintsugi guard check {outcome.check!r}" + (f" on {outcome.column!r}" if outcome.column else ""),
        entityUrn=dataset,
    )
    native = NATIVE_TYPES.get(outcome.check)
    if native is not None and (outcome.column is None) != _per_column(outcome.check):
        native(info, dataset, outcome, column, contract, volume)
        return info
    field = f"urn:li:schemaField:({dataset},{outcome.column})" if outcome.column else None
    info.customAssertion = s.CustomAssertionInfoClass(type=f"kintsugi.{outcome.check}", entity=dataset, field=field)
    return info


def _per_column(check: str) -> bool:
    return check in ("nulls", "domain", "schema")


def _spec(name: str, column: ColumnContract | None) -> s.SchemaFieldSpecClass:
    logical = column.logical_type if column is not None else "unknown"
    return s.SchemaFieldSpecClass(path=name, type=_STD_TYPES.get(logical, "UNKNOWN"), nativeType=logical)


def _number(value: float) -> s.AssertionStdParameterClass:
    return s.AssertionStdParameterClass(value=repr(float(value)), type=s.AssertionStdParameterTypeClass.NUMBER)


def _nulls(
    info: s.AssertionInfoClass, dataset: str, outcome: CheckOutcome, column: ColumnContract | None, *_: object
) -> None:
    """FIELD / FIELD_METRIC: the null percentage of the column at most the contract's limit."""
    limit = column.max_null_fraction if column is not None else None
    info.type = s.AssertionTypeClass.FIELD
    info.fieldAssertion = s.FieldAssertionInfoClass(
        type=s.FieldAssertionTypeClass.FIELD_METRIC,
        entity=dataset,
        fieldMetricAssertion=s.FieldMetricAssertionClass(
            field=_spec(str(outcome.column), column),
            metric=s.FieldMetricTypeClass.NULL_PERCENTAGE,
            operator=s.AssertionStdOperatorClass.LESS_THAN_OR_EQUAL_TO,
            parameters=s.AssertionStdParametersClass(value=_number(limit * 100)) if limit is not None else None,
        ),
    )


def _domain(
    info: s.AssertionInfoClass, dataset: str, outcome: CheckOutcome, column: ColumnContract | None, *_: object
) -> None:
    """FIELD / FIELD_VALUES: every value IN the category set, or BETWEEN the contract's minimum and maximum."""
    operator, parameters = s.AssertionStdOperatorClass.NOT_NULL, None
    if column is not None and column.allowed_values is not None:
        operator = s.AssertionStdOperatorClass.IN
        parameters = s.AssertionStdParametersClass(
            value=s.AssertionStdParameterClass(
                value=json.dumps(list(column.allowed_values)), type=s.AssertionStdParameterTypeClass.SET
            )
        )
    elif column is not None and (column.minimum is not None or column.maximum is not None):
        low, high = column.minimum, column.maximum
        operator = (
            s.AssertionStdOperatorClass.BETWEEN
            if low is not None and high is not None
            else s.AssertionStdOperatorClass.GREATER_THAN_OR_EQUAL_TO
            if low is not None
            else s.AssertionStdOperatorClass.LESS_THAN_OR_EQUAL_TO
        )
        one = low if low is not None else high
        parameters = (
            s.AssertionStdParametersClass(minValue=_number(low), maxValue=_number(high))
            if low is not None and high is not None
            else s.AssertionStdParametersClass(value=_number(one))  # type: ignore[arg-type]
        )
    info.type = s.AssertionTypeClass.FIELD
    info.fieldAssertion = s.FieldAssertionInfoClass(
        type=s.FieldAssertionTypeClass.FIELD_VALUES,
        entity=dataset,
        fieldValuesAssertion=s.FieldValuesAssertionClass(
            field=_spec(str(outcome.column), column),
            operator=operator,
            parameters=parameters,
            excludeNulls=True,
            failThreshold=s.FieldValuesFailThresholdClass(type=s.FieldValuesFailThresholdTypeClass.COUNT, value=0),
        ),
    )


def _volume(
    info: s.AssertionInfoClass,
    dataset: str,
    outcome: CheckOutcome,
    column: ColumnContract | None,
    contract: Contract | None,
    volume: VolumeLimits | None,
) -> None:
    """VOLUME: the rows the guard's volume check accepts, BETWEEN its drop and spike limits — of the new batch as
    ROW_COUNT_CHANGE (what the table grew by), of a whole table as ROW_COUNT_TOTAL; at least 1 without limits."""
    operator = (
        s.AssertionStdOperatorClass.BETWEEN
        if volume is not None
        else s.AssertionStdOperatorClass.GREATER_THAN_OR_EQUAL_TO
    )
    parameters = (
        s.AssertionStdParametersClass(minValue=_number(volume.least), maxValue=_number(volume.most))
        if volume is not None
        else s.AssertionStdParametersClass(value=_number(1))
    )
    info.type = s.AssertionTypeClass.VOLUME
    if volume is not None and volume.of_batch:
        info.volumeAssertion = s.VolumeAssertionInfoClass(
            type=s.VolumeAssertionTypeClass.ROW_COUNT_CHANGE,
            entity=dataset,
            rowCountChange=s.RowCountChangeClass(
                type=s.AssertionValueChangeTypeClass.ABSOLUTE, operator=operator, parameters=parameters
            ),
        )
        return
    info.volumeAssertion = s.VolumeAssertionInfoClass(
        type=s.VolumeAssertionTypeClass.ROW_COUNT_TOTAL,
        entity=dataset,
        rowCountTotal=s.RowCountTotalClass(operator=operator, parameters=parameters),
    )


def _freshness(
    info: s.AssertionInfoClass,
    dataset: str,
    outcome: CheckOutcome,
    column: ColumnContract | None,
    contract: Contract | None,
    *_: object,
) -> None:
    """FRESHNESS: the newest label at most the contract's label freshness SLA old (whole hours, rounded up)."""
    hours = contract.label_freshness_hours if contract is not None else None
    info.type = s.AssertionTypeClass.FRESHNESS
    info.freshnessAssertion = s.FreshnessAssertionInfoClass(
        type=s.FreshnessAssertionTypeClass.DATASET_CHANGE,
        entity=dataset,
        schedule=s.FreshnessAssertionScheduleClass(
            type=s.FreshnessAssertionScheduleTypeClass.FIXED_INTERVAL,
            fixedInterval=s.FixedIntervalScheduleClass(
                unit=s.CalendarIntervalClass.HOUR, multiple=math.ceil(hours) if hours else None
            ),
        ),
    )


def _schema(
    info: s.AssertionInfoClass, dataset: str, outcome: CheckOutcome, column: ColumnContract | None, *_: object
) -> None:
    """DATA_SCHEMA: the dataset's schema holds this column with its contracted type (SUPERSET of it)."""
    name = str(outcome.column)
    logical = column.logical_type if column is not None else "unknown"
    schema = s.SchemaMetadataClass(
        schemaName=name,
        platform="urn:li:dataPlatform:kintsugi",
        version=0,
        hash="",
        platformSchema=s.OtherSchemaClass(rawSchema=""),
        fields=[s.SchemaFieldClass(fieldPath=name, nativeDataType=logical, type=field_type(logical))],
    )
    info.type = s.AssertionTypeClass.DATA_SCHEMA
    info.schemaAssertion = s.SchemaAssertionInfoClass(
        entity=dataset, schema=schema, compatibility=s.SchemaAssertionCompatibilityClass.SUPERSET
    )


NATIVE_TYPES: dict[str, Callable[..., None]] = {
    "nulls": _nulls,
    "domain": _domain,
    "volume": _volume,
    "label_freshness": _freshness,
    "schema": _schema,
}


def _run_event(dataset: str, urn: str, outcome: CheckOutcome, run_id: str, now_ms: int) -> s.AssertionRunEventClass:
    result = s.AssertionResultClass(
        type=s.AssertionResultTypeClass.SUCCESS if outcome.passed else s.AssertionResultTypeClass.FAILURE,
        nativeResults={"observed": json.dumps(outcome.observed, default=str)},
    )
    return s.AssertionRunEventClass(
        timestampMillis=now_ms,
        runId=run_id,
        asserteeUrn=dataset,
        status=s.AssertionRunStatusClass.COMPLETE,
        assertionUrn=urn,
        result=result,
    )
