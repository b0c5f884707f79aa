"""Move metadata between the workspace's DataHub Lite store and a team's DataHub GMS.

`push`: everything in Lite goes to GMS, history included — each aspect's versions in order, each stamped with
the instant Lite recorded it (so `history` and `as_of` reads answer on GMS as they did on Lite). It is
idempotent: the plan compares with what GMS already holds and writes only what is missing; pushing the same
content again writes nothing, so GMS makes no new versions. Lite's current values are what
``get_all_aspects`` yields (version 0); the earlier ones are its versions >= 1, read as LiteMetadata.history
reads them.

`pull`: a team's datasets — properties, schema, lineage, ownership, status, deprecation, tags — and, along
their upstreamLineage at any depth, each upstream's properties, deprecation and lineage, into Lite; with, for both,
what the governance scan reads (`controlplane.models.governance`): tags, glossary terms, field edits and domains
(and an upstream's schema, whose fields carry tags and terms).
"""

from __future__ import annotations

import json
import sqlite3
from collections import deque
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from datahub.emitter.aspect import ASPECT_MAP
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.emitter.serialization_helper import post_json_transform
from datahub.metadata import schema_classes as s

from controlplane.datahub.gms import GmsMetadata, is_timeseries
from controlplane.datahub.lite import LiteMetadata
from controlplane.errors import InternalError, MetadataError

__all__ = ["DATASET_ASPECTS", "UPSTREAM_ASPECTS", "PullReport", "PushItem", "PushPlan", "plan_push", "pull", "push"]

_CLASSIFICATION: tuple[type[s._Aspect], ...] = (s.GlossaryTermsClass, s.EditableSchemaMetadataClass, s.DomainsClass)
DATASET_ASPECTS: tuple[type[s._Aspect], ...] = (
    s.DatasetPropertiesClass,
    s.SchemaMetadataClass,
    s.UpstreamLineageClass,
    s.OwnershipClass,
    s.StatusClass,
    s.DeprecationClass,
    s.GlobalTagsClass,
    *_CLASSIFICATION,
)
UPSTREAM_ASPECTS: tuple[type[s._Aspect], ...] = (
    s.DatasetPropertiesClass,
    s.DeprecationClass,
    s.StatusClass,
    s.UpstreamLineageClass,
    s.SchemaMetadataClass,
    s.GlobalTagsClass,
    *_CLASSIFICATION,
)
_LITE_FIX = "check the workspace's datahub.db (a DataHub Lite file), or start from `kintsugi demo`"


@dataclass(frozen=True)
class PushItem:
    """One aspect of one entity: what GMS lacks of its Lite history, oldest first, with Lite's instants."""

    urn: str
    aspect: str
    state: str  # new (GMS has none) | ahead (GMS has an older Lite version) | diverged | unchanged
    pending: tuple[tuple[int, s._Aspect], ...]


@dataclass(frozen=True)
class PushPlan:
    server: str
    items: tuple[PushItem, ...]

    @property
    def versions(self) -> int:
        return sum(len(item.pending) for item in self.items)

    def count(self, state: str) -> int:
        return sum(1 for item in self.items if item.state == state)

    def summary(self, *, done: bool) -> str:
        verb = "pushed" if done else "would push"
        return (
            f"{verb} {self.versions} version(s) of {len(self.items) - self.count('unchanged')} aspect(s) to "
            f"DataHub GMS at {self.server} ({self.count('new')} new, {self.count('ahead')} ahead, "
            f"{self.count('diverged')} diverged); {self.count('unchanged')} aspect(s) already there"
        )


def plan_push(lite_path: Path, gms: GmsMetadata) -> PushPlan:
    """What `push` would write: reads Lite and GMS, writes nothing."""
    versions = _lite_versions(lite_path)
    items = [_plan_one(gms, urn, aspect, history) for (urn, aspect), history in sorted(versions.items())]
    return PushPlan(gms.location, tuple(items))


def push(plan: PushPlan, gms: GmsMetadata) -> int:
    """Write the plan in rounds — round n carries the n-th pending version of each aspect, so versions of one
    aspect never share a batch and GMS records them in order. Returns how many versions were written."""
    rounds = max((len(item.pending) for item in plan.items), default=0)
    for n in range(rounds):
        batch = [
            (MCP(entityUrn=item.urn, aspect=item.pending[n][1]), item.pending[n][0])
            for item in plan.items
            if len(item.pending) > n
        ]
        gms.emit_stamped(batch)
    return plan.versions


def _plan_one(gms: GmsMetadata, urn: str, aspect: str, history: list[tuple[int, s._Aspect]]) -> PushItem:
    cls = ASPECT_MAP[aspect]
    if is_timeseries(cls):
        on_server = {_canonical(v) for v in gms.history(urn, cls)}
        pending = [(t, v) for t, v in history if _canonical(v) not in on_server]
        state = "unchanged" if not pending else ("new" if not on_server else "ahead")
        return PushItem(urn, aspect, state, tuple(pending))
    current = gms.aspect(urn, cls)
    if current is None:
        return PushItem(urn, aspect, "new", tuple(history))
    values = [_canonical(v) for _, v in history]
    if _canonical(current) == values[-1]:
        return PushItem(urn, aspect, "unchanged", ())
    if _canonical(current) in values:
        at = len(values) - 1 - values[::-1].index(_canonical(current))
        return PushItem(urn, aspect, "ahead", tuple(history[at + 1 :]))
    return PushItem(urn, aspect, "diverged", tuple(history[-1:]))


