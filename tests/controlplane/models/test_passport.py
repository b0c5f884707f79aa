"""The Model Passport as a signed, publicly verifiable attestation, read back from the real stores: signed by
default, checked with the public key only, and the evidence promotion rests on (a mutable tag is not)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import PASSPORT_PROPERTY, datahub_champion
from controlplane.datahub.urns import model_urn
from controlplane.errors import GateRefused
from controlplane.frontdoor.services import promote
from controlplane.models.passport import verify_passport
from controlplane.pipeline import run_pipeline
from controlplane.signing import load_or_create_key, sign_passport
from controlplane.spec import load_spec
from controlplane.vocab import Stage
from demo.seed import PIPELINE
from tests.support import DEMO_NOW, champion, kintsugi, ms, rewrite_passport, use_estimator

ROOT = Path(__file__).resolve().parents[3]
MODEL_SIGNING = Path(sys.executable).parent / "model_signing"


def _model_dir(ws, version: int) -> Path:
    """The version's model files in the workspace's artifact store (what MLflow serves)."""
    source = MlflowClient(tracking_uri=ws.mlflow_uri).get_model_version(PIPELINE, str(version)).source
    return Path(source.removeprefix("file://"))


def test_the_demo_champion_verifies_with_no_key_configured(demo_run, monkeypatch):
    for name in ("KINTSUGI_PASSPORT_KEY", "KINTSUGI_SIGNING_KEY"):
        monkeypatch.delenv(name, raising=False)
    ws, _ = demo_run
    check = verify_passport(ws, PIPELINE)
    assert check.ok and check.status == "valid", check.reasons
    assert (ws.keys / "signing-key.pem").stat().st_mode & 0o777 == 0o600


def test_a_changed_model_file_is_named_and_model_signing_rejects_it_too(demo_copy):
    ws, _ = demo_copy
    version = champion(ws)
    model_dir = _model_dir(ws, version)
    cli = [
        str(MODEL_SIGNING),
        "verify",
        "key",
        str(model_dir),
        "--signature",
        str(model_dir / "model.sig"),
        "--public_key",
        str(ws.keys / "signing-key.pub.pem"),
    ]
    assert subprocess.run(cli, capture_output=True, text=True).returncode == 0
    with open(model_dir / "model.pkl", "ab") as handle:
        handle.write(b"\0")  # a swapped model file
    check = verify_passport(ws, PIPELINE, version)
    assert not check.ok and check.status == "altered"
    assert any("model.pkl" in r for r in check.reasons), check.reasons
    assert subprocess.run(cli, capture_output=True, text=True).returncode != 0
    with pytest.raises(GateRefused, match="passport does not verify"):
        promote(ws, PIPELINE, version, "by hand", actor="tester")


def test_audit_checks_the_model_files_against_the_signed_passport_as_verify_does(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    version = champion(ws)
    code, out, _ = kintsugi(monkeypatch, capsys, "audit", PIPELINE, "-w", str(ws.root))
    assert code == 0 and f"{PIPELINE} v{version} [champion]: ok" in out, out
    (_model_dir(ws, version) / "model.pkl").write_bytes(b"another model")  # the champion's model replaced
    code, out, _ = kintsugi(monkeypatch, capsys, "passport", "verify", PIPELINE, "-w", str(ws.root))
    assert code == 1 and out.startswith("NOT verified (altered)") and "model.pkl" in out, out
    code, out, _ = kintsugi(monkeypatch, capsys, "audit", PIPELINE, "-w", str(ws.root))
    assert code == 1, out
    assert f"{PIPELINE} v{version} [champion]: UNSAFE signature altered" in out, out
    assert f"{PIPELINE} v{version - 1}: ok" in out  # an earlier version's files are its own, untouched


def test_a_passport_re_signed_with_another_key_is_untrusted(demo_copy, tmp_path):
    ws, _ = demo_copy
    version = champion(ws)
    other = load_or_create_key(tmp_path / "mallory", env={})
    original = verify_passport(ws, PIPELINE, version)
    assert original.ok
    body = json.loads(
        LiteMetadata(ws.datahub_db, read_only=True)
        .aspect(model_urn(PIPELINE, version), s.MLModelPropertiesClass)
        .customProperties[PASSPORT_PROPERTY]
    )["body"]
    rewrite_passport(ws, PIPELINE, version, sign_passport(body, _model_dir(ws, version), other))
    check = verify_passport(ws, PIPELINE, version)
    assert not check.ok and check.status == "untrusted_key", check.reasons


def test_verification_needs_only_the_public_key(demo_copy, tmp_path):
    ws, _ = demo_copy
    public = tmp_path / "kintsugi.pub.pem"
    shutil.copyfile(ws.keys / "signing-key.pub.pem", public)
    shutil.rmtree(ws.keys)  # this process, and the one below, have no private key at all
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controlplane",
            "passport",
            "verify",
            PIPELINE,
            "-w",
            str(ws.root),
            "--public-key",
            str(public),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("verified (valid)")


def _heap_limited() -> None:  # a key read without a limit (the old /dev/zero read) ends in MemoryError, not in swap
    resource.setrlimit(resource.RLIMIT_DATA, (4 << 30, 4 << 30))


@pytest.mark.parametrize("kind", ["device", "fifo", "oversized"])
def test_a_public_key_that_is_not_a_small_regular_file_is_refused_at_once(demo_run, tmp_path, kind):
    ws, _ = demo_run
    if kind == "device":
        key = Path("/dev/zero")  # endless: read whole, it never ends
    elif kind == "fifo":
        key = tmp_path / "key.pem"
        os.mkfifo(key)  # nobody writes: opened for reading, it blocks forever
    else:
        key = tmp_path / "key.pem"
        key.write_bytes(b"-----BEGIN PUBLIC KEY-----\n" + b"A" * (1 << 20))
    done = subprocess.run(
        [sys.executable, "-m", "controlplane", "passport", "verify", PIPELINE, "-w", str(ws.root)]
        + ["--public-key", str(key)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        preexec_fn=_heap_limited,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    said = "is over 65536 bytes" if kind == "oversized" else "is not a regular file"
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and f"public key {key} {said}" in done.stderr


def test_a_flipped_verdict_tag_or_an_edited_passport_does_not_make_a_blocked_version_promotable(demo_copy):
    ws, _ = demo_copy
    client = MlflowClient(tracking_uri=ws.mlflow_uri)
    before = champion(ws)
    with use_estimator(ws, "sklearn.dummy.DummyRegressor"):
        record = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(DEMO_NOW + timedelta(minutes=20)))
    assert record.status == "kept", record.outcome  # the candidate lost: the champion stands
    blocked = record.last_event(Stage.PROMOTE).evidence["version"]
    client.set_model_version_tag(PIPELINE, str(blocked), "kintsugi.verdict", "APPROVED")  # a tag is not evidence
    with pytest.raises(GateRefused, match="its signed verdict is BLOCKED"):
        promote(ws, PIPELINE, blocked, "by hand", actor="tester")
    passport = json.loads(
        LiteMetadata(ws.datahub_db, read_only=True)
        .aspect(model_urn(PIPELINE, blocked), s.MLModelPropertiesClass)
        .customProperties[PASSPORT_PROPERTY]
    )
    passport["body"]["verdict"]["verdict"] = "APPROVED"
    rewrite_passport(ws, PIPELINE, blocked, passport)
    with pytest.raises(GateRefused, match="passport does not verify"):  # nor is an edited passport
        promote(ws, PIPELINE, blocked, "by hand", actor="tester")
    assert champion(ws) == before
    store = LiteMetadata(ws.datahub_db, read_only=True)
    assert datahub_champion(store, PIPELINE) == [before]  # exactly one version carries the champion tag
    store.close()
