"""The passport in a DSSE envelope: valid, altered (which field, which file), untrusted key, unsigned, legacy."""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controlplane.signing import (
    ALTERED,
    LEGACY_HMAC,
    PAYLOAD_TYPE,
    PREDICATE_TYPE,
    UNSIGNED,
    UNTRUSTED_KEY,
    VALID,
    SigningError,
    sign_passport,
    verify_passport,
)


def _payload(passport: dict) -> dict:
    return json.loads(base64.b64decode(passport["envelope"]["payload"]))


def _with_payload(passport: dict, statement: dict) -> dict:
    forged = copy.deepcopy(passport)
    forged["envelope"]["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    return forged


def test_a_signed_passport_is_an_in_toto_statement_over_the_model_files(body, model_dir, key):
    passport = sign_passport(body, model_dir, key)
    envelope = passport["envelope"]
    assert envelope["payloadType"] == PAYLOAD_TYPE == "application/vnd.in-toto+json"
    assert [s["keyid"] for s in envelope["signatures"]] == [key.keyid]
    statement = _payload(passport)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == PREDICATE_TYPE
    files = sorted(p for p in model_dir.rglob("*") if p.is_file())
    assert statement["subject"] == [
        {"name": p.relative_to(model_dir).as_posix(), "digest": {"sha256": hashlib.sha256(p.read_bytes()).hexdigest()}}
        for p in files
    ]
    assert statement["predicate"] == passport["body"] == body
    assert type(statement["predicate"]["snapshot"]["rows"]) is int  # not the 4000.0 a protobuf Struct would sign
    assert statement["predicate"]["exact_int"] == 2**60 + 1


def test_a_fresh_passport_verifies_and_signing_is_deterministic(body, model_dir, key):
    passport = sign_passport(body, model_dir, key)
    assert sign_passport(body, model_dir, key) == passport
    result = verify_passport(passport, trusted_public_keys=[key.public.pem], model_dir=model_dir)
    assert (result.status, result.verified, result.keyid) == (VALID, True, key.keyid)
    assert result.altered_fields == result.altered_files == ()


def test_a_changed_stored_field_is_altered_naming_it(body, model_dir, key):
    passport = sign_passport(body, model_dir, key)
    passport["body"]["metrics"]["candidate"]["mae"] = 2.9
    result = verify_passport(passport, trusted_public_keys=[key.public], model_dir=model_dir)
    assert (result.status, result.verified) == (ALTERED, False)
    assert result.altered_fields == ("metrics.candidate.mae",)
    assert result.reasons[0].startswith("altered: metrics.candidate.mae")


def test_a_changed_signed_payload_is_altered_naming_the_field(body, model_dir, key):
    passport = sign_passport(body, model_dir, key)
    statement = _payload(passport)
    statement["predicate"]["verdict"] = "promote-anyway"
    statement["predicate"]["lineage"].append("urn:li:dataset:(urn:li:dataPlatform:parquet,extra,PROD)")
    result = verify_passport(_with_payload(passport, statement), trusted_public_keys=[key.public])
    assert result.status == ALTERED and not result.verified
    assert result.altered_fields == ("lineage[1]", "verdict")
    assert any("does not match the signed content" in r for r in result.reasons)


def test_changed_missing_and_extra_model_files_are_altered_naming_them(body, model_dir, key):
    passport = sign_passport(body, model_dir, key)
    (model_dir / "model.pkl").write_bytes(b"a different model")
    (model_dir / "metadata" / "conda.yaml").unlink()
    (model_dir / "backdoor.py").write_text("print('hi')\n")
    result = verify_passport(passport, trusted_public_keys=[key.public], model_dir=model_dir)
    assert result.status == ALTERED and result.altered_fields == ()
    assert result.altered_files == ("backdoor.py", "metadata/conda.yaml", "model.pkl")
    assert "altered: model.pkl (its sha256 differs from the signed one)" in result.reasons


def test_a_passport_resigned_with_another_key_is_untrusted_not_altered(body, model_dir, key, other_key):
    resigned = sign_passport({**body, "verdict": "promote-anyway"}, model_dir, other_key)
    result = verify_passport(resigned, trusted_public_keys=[key.public], model_dir=model_dir)
    assert (result.status, result.keyid, result.verified) == (UNTRUSTED_KEY, other_key.keyid, False)
    assert "its signature is genuine" in result.reasons[0]
    stripped = {k: v for k, v in resigned.items() if k != "public_key"}
    assert verify_passport(stripped, trusted_public_keys=[key.public]).status == UNTRUSTED_KEY


def test_another_keys_passport_changed_after_signing_is_altered(body, model_dir, key, other_key):
    resigned = sign_passport(body, model_dir, other_key)
    statement = _payload(resigned)
    statement["predicate"]["verdict"] = "promote-anyway"
    result = verify_passport(_with_payload(resigned, statement), trusted_public_keys=[key.public])
    assert result.status == ALTERED and result.altered_fields == ("verdict",)


def test_a_bare_envelope_verifies_and_a_claimed_body_is_compared(body, model_dir, key):
    envelope = sign_passport(body, model_dir, key)["envelope"]
    assert verify_passport(envelope, trusted_public_keys=[key.public]).status == VALID
    claimed = {**body, "snapshot": {**body["snapshot"], "rows": 4001}}
    result = verify_passport(envelope, trusted_public_keys=[key.public], claimed_body=claimed)
    assert result.status == ALTERED and result.altered_fields == ("snapshot.rows",)


def test_verification_needs_only_the_public_pem_in_another_process(body, model_dir, key, tmp_path: Path):
    public_only = tmp_path / "auditor"
    public_only.mkdir()
    (public_only / "passport.json").write_text(json.dumps(sign_passport(body, model_dir, key)))
    (public_only / "kintsugi.pub.pem").write_bytes(key.public.pem)
    shutil.rmtree(key.path.parent)  # the private key is gone before the verifier starts
    script = (
        "import json, sys; from pathlib import Path; from controlplane.signing import verify_passport\n"
        "r = verify_passport(json.loads(Path('passport.json').read_text()),"
        " trusted_public_keys=[Path('kintsugi.pub.pem')], model_dir=Path(sys.argv[1]))\n"
        "print(r.status); sys.exit(0 if r.verified else 1)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KINTSUGI_")}
    run = subprocess.run(
        [sys.executable, "-c", script, str(model_dir)], cwd=public_only, env=env, capture_output=True, text=True
    )
    assert not key.path.exists()
    assert (run.returncode, run.stdout.strip()) == (0, VALID), run.stderr


