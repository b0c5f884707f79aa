"""Guard history in DataHub: one assertion per (dataset, check, column), one run event per guard run."""
from __future__ import annotations

import json

from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.urns import assertion_urn
from guard.findings import CheckOutcome, GuardReport

__all__ = ["assertion_mcps"]


def assertion_mcps(report: GuardReport, run_id: str, now_ms: int) -> list[MCP]:
    """assertionInfo (idempotent: same URN, same content) plus an assertionRunEvent per check outcome."""
    mcps: list[MCP] = []
    for outcome in report.outcomes:
        urn = assertion_urn(report.dataset, outcome.check, outcome.column)
        mcps.append(MCP(entityUrn=urn, aspect=_info(report.dataset, outcome)))
        mcps.append(MCP(entityUrn=urn, aspect=_run_event(report.dataset, urn, outcome, run_id, now_ms)))
    return mcps


def _info(dataset: str, outcome: CheckOutcome) -> s.AssertionInfoClass:
    field = f"urn:li:schemaField:({dataset},{outcome.column})" if outcome.column else None
    return s.AssertionInfoClass(
        type=s.AssertionTypeClass.CUSTOM,
        customAssertion=s.CustomAssertionInfoClass(type=f"kintsugi.{outcome.check}", entity=dataset, field=field),
        source=s.AssertionSourceClass(type=s.AssertionSourceTypeClass.EXTERNAL),
        customProperties={"check": outcome.check, "column": outcome.column or ""},
        description=f"Kintsugi guard check {outcome.check!r}" + (f" on {outcome.column!r}" if outcome.column else ""),
        entityUrn=dataset,
    )


def _run_event(dataset: str, urn: str, outcome: CheckOutcome, run_id: str, now_ms: int) -> s.AssertionRunEventClass:
    result = s.AssertionResultClass(
        type=s.AssertionResultTypeClass.SUCCESS if outcome.passed else s.AssertionResultTypeClass.FAILURE,
        nativeResults={"observed": json.dumps(outcome.observed, default=str)},
    )
    return s.AssertionRunEventClass(timestampMillis=now_ms, runId=run_id, asserteeUrn=dataset,
                                    status=s.AssertionRunStatusClass.COMPLETE, assertionUrn=urn, result=result)
