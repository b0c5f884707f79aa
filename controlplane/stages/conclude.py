"""Conclude: the trust score, the passport, DataHub write-back, the verdict in MLflow, and (when APPROVED) the
champion alias.

The trust score (`controlplane.models.trust`) and the governance scan go into the signed passport, and the score
into DataHub as structured properties of the version and its group, in the same journaled write as the version.
DataHub is written before the alias moves, so a failure there promotes nothing; every write is journaled
before it is made. Exactly one version of a model carries DataHub's `champion` tag: the alias move moves it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from controlplane.datahub.models import TrainedVersion, champion_tag_mcps, model_mcps, read_model_tags, read_passport
from controlplane.datahub.trust_properties import trust_mcps
from controlplane.datahub.urns import model_urn
from controlplane.models import passport_signing as passport
from controlplane.models.gate import PromotionDecision
from controlplane.models.governance import GovernanceSeverity
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.models.trust import TrustEvidence, TrustScore, trust_score
from controlplane.runs.context import RunContext, crash_point
from controlplane.stages.acceptances import in_force_since, load_acceptances
from controlplane.stages.train import Assessment, Trained
from controlplane.vocab import LedgerKind, RunStatus, Stage, Verdict

__all__ = ["Approval", "Concluded", "conclude", "passport_body", "passport_draft", "move_champion"]


@dataclass(frozen=True)
class Approval:
    """A person's word at the promote gate: approved (with why) or rejected (with why)."""

    approved: bool
    reason: str
    by: str


def _final(decision: PromotionDecision, approval: Approval | None) -> tuple[Verdict, list[str]]:
    reasons = list(decision.reasons)
    if approval is None:
        return decision.verdict, reasons
    if not approval.approved:
        return Verdict.REJECTED, [f"rejected by {approval.by}: {approval.reason}", *reasons]
    if decision.verdict is Verdict.NEEDS_REVIEW:
        return Verdict.APPROVED, [f"approved after review by {approval.by}: {approval.reason}", *reasons]
    return decision.verdict, reasons + [f"ratified by {approval.by}: {approval.reason}"]


@dataclass(frozen=True)
class Concluded:
    """The gate's last word on a trained version: what the run ends with."""

    verdict: Verdict
    summary: str
    champion_kept: bool = False  # the candidate lost to the champion on complete evidence

    @property
    def run_status(self) -> RunStatus:
        return self.verdict.run_status(self.champion_kept)


def conclude(run: RunContext, trained: Trained, assessment: Assessment, approval: Approval | None = None) -> Concluded:
    """Sign and write back the version's passport and verdict, and move the champion when APPROVED."""
    verdict, reasons = _final(assessment.decision, approval)
    name = run.spec.name
    with training_errors_mapped():
        store = open_store(run.ws)
        model_dir = store.download_model(name, trained.version, run.journal.run_dir / "model")
    document, verdict, reasons, trust = _signed(run, trained, assessment, verdict, reasons, approval, model_dir)
    kept = assessment.decision.champion_kept and approval is None and verdict is Verdict.BLOCKED
    with training_errors_mapped():
        store.log_json_artifact(trained.mlflow_run, "passport.json", document)
    _write_back(run, trained, verdict, reasons, document, trust, _exceptions(assessment))
    crash_point("conclude:after-datahub")
    with run.journal.writing(LedgerKind.MLFLOW_TAGS, f"{name}/{trained.version}", verdict=verdict.value, kept=kept):
        with training_errors_mapped():
            store.set_version_tags(
                name,
                trained.version,
                {
                    "kintsugi.verdict": verdict.value,
                    "kintsugi.reasons": " | ".join(reasons)[:4000],
                    "kintsugi.run_id": run.run_id,
                },
            )
    if verdict is Verdict.APPROVED:
        move_champion(run, trained.version)
    summary = f"{verdict.value} v{trained.version}: " + "; ".join(reasons)
    run.event(
        Stage.PROMOTE,
        verdict.value,
        f"{summary} (trust {trust.score}/100, {trust.band.value})",
        verdict=verdict.value,
        reasons=reasons,
        version=trained.version,
        gain=assessment.decision.gain,
        trust=trust.to_dict(),
        governance=[f.to_dict() for f in assessment.evidence.governance or ()],
        champion_kept=kept,
    )
    return Concluded(verdict, summary, kept)


