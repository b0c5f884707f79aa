"""The signing key: made on first use, owner-only, overridable, and refused with a fix when unusable."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from controlplane.signing import (
    KEY_ENV,
    PRIVATE_KEY_FILE,
    PUBLIC_KEY_FILE,
    SigningError,
    load_or_create_key,
    load_public_key,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _write_pem(path: Path, private_key, mode: int = 0o600) -> Path:
    pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path.write_bytes(pem)
    path.chmod(mode)
    return path


def test_first_use_makes_an_owner_only_p256_pair_and_reuses_it(tmp_path: Path):
    keys_dir = tmp_path / "ws" / "keys"
    old_umask = os.umask(0)  # the most permissive umask: the key must still be 0600
    try:
        key = load_or_create_key(keys_dir, env={})
    finally:
        os.umask(old_umask)
    private, public = keys_dir / PRIVATE_KEY_FILE, keys_dir / PUBLIC_KEY_FILE
    assert _mode(private) == 0o600
    assert _mode(keys_dir) == 0o700
    assert isinstance(key.private_key.curve, ec.SECP256R1)
    der = key.private_key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert key.keyid == hashlib.sha256(der).hexdigest()
    assert load_public_key(public).keyid == key.keyid
    assert sorted(p.name for p in keys_dir.iterdir()) == sorted([PRIVATE_KEY_FILE, PUBLIC_KEY_FILE])  # no temp left
    assert load_or_create_key(keys_dir, env={}).keyid == key.keyid


def test_the_public_file_is_rewritten_when_deleted(tmp_path: Path):
    key = load_or_create_key(tmp_path / "keys", env={})
    (tmp_path / "keys" / PUBLIC_KEY_FILE).unlink()
    assert load_or_create_key(tmp_path / "keys", env={}).keyid == key.keyid
    assert load_public_key(tmp_path / "keys" / PUBLIC_KEY_FILE).keyid == key.keyid


def test_env_override_uses_the_teams_key_and_creates_nothing(tmp_path: Path):
    team_key = _write_pem(tmp_path / "team.pem", ec.generate_private_key(ec.SECP256R1()))
    keys_dir = tmp_path / "keys"
    key = load_or_create_key(keys_dir, env={KEY_ENV: str(team_key)})
    assert key.path == team_key
    assert key.keyid == load_public_key(key.public.pem).keyid
    assert not keys_dir.exists()


def test_env_override_naming_a_missing_file_is_an_error(tmp_path: Path):
    with pytest.raises(SigningError) as err:
        load_or_create_key(tmp_path / "keys", env={KEY_ENV: str(tmp_path / "nope.pem")})
    assert "does not exist" in err.value.message and KEY_ENV in err.value.fix


def test_a_private_key_open_to_others_is_refused(tmp_path: Path):
    key = load_or_create_key(tmp_path / "keys", env={})
    key.path.chmod(0o644)
    with pytest.raises(SigningError) as err:
        load_or_create_key(tmp_path / "keys", env={})
    assert "0644" in err.value.message
    assert err.value.fix == f"make it owner-only: `chmod 600 {key.path}`"


def test_a_corrupt_pem_is_an_error_with_a_fix(tmp_path: Path):
    keys_dir = tmp_path / "keys"
    keys_dir.mkdir()
    corrupt = keys_dir / PRIVATE_KEY_FILE
    corrupt.write_text("-----BEGIN PRIVATE KEY-----\nnot base64 at all\n-----END PRIVATE KEY-----\n")
    corrupt.chmod(0o600)
    with pytest.raises(SigningError) as err:
        load_or_create_key(keys_dir, env={})
    assert str(corrupt) in err.value.message and "not a readable PEM private key" in err.value.message
    assert "openssl genpkey" in err.value.fix


def test_a_key_of_another_type_is_refused(tmp_path: Path):
    ed = _write_pem(tmp_path / "ed.pem", ed25519.Ed25519PrivateKey.generate())
    p384 = _write_pem(tmp_path / "p384.pem", ec.generate_private_key(ec.SECP384R1()))
    for path in (ed, p384):
        with pytest.raises(SigningError) as err:
            load_or_create_key(tmp_path / "keys", env={KEY_ENV: str(path)})
        assert "P-256" in err.value.message and "ec_paramgen_curve:P-256" in err.value.fix


def test_an_encrypted_key_is_refused_with_how_to_decrypt(tmp_path: Path):
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    path = tmp_path / "enc.pem"
    path.write_bytes(pem)
    path.chmod(0o600)
    with pytest.raises(SigningError) as err:
        load_or_create_key(tmp_path / "keys", env={KEY_ENV: str(path)})
    assert "encrypted" in err.value.message and "-nocrypt" in err.value.fix


def test_a_public_key_that_is_not_the_pairs_is_refused(tmp_path: Path, other_key):
    load_or_create_key(tmp_path / "keys", env={})
    (tmp_path / "keys" / PUBLIC_KEY_FILE).write_bytes(other_key.public.pem)
    with pytest.raises(SigningError) as err:
        load_or_create_key(tmp_path / "keys", env={})
    assert "does not belong" in err.value.message


def test_load_public_key_reads_paths_text_and_bytes_and_refuses_garbage(key, tmp_path: Path):
    pem_path = tmp_path / "pub.pem"
    pem_path.write_bytes(key.public.pem)
    for source in (pem_path, str(pem_path), key.public.pem, key.public.pem.decode()):
        assert load_public_key(source).keyid == key.keyid
    with pytest.raises(SigningError) as err:
        load_public_key(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    assert err.value.fix
