"""The champion's health, level-based: each version's data health at its own training instant, recomputed from
DataHub history (the temporal join `kintsugi audit` uses), what changed upstream since, and the decision on the
champion — keep it, roll it back to the newest earlier version that is clean at its own instant, or flag it.

Reads only. `decide` is pure: the versions' health, the rollbacks already recorded, and a refusal function for the
evidence in, a `Decision` out. What was acted on is read from the run records (a rollback is a record), so a
restart decides the same way and never acts twice on the same champion and causes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from controlplane.datahub.assertions import read_assertion
from controlplane.datahub.datasets import SchemaColumn, read_schema
from controlplane.datahub.deprecations import read_deprecation
from controlplane.datahub.history import health_at, unhealed_at
from controlplane.datahub.incident_records import read_incident
from controlplane.datahub.model_risk import Cause
from controlplane.datahub.models import model_versions, read_passport
from controlplane.datahub.port import MetadataPort
from controlplane.runs.journal import list_runs
from controlplane.vocab import RunKind, RunStatus, Verdict
from controlplane.workspace import Workspace

__all__ = [
    "VersionHealth",
    "Decision",
    "PriorRollback",
    "version_health",
    "versions_health",
    "cause_of",
    "drift_since",
    "prior_rollbacks",
    "rolled_back_versions",
    "decide",
]

_SETTLED = (RunStatus.ROLLED_BACK, RunStatus.UNDONE, RunStatus.REJECTED)  # a person or a pass has had its say


@dataclass(frozen=True)
class VersionHealth:
    pipeline: str
    version: int
    trained_at_ms: int
    datasets: tuple[str, ...]  # the feature table, then its lineage at training
    recorded: tuple[str, ...]  # unhealed at training, as its passport says
    causes: tuple[str, ...]  # unhealed at training, as DataHub history says now
    verdict: str | None  # the signed verdict in its passport
    unreadable: str | None = None

    @property
    def learned(self) -> tuple[str, ...]:
        """Causes its passport did not know of: what DataHub learned after the version was assessed."""
        return tuple(c for c in self.causes if c not in self.recorded)

    @property
    def clean(self) -> bool:
        return self.unreadable is None and not self.causes


@dataclass(frozen=True)
class PriorRollback:
    run_id: str
    status: RunStatus
    from_version: int
    to_version: int | None
    causes: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    action: str  # healthy | rollback | flag | waiting | none
    champion: int | None
    target: int | None
    causes: tuple[str, ...]
    why: str


def version_health(port: MetadataPort, pipeline: str, version: int) -> VersionHealth:
    """The version's data health at its own training instant, recomputed now (as `kintsugi audit` does)."""
    document = read_passport(port, pipeline, version)
    body = (document or {}).get("body")
    unreadable = VersionHealth(pipeline, version, 0, (), (), (), None, "DataHub holds no readable passport for it")
    if not isinstance(body, dict):
        return unreadable
    try:
        at_ms, table = int(body["trained_at_ms"]), str(body["snapshot"]["dataset"])
        lineage = tuple(body.get("lineage", []))
        healed = [i["urn"] for i in body.get("incidents", [])]
    except (KeyError, TypeError, ValueError, AttributeError):
        return unreadable
    causes = unhealed_at(health_at(port, {table, *lineage}, at_ms), table, healed)
    verdict = (body.get("verdict") or {}).get("verdict")
    return VersionHealth(
        pipeline, version, at_ms, (table, *lineage), tuple(body.get("unhealed_at_training", [])), tuple(causes), verdict
    )


def versions_health(port: MetadataPort, pipeline: str) -> list[VersionHealth]:
    return [version_health(port, pipeline, v) for _, v in model_versions(port, pipeline)]


def cause_of(port: MetadataPort, urn: str) -> Cause:
    """An incident or assertion URN as a cause: its dataset, title and priority (a failing assertion: HIGH)."""
    incident = read_incident(port, urn) if urn.startswith("urn:li:incident:") else None
    if incident is not None:
        priority = incident.priority if incident.priority is not None else 2
        dataset = (incident.datasets or ("?",))[0]
        return Cause(urn, "incident", dataset, incident.title or urn, priority, incident.source_urn)
    assertion = read_assertion(port, urn)
    dataset = (assertion.dataset if assertion is not None else None) or "?"
    check = (assertion.check if assertion is not None else None) or "assertion"
    return Cause(urn, "assertion", dataset, f"assertion {check} failing on {dataset}", 1, urn)


