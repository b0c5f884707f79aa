"""The model's files in the OpenSSF model-signing format, checked by us and by the real model_signing CLI."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

from controlplane.signing import SIGNATURE_FILE, sign_model_dir, verify_model_dir

MODEL_SIGNING = Path(sys.executable).parent / "model_signing"


def _cli_verify(model_dir: Path, public_pem: Path) -> subprocess.CompletedProcess[str]:
    """What the README tells a user to run, with nothing but the public key."""
    command = [
        str(MODEL_SIGNING),
        "verify",
        "key",
        str(model_dir),
        "--signature",
        str(model_dir / SIGNATURE_FILE),
        "--public_key",
        str(public_pem),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def _public_pem(key, tmp_path: Path) -> Path:
    path = tmp_path / "kintsugi.pub.pem"
    path.write_bytes(key.public.pem)
    return path


def test_a_signed_model_dir_verifies_here_and_with_the_model_signing_cli(model_dir, key, tmp_path: Path):
    signature = sign_model_dir(model_dir, key)
    assert signature == model_dir / SIGNATURE_FILE and signature.is_file()
    result = verify_model_dir(model_dir, _public_pem(key, tmp_path))
    assert result.ok and result.altered_files == ()
    run = _cli_verify(model_dir, _public_pem(key, tmp_path))
    assert run.returncode == 0 and "Verification succeeded" in run.stdout, run.stderr


def test_a_changed_file_is_named_and_the_model_signing_cli_rejects_it(model_dir, key, tmp_path: Path):
    sign_model_dir(model_dir, key)
    (model_dir / "model.pkl").write_bytes(b"a different model")
    result = verify_model_dir(model_dir, key.public)
    assert not result.ok and result.altered_files == ("model.pkl",)
    assert result.reasons[0] == "altered: model.pkl (its sha256 differs from the signed one)"
    run = _cli_verify(model_dir, _public_pem(key, tmp_path))
    assert run.returncode != 0 and "model.pkl" in run.stderr


def test_missing_and_extra_files_are_named_and_rejected_by_the_cli(model_dir, key, tmp_path: Path):
    sign_model_dir(model_dir, key)
    (model_dir / "requirements.txt").unlink()
    (model_dir / "metadata" / "extra.bin").write_bytes(b"\x00")
    result = verify_model_dir(model_dir, key.public.pem)
    assert not result.ok and result.altered_files == ("metadata/extra.bin", "requirements.txt")
    assert _cli_verify(model_dir, _public_pem(key, tmp_path)).returncode != 0


def test_another_keys_public_key_rejects_an_unchanged_dir(model_dir, key, other_key):
    sign_model_dir(model_dir, key)
    result = verify_model_dir(model_dir, other_key.public)
    assert not result.ok and result.altered_files == ()
    assert "Key mismatch" in result.reasons[-1]


def test_a_missing_or_corrupt_signature_is_not_ok(model_dir, key):
    assert verify_model_dir(model_dir, key.public).reasons[0].startswith("unsigned:")
    sign_model_dir(model_dir, key)
    (model_dir / SIGNATURE_FILE).write_text("{not json")
    result = verify_model_dir(model_dir, key.public)
    assert not result.ok and result.reasons[-1].startswith("model_signing rejected")


def test_a_forged_signature_names_no_files_it_cannot_vouch_for(model_dir, key):
    """A bundle whose listed digests were edited: the signature breaks, and its (unsigned) list is not believed."""
    sign_model_dir(model_dir, key)
    bundle = json.loads((model_dir / SIGNATURE_FILE).read_text())
    statement = json.loads(base64.b64decode(bundle["dsseEnvelope"]["payload"]))
    statement["predicate"]["resources"][0]["digest"] = "00" * 32
    bundle["dsseEnvelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (model_dir / SIGNATURE_FILE).write_text(json.dumps(bundle))
    result = verify_model_dir(model_dir, key.public)
    assert not result.ok and result.altered_files == ()
    assert "does not match its content" in result.reasons[-1]