def _signed(
    run: RunContext,
    trained: Trained,
    assessment: Assessment,
    verdict: Verdict,
    reasons: list[str],
    approval: Approval | None,
    model_dir: Path,
) -> tuple[dict[str, Any], Verdict, list[str], TrustScore]:
    """The signed passport and the trust it states; a candidate whose passport (or model files) could not be signed
    is BLOCKED, and its trust says so."""
    accepted = _acceptances_since_champion(run, trained)
    if trained.unsealed is not None:
        why = f"the model's files could not be signed: {trained.unsealed}"
    else:
        trust = trust_of(run, trained, assessment, accepted, None)
        try:
            body = passport_body(run, trained, assessment, verdict, reasons, approval, trust, accepted)
            return passport.sign(run.ws, body, model_dir), verdict, reasons, trust
        except passport.SigningError as exc:
            why = f"the passport could not be signed: {exc}"
    reasons = [why, *reasons]
    trust = trust_of(run, trained, assessment, accepted, why)
    body = passport_body(run, trained, assessment, Verdict.BLOCKED, reasons, approval, trust, accepted)
    return passport.unsigned(body, why), Verdict.BLOCKED, reasons, trust


def passport_draft(run: RunContext, trained: Trained, assessment: Assessment) -> dict[str, Any]:
    """What the passport of a candidate paused at the promote gate would sign if a person approved it now, unsigned:
    the gate's verdict, no approval yet, the trust score and governance scan as the gate saw them. A person reads it
    before deciding; `conclude` signs a new body when the run goes on."""
    accepted = _acceptances_since_champion(run, trained)
    trust = trust_of(run, trained, assessment, accepted, None)
    decision = assessment.decision
    return passport_body(run, trained, assessment, decision.verdict, list(decision.reasons), None, trust, accepted)


def trust_of(
    run: RunContext,
    trained: Trained,
    assessment: Assessment,
    accepted: list[dict[str, Any]],
    unsigned: str | None,
) -> TrustScore:
    """The version's trust score, from the evidence the run holds (`unsigned`: why it cannot be signed)."""
    evidence = assessment.evidence
    return trust_score(
        TrustEvidence(
            guard_verdict=evidence.guard_verdict,
            guard_warnings=evidence.guard_warnings,
            acceptances=tuple(f"{a['kind']}:{a['column'] or '-'} by {a['by']}" for a in accepted),
            heal_steps=tuple(f"{s.get('playbook')} on {s.get('column') or '-'}" for s in trained.remediations),
            label_freshness=assessment.label_freshness,
            has_champion=evidence.has_champion,
            gain=assessment.decision.gain,
            min_gain=run.spec.promotion.min_gain,
            governance=evidence.governance,
            unsigned=unsigned,
        )
    )


def _exceptions(assessment: Assessment) -> list[str]:
    return [f.message for f in assessment.evidence.governed(GovernanceSeverity.EXCEPTION)]


def move_champion(run: RunContext, version: int | None, *, restoring: bool = False) -> None:
    """Point `champion` at `version` in MLflow and DataHub (journaled), keeping `previous` for the old one.

    `restoring`: a take-back putting the champion the run found back; its entries say so (`restore`), so a
    later take-back of the same run tells the run's own moves from its own."""
    name = run.spec.name
    marks = {"restore": True} if restoring else {}
    with training_errors_mapped():
        store = open_store(run.ws)
        before = store.champion_version(name)
        with run.journal.writing(LedgerKind.ALIAS, f"{name}@champion", version=version, previous=before, **marks):
            crash_point("conclude:before-alias")
            if version is None:
                store.set_champion(name, None)
            else:
                store.promote(name, version)
    crash_point("conclude:after-alias")
    with run.journal.writing(LedgerKind.DATAHUB, f"{name}@champion", aspect="globalTags", champion=version, **marks):
        run.metadata.emit(champion_tag_mcps(run.metadata, name, version), run.now_ms)


def _key_of(document: dict[str, Any]) -> tuple[str, str] | None:
    """The signer's key id and public key, as the signed passport names them."""
    pem = document.get("public_key")
    signatures = (document.get("envelope") or {}).get("signatures") or [{}]
    return (signatures[0].get("keyid", ""), pem) if pem else None