def _fields(schema: list[SchemaColumn] | None) -> dict[str, str]:
    return {c.name: c.native_type for c in schema} if schema is not None else {}


def drift_since(port: MetadataPort, health: VersionHealth) -> list[Cause]:
    """Upstreams that changed shape or were deprecated since the version's training instant."""
    causes = []
    for dataset in health.datasets[1:]:
        then = _fields(read_schema(port, dataset, as_of_ms=health.trained_at_ms + 1))
        now = _fields(read_schema(port, dataset))
        if then and now != then:
            changed = sorted(set(then.items()) ^ set(now.items()))
            names = ", ".join(dict.fromkeys(name for name, _ in changed))
            causes.append(
                Cause(
                    f"schema:{dataset}:{names}",
                    "schema",
                    dataset,
                    f"the schema of {dataset} changed since training ({names})",
                    3,
                )
            )
        deprecation = read_deprecation(port, dataset)
        earlier = read_deprecation(port, dataset, as_of_ms=health.trained_at_ms + 1)
        if deprecation is not None and deprecation.deprecated and not (earlier and earlier.deprecated):
            causes.append(
                Cause(
                    f"deprecation:{dataset}",
                    "deprecation",
                    dataset,
                    f"{dataset} was deprecated: {deprecation.note or 'no note'}",
                    2,
                )
            )
    return causes


def prior_rollbacks(ws: Workspace, pipeline: str) -> list[PriorRollback]:
    """The rollback records of a pipeline, oldest first (proposed, done, rejected, undone...)."""
    found = []
    for record in list_runs(ws):
        rollback = record.rollback
        if record.pipeline == pipeline and record.kind is RunKind.ROLLBACK and rollback is not None:
            found.append(
                PriorRollback(record.run_id, record.status, rollback.from_version, rollback.to_version, rollback.causes)
            )
    return found


def rolled_back_versions(ws: Workspace, pipeline: str) -> set[int]:
    """Versions a standing rollback took `champion` away from: never settled on again unless it is undone."""
    return {p.from_version for p in prior_rollbacks(ws, pipeline) if p.status is RunStatus.ROLLED_BACK}


def decide(
    champion: VersionHealth | None,
    earlier: list[VersionHealth],
    prior: list[PriorRollback],
    refusal: Callable[[int], str | None],
) -> Decision:
    """Keep a clean champion; roll an unsafe one back to the newest earlier version that is clean at its own
    instant, APPROVED by its signed verdict and whose evidence verifies (`refusal` None); else flag it. A
    rollback already proposed, done, rejected or undone for this champion and these causes is not repeated."""
    if champion is None:
        return Decision("none", None, None, (), "no champion")
    version = champion.version
    if champion.unreadable is not None:
        return Decision("flag", version, None, (), f"v{version}: {champion.unreadable}")
    if not champion.causes:
        return Decision("healthy", version, None, (), f"v{version} is clean at its training instant")
    causes = champion.causes
    for past in reversed(prior):
        if past.from_version == version and set(causes) <= set(past.causes):
            if past.status is RunStatus.PAUSED:
                return Decision(
                    "waiting",
                    version,
                    past.to_version,
                    causes,
                    f"the rollback proposed in run {past.run_id} waits for `kintsugi approve`",
                )
            if past.status in _SETTLED:
                return Decision(
                    "flag",
                    version,
                    None,
                    causes,
                    f"the rollback of run {past.run_id} was {past.status.value}: v{version} stays champion, flagged",
                )
    for candidate in sorted(earlier, key=lambda h: h.version, reverse=True):
        if candidate.version >= version or not candidate.clean or candidate.verdict != Verdict.APPROVED.value:
            continue
        if refusal(candidate.version) is None:
            return Decision(
                "rollback",
                version,
                candidate.version,
                causes,
                f"v{version}'s training instant is covered by " + ", ".join(causes),
            )
    return Decision(
        "flag",
        version,
        None,
        causes,
        f"v{version}'s training instant is covered by "
        + ", ".join(causes)
        + "; no earlier version is clean at its own instant with verified evidence",
    )