def test_unsigned_passports(body, model_dir, key):
    old_unsigned = {"body": body, "signature": {"alg": "none", "value": None, "note": "unsigned"}}
    no_signatures = sign_passport(body, model_dir, key)
    no_signatures["envelope"]["signatures"] = []
    for passport in (old_unsigned, {"body": body}, no_signatures):
        result = verify_passport(passport, trusted_public_keys=[key.public])
        assert (result.status, result.verified) == (UNSIGNED, False)


def _legacy(body: dict, secret: str) -> dict:
    """A passport exactly as the HMAC-era controlplane/passport.py wrote it."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    value = hmac.new(secret.encode(), canonical.encode(), hashlib.sha256).hexdigest()
    return {"body": body, "signature": {"alg": "HMAC-SHA256", "value": value}}


def test_legacy_hmac_passports_verify_with_their_key_and_say_so(body, key):
    legacy = _legacy(body, "s3cret")
    right = verify_passport(legacy, trusted_public_keys=[key.public], hmac_key="s3cret")
    assert (right.status, right.verified) == (LEGACY_HMAC, True)
    no_key = verify_passport(legacy, trusted_public_keys=[key.public])
    assert (no_key.status, no_key.verified) == (LEGACY_HMAC, False)
    wrong = verify_passport(legacy, trusted_public_keys=[key.public], hmac_key="other")
    assert (wrong.status, wrong.verified) == (ALTERED, False)
    legacy["body"]["verdict"] = "promote-anyway"
    assert verify_passport(legacy, trusted_public_keys=[], hmac_key="s3cret").status == ALTERED


def test_unreadable_envelopes_are_altered_and_non_objects_are_errors(body, model_dir, key):
    passport = sign_passport(body, model_dir, key)
    passport["envelope"]["signatures"][0]["sig"] = "%%% not base64 %%%"
    assert verify_passport(passport, trusted_public_keys=[key.public]).status == ALTERED
    with pytest.raises(SigningError):
        verify_passport(["not", "a", "passport"], trusted_public_keys=[key.public])  # type: ignore[arg-type]


def test_bodies_that_are_not_plain_json_and_empty_models_are_refused(body, model_dir, key, tmp_path: Path):
    with pytest.raises(SigningError) as err:
        sign_passport({**body, "mae": float("nan")}, model_dir, key)
    assert "NaN" in err.value.fix
    (tmp_path / "empty").mkdir()
    with pytest.raises(SigningError):
        sign_passport(body, tmp_path / "empty", key)
    with pytest.raises(SigningError):
        sign_passport(body, tmp_path / "missing", key)
