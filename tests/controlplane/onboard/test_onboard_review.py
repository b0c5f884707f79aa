"""A way out of NEEDS_REVIEW: the run pauses at the promote gate (exit 0, documented); a person's
`kintsugi approve RUN_ID --reason` promotes it with the reason in the passport, `reject --reason` refuses it."""

from __future__ import annotations

import json

from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import PASSPORT_PROPERTY
from controlplane.datahub.urns import model_urn
from controlplane.runs.journal import list_runs
from tests.support import champion, reseed

from onboard_support import NAME, cli, copy_ws


def _paused(ws, at: str, seed: int) -> str:
    reseed(ws, NAME, seed)  # the same rows, another seed: a candidate is fit again, with no gain over the champion
    code, out, err = cli("run", NAME, "--now", at, workspace=ws.root)
    record = list_runs(ws)[-1]
    assert code == 3, err  # a scheduler sees 3 for a run paused at review: a person must decide
    assert record.status.value == "paused" and record.checkpoint["verdict"] == "NEEDS_REVIEW", record.outcome
    assert f"kintsugi approve {record.run_id} --reason" in out
    return record.run_id


def _passport(ws, version: int) -> dict:
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        properties = store.aspect(model_urn(NAME, version), s.MLModelPropertiesClass)
    finally:
        store.close()
    return json.loads(properties.customProperties[PASSPORT_PROPERTY])["body"]


def test_needs_review_is_approved_by_a_person_with_the_reason_in_the_passport_or_rejected(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    run_id = _paused(ws, "2013-01-02T07:00:00+00:00", seed=1)
    code, out, err = cli(
        "approve", run_id, "--reason", "same data, checked the residuals", "--as", "operator", workspace=ws.root
    )
    assert code == 0 and "APPROVED v2" in out, err + out
    assert champion(ws, NAME) == 2
    body = _passport(ws, 2)
    assert body["approval"] == {"approved": True, "reason": "same data, checked the residuals", "by": "operator"}
    assert body["verdict"]["verdict"] == "APPROVED" and body["verdict"]["gate"] == "NEEDS_REVIEW"
    assert any("approved after review" in r for r in body["verdict"]["reasons"])

    run_id = _paused(ws, "2013-01-02T08:00:00+00:00", seed=2)
    code, out, err = cli("reject", run_id, "--reason", "not worth a new version", "--as", "operator", workspace=ws.root)
    assert code == 0 and "REJECTED v3" in out, err + out
    assert champion(ws, NAME) == 2
    assert _passport(ws, 3)["approval"] == {"approved": False, "reason": "not worth a new version", "by": "operator"}
    tags = MlflowClient(tracking_uri=ws.mlflow_uri).get_model_version(NAME, "3").tags
    assert tags["kintsugi.verdict"] == "REJECTED" and "not worth a new version" in tags["kintsugi.reasons"]