def _canonical(value: s._Aspect) -> str:
    return json.dumps(value.to_obj(), sort_keys=True)


def _lite_versions(path: Path) -> dict[tuple[str, str], list[tuple[int, s._Aspect]]]:
    """(urn, aspect) -> [(instant recorded, value)] over Lite's versions >= 1, oldest first."""
    if not path.is_file():
        raise MetadataError(f"no DataHub Lite store at {path} to push", _LITE_FIX)
    found: dict[tuple[str, str], list[tuple[int, s._Aspect]]] = {}
    try:
        with closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as db:
            rows = db.execute(
                "SELECT urn, aspect_name, createdon, metadata FROM metadata_aspect_v2 "
                "WHERE version > 0 ORDER BY urn, aspect_name, version"
            ).fetchall()
        for urn, aspect, created, metadata in rows:
            value = ASPECT_MAP[aspect].from_obj(post_json_transform(json.loads(metadata)))
            found.setdefault((urn, aspect), []).append((int(created), value))
    except (sqlite3.Error, KeyError, ValueError, TypeError) as exc:
        raise MetadataError(f"cannot read DataHub Lite at {path} for the push: {exc}", _LITE_FIX) from exc
    return found


@dataclass(frozen=True)
class PullReport:
    server: str
    datasets: tuple[str, ...]
    upstreams: tuple[str, ...]
    missing_upstreams: tuple[str, ...]
    written: int
    unchanged: int

    def summary(self) -> str:
        missing = (
            f"; {len(self.missing_upstreams)} upstream(s) unknown to GMS: {', '.join(self.missing_upstreams)}"
            if self.missing_upstreams
            else ""
        )
        return (
            f"pulled {len(self.datasets)} dataset(s) and {len(self.upstreams)} upstream(s) from DataHub GMS at "
            f"{self.server}: {self.written} aspect(s) written, {self.unchanged} already current{missing}"
        )


def pull(gms: GmsMetadata, lite: LiteMetadata, urns: Sequence[str], now_ms: int) -> PullReport:
    """Copy the datasets and their upstreams' properties from GMS into Lite (identical values are not rewritten)."""
    bad = [urn for urn in urns if not urn.startswith("urn:li:dataset:")]
    if bad or not urns:
        raise MetadataError(
            f"`pull` takes dataset URNs; got {', '.join(bad) or 'none'}",
            "pass URNs such as urn:li:dataset:(urn:li:dataPlatform:postgres,db.schema.table,PROD)",
        )
    mcps: list[MCP] = []
    for urn in urns:
        found = _fetch(gms, urn, DATASET_ASPECTS)
        if not found:
            raise MetadataError(
                f"DataHub GMS at {gms.location} holds none of {urn}'s dataset aspects",
                "check the URN (copy it from the dataset's page in DataHub) and the token's read access",
            )
        mcps.extend(found)
    upstreams, missing = _walk_upstreams(gms, list(urns), mcps)
    written, unchanged = _write_new(lite, mcps, now_ms)
    return PullReport(gms.location, tuple(urns), tuple(upstreams), tuple(missing), written, unchanged)


def _walk_upstreams(gms: GmsMetadata, named: list[str], mcps: list[MCP]) -> tuple[list[str], list[str]]:
    seen = set(named)
    found: list[str] = []
    missing: list[str] = []
    queue = deque(_lineage_of(mcps, named))
    while queue:
        urn = queue.popleft()
        if urn in seen:
            continue
        seen.add(urn)
        fetched = _fetch(gms, urn, UPSTREAM_ASPECTS)
        (found if fetched else missing).append(urn)
        mcps.extend(fetched)
        queue.extend(_lineage_of(fetched, [urn]))
    return found, missing


def _lineage_of(mcps: list[MCP], urns: list[str]) -> list[str]:
    return [
        up.dataset
        for m in mcps
        if m.entityUrn in urns and isinstance(m.aspect, s.UpstreamLineageClass)
        for up in m.aspect.upstreams
    ]


def _fetch(gms: GmsMetadata, urn: str, aspects: tuple[type[s._Aspect], ...]) -> list[MCP]:
    return [MCP(entityUrn=urn, aspect=value) for cls in aspects if (value := gms.aspect(urn, cls)) is not None]


def _write_new(lite: LiteMetadata, mcps: list[MCP], now_ms: int) -> tuple[int, int]:
    pulled = [(m, _urn_and_aspect(m)) for m in mcps]  # every one checked before anything is written
    new = [m for m, (urn, aspect) in pulled if _current(lite, urn, aspect) != _canonical(aspect)]
    if new:
        lite.emit(new, now_ms)
    return len(new), len(mcps) - len(new)


def _urn_and_aspect(mcp: MCP) -> tuple[str, s._Aspect]:
    """A pulled MCP's entity and aspect (`_fetch` builds each with both)."""
    if not mcp.entityUrn or not mcp.aspect:
        raise InternalError(
            f"a proposal pulled from DataHub GMS lacks its entity or aspect ({mcp.entityUrn!r})",
            "report this as a bug; nothing was written to the local store",
        )
    return mcp.entityUrn, mcp.aspect


def _current(lite: LiteMetadata, urn: str, aspect: s._Aspect) -> str | None:
    value = lite.aspect(urn, type(aspect))
    return None if value is None else _canonical(value)
