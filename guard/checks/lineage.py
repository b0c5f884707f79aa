"""Lineage: every upstream, any depth, must be known, not deprecated, incident-free and fresh."""

from __future__ import annotations

from typing import Any, Iterator

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
    def upstream(kind: FindingKind, observed: Any, expected: Any, message: str) -> Finding:
        """A finding on the table for what is wrong with this upstream (named in `upstream`)."""
        return make_finding(
            kind, ctx.dataset_urn, None, observed=observed, expected=expected, message=message, upstream=node.urn
        )

    if not node.known:
        yield upstream(
            FindingKind.UPSTREAM_UNKNOWN,
            node.urn,
            "a dataset known to DataHub",
            f"upstream {node.urn} (depth {node.depth}) is not registered in DataHub",
        )
        return
    if node.deprecated:
        yield upstream(
            FindingKind.UPSTREAM_DEPRECATED, node.urn, "not deprecated", f"upstream {node.urn} is deprecated"
        )
    if node.active_incidents:
        yield upstream(
            FindingKind.UPSTREAM_INCIDENT,
            list(node.active_incidents),
            "no ACTIVE incident",
            f"upstream {node.urn} has {len(node.active_incidents)} ACTIVE incident(s)",
        )
    if node.freshness_hours is not None:
        if node.last_updated_ms is None:
            yield upstream(
                FindingKind.UPSTREAM_STALE,
                None,
                node.freshness_hours,
                f"upstream {node.urn} has a freshness SLA but no last-updated time",
            )
            return
        age = (ctx.now_ms - node.last_updated_ms) / _HOUR_MS
        if age > node.freshness_hours:
            yield upstream(
                FindingKind.UPSTREAM_STALE,
                round(age, 3),
                node.freshness_hours,
                f"upstream {node.urn} last updated {age:.1f} h ago, SLA {node.freshness_hours:g} h",
            )