def _write_back(
    run: RunContext,
    trained: Trained,
    verdict: Verdict,
    reasons: list[str],
    document: dict[str, Any],
    trust: TrustScore,
    exceptions: list[str],
) -> None:
    spec = run.spec
    version = TrainedVersion(
        pipeline=spec.name,
        version=trained.version,
        run_id=run.run_id,
        mlflow_run_id=trained.mlflow_run,
        feature_table=spec.feature_table,
        trained_at_ms=trained.trained_at_ms,
        metrics=trained.metrics,
        params={"estimator": spec.training.estimator, **spec.training.params, "seed": spec.training.seed},
        verdict=verdict,
        summary=f"{verdict.value}: " + "; ".join(reasons),
        passport=document,
        signing_key=_key_of(document),
        table_version=trained.view.location_version,
    )
    tags = read_model_tags(run.metadata, model_urn(spec.name, trained.version))
    mcps = model_mcps(version, tags) + trust_mcps(run.metadata, spec.name, trained.version, trust, exceptions)
    with run.journal.writing(
        LedgerKind.DATAHUB,
        model_urn(spec.name, trained.version),
        what="mlModel+group+lineage+process+trust",
        count=len(mcps),
        trust=trust.score,
    ):
        run.metadata.emit(mcps, run.now_ms)


def passport_body(
    run: RunContext,
    trained: Trained,
    assessment: Assessment,
    verdict: Verdict,
    reasons: list[str],
    approval: Approval | None,
    trust: TrustScore,
    accepted: list[dict[str, Any]],
) -> dict[str, Any]:
    """What the passport signs: how the version was made, on what, judged how — its governance scan and trust
    score included (passports signed before they were added verify as they were signed)."""
    spec = run.spec
    return {
        "pipeline": spec.name,
        "version": trained.version,
        "run_id": run.run_id,
        "trained_at_ms": trained.trained_at_ms,
        "trained_at": datetime.fromtimestamp(trained.trained_at_ms / 1000, tz=timezone.utc).isoformat(),
        "snapshot": {
            "dataset": spec.feature_table,
            "location": spec.data_text,
            "content_hash": trained.view.table_hash,
            "location_hash": trained.view.location_hash,
            "rows": trained.rows["total"],
            **({"version": trained.view.location_version} if trained.view.location_version else {}),
        },
        "guard_at_detect": {
            "verdict": trained.detect_report.get("verdict"),
            "findings": trained.detect_report.get("findings", []),
        },
        "guard_at_training": trained.view.report.to_dict(),
        "incidents": [
            {"urn": r.urn, "key": list(r.key), "created": r.created, "healed_by_this_run": True}
            for r in trained.incidents
        ],
        "remediations": list(trained.remediations),
        "metrics": {
            "metric": spec.training.metric,
            "candidate": trained.metrics,
            "champion": trained.champion_metrics,
            "champion_version": trained.champion_version,
            "gain": assessment.decision.gain,
        },
        "verdict": {"verdict": verdict.value, "reasons": reasons, "gate": assessment.decision.verdict.value},
        "approval": None
        if approval is None
        else {"approved": approval.approved, "reason": approval.reason, "by": approval.by},
        "mlflow": {"model": spec.name, "version": trained.version, "run_id": trained.mlflow_run},
        "lineage": list(assessment.lineage),
        "health_at_training": assessment.health,
        "unhealed_at_training": list(assessment.unhealed),
        "governance": {
            "rules": spec.governance.to_dict(),
            "findings": [f.to_dict() for f in assessment.evidence.governance or ()],
        },
        "trust": trust.to_dict(),
        **({"training_sample": trained.sample} if trained.sample else {}),  # over the row budget: what was fit
        **({"acceptances": accepted} if accepted else {}),  # blocks accepted as the new normal since the champion
    }


def _acceptances_since_champion(run: RunContext, trained: Trained) -> list[dict[str, Any]]:
    """The acceptances in force (`controlplane.stages.acceptances`) the champion's passport did not name."""
    champion = trained.champion_version
    previous = read_passport(run.metadata, run.spec.name, champion) if champion is not None else None
    body = previous.get("body") if isinstance(previous, dict) else None
    return [a.to_dict() for a in in_force_since(load_acceptances(run.ws, run.spec.name), body)]
