"""Lineage: every upstream, any depth, must be known, not deprecated, incident-free and fresh."""

from __future__ import annotations

from typing import Iterator

from guard.context import GuardContext, UpstreamNode
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register

__all__ = ["check_lineage"]

_HOUR_MS = 3_600_000


@register("lineage", per_column=False)
def check_lineage(ctx: GuardContext) -> Iterator[Finding]:
    for node in ctx.lineage:
        yield from _node_findings(ctx, node)


def _node_findings(ctx: GuardContext, node: UpstreamNode) -> Iterator[Finding]:
    urn = ctx.dataset_urn
    if not node.known:
        yield make_finding(
            FindingKind.UPSTREAM_UNKNOWN,
            urn,
            None,
            observed=node.urn,
            expected="a dataset known to DataHub",
            message=f"upstream {node.urn} (depth {node.depth}) is not registered in DataHub",
            upstream=node.urn,
        )
        return
    if node.deprecated:
        yield make_finding(
            FindingKind.UPSTREAM_DEPRECATED,
            urn,
            None,
            observed=node.urn,
            expected="not deprecated",
            message=f"upstream {node.urn} is deprecated",
            upstream=node.urn,
        )
    if node.active_incidents:
        yield make_finding(
            FindingKind.UPSTREAM_INCIDENT,
            urn,
            None,
            observed=list(node.active_incidents),
            expected="no ACTIVE incident",
            upstream=node.urn,
            message=f"upstream {node.urn} has {len(node.active_incidents)} ACTIVE incident(s)",
        )
    if node.freshness_hours is not None:
        if node.last_updated_ms is None:
            yield make_finding(
                FindingKind.UPSTREAM_STALE,
                urn,
                None,
                observed=None,
                expected=node.freshness_hours,
                message=f"upstream {node.urn} has a freshness SLA but no last-updated time",
                upstream=node.urn,
            )
            return
        age = (ctx.now_ms - node.last_updated_ms) / _HOUR_MS
        if age > node.freshness_hours:
            yield make_finding(
                FindingKind.UPSTREAM_STALE,
                urn,
                None,
                observed=round(age, 3),
                expected=node.freshness_hours,
                upstream=node.urn,
                message=f"upstream {node.urn} last updated {age:.1f} h ago, SLA {node.freshness_hours:g} h",
            )
