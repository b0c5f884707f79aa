"""The passport signing key: an ECDSA P-256 pair kept in the workspace, or a team's own PEM.

P-256 and not Ed25519: model_signing's private-key mode only takes elliptic-curve keys
(P-256/384/521), and one key must sign both the DSSE passport and the model's files.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from controlplane.signing.errors import SigningError

__all__ = [
    "KEY_ENV",
    "PRIVATE_KEY_FILE",
    "PUBLIC_KEY_FILE",
    "PublicKey",
    "SigningKey",
    "key_id",
    "load_or_create_key",
    "load_private_key",
    "load_public_key",
]

KEY_ENV = "KINTSUGI_SIGNING_KEY"
PRIVATE_KEY_FILE = "signing-key.pem"
PUBLIC_KEY_FILE = "signing-key.pub.pem"
_CURVE = "secp256r1"
MAX_KEY_BYTES = 64 * 1024  # a PEM key is a few hundred bytes
_MAKE_KEY = (
    "make one with `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem && chmod 600 key.pem`"
)


@dataclass(frozen=True)
class PublicKey:
    """A public key that checks passports; `keyid` is the sha256 (hex) of its DER SubjectPublicKeyInfo."""

    key: ec.EllipticCurvePublicKey = field(repr=False)
    pem: bytes = field(repr=False)
    keyid: str


@dataclass(frozen=True)
class SigningKey:
    """A private key that signs passports and model files; `path` is its PEM file (model_signing reads it)."""

    private_key: ec.EllipticCurvePrivateKey = field(repr=False)
    path: Path
    public: PublicKey

    @property
    def keyid(self) -> str:
        return self.public.keyid


def key_id(public_key: ec.EllipticCurvePublicKey) -> str:
    """sha256 of the key's DER SubjectPublicKeyInfo, hex."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def _public(public_key: ec.EllipticCurvePublicKey) -> PublicKey:
    pem = public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return PublicKey(public_key, pem, key_id(public_key))


def _require_p256(key: object, where: str) -> None:
    curve = getattr(getattr(key, "curve", None), "name", None)
    if not isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey) or curve != _CURVE:
        kind = f"an EC {curve} key" if curve else f"a {type(key).__name__.lstrip('_')}"
        raise SigningError(
            f"{where} holds {kind}; Kintsugi signs with ECDSA P-256 (the one type both DSSE and model_signing take)",
            _MAKE_KEY,
        )


def load_public_key(pem: PublicKey | Path | str | bytes) -> PublicKey:
    """A public key from PEM bytes, PEM text, or the path of a PEM file."""
    if isinstance(pem, PublicKey):
        return pem
    where, data = _pem_source(pem)
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise SigningError(
            f"{where} is not a PEM public key ({exc})",
            "pass the public key PEM that `kintsugi passport key` prints (-----BEGIN PUBLIC KEY-----)",
        ) from exc
    _require_p256(key, where)
    return _public(key)  # type: ignore[arg-type]


def _pem_source(pem: Path | str | bytes) -> tuple[str, bytes]:
    if isinstance(pem, bytes):
        return "the given PEM", pem
    if isinstance(pem, str) and pem.lstrip().startswith("-----BEGIN"):
        return "the given PEM", pem.encode()
    path = Path(pem).expanduser()
    return str(path), _read_key_file(path, "public key", "check the path")


def _read_key_file(path: Path, what: str, fix: str) -> bytes:
    """A key file's bytes: a regular file of at most MAX_KEY_BYTES. Opened without blocking and checked on the
    open descriptor, so a FIFO, a device (/dev/zero) or a folder is refused at once, never read forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise SigningError(f"cannot read {what} {path}: {exc.strerror}", fix) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SigningError(f"{what} {path} is not a regular file", f"{fix}: a key is a PEM file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_KEY_BYTES + 1)
    except OSError as exc:
        raise SigningError(f"cannot read {what} {path}: {exc.strerror}", fix) from exc
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_BYTES:
        raise SigningError(f"{what} {path} is over {MAX_KEY_BYTES} bytes", f"{fix}: a PEM key is a few hundred bytes")
    return data


def load_private_key(path: Path) -> SigningKey:
    """The signing key in the PEM file at `path`: owner-only permissions, unencrypted, ECDSA P-256."""
    path = Path(path).expanduser().absolute()  # model_signing re-reads it later, maybe from another cwd
    _require_private_mode(path)
    data = _read_key_file(path, "private key", "check the path and its owner")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError as exc:
        raise SigningError(
            f"private key {path} is encrypted",
            "store it unencrypted and owner-only: "
            f"`openssl pkcs8 -topk8 -nocrypt -in {path} -out plain.pem && chmod 600 plain.pem`",
        ) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise SigningError(
            f"{path} is not a readable PEM private key ({exc})",
            f"restore the key from a backup, or {_MAKE_KEY} and point {KEY_ENV} at it",
        ) from exc
    _require_p256(key, str(path))
    return SigningKey(key, path, _public(key.public_key()))  # type: ignore[union-attr, arg-type]


def _require_private_mode(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as exc:
        raise SigningError(f"private key {path} does not exist", f"{_MAKE_KEY}, or unset {KEY_ENV}") from exc
    except OSError as exc:
        raise SigningError(f"cannot read private key {path}: {exc.strerror}", "check the path and its owner") from exc
    if mode & 0o077:
        raise SigningError(
            f"private key {path} is open to other users (mode {mode & 0o777:04o})",
            f"make it owner-only: `chmod 600 {path}`",
        )


def load_or_create_key(keys_dir: Path, env: Mapping[str, str] = os.environ) -> SigningKey:
    """The key named by KINTSUGI_SIGNING_KEY, else the workspace key under `keys_dir`, made on first use.

    A new private key is written 0600 from its first byte and published without replacing a
    key another process made meanwhile; the public key PEM is written beside it.
    """
    override = env.get(KEY_ENV, "").strip()
    if override:
        return load_private_key(Path(override))
    keys_dir = Path(keys_dir)
    private_path = keys_dir / PRIVATE_KEY_FILE
    if not private_path.exists():
        _create_private_key(keys_dir, private_path)
    key = load_private_key(private_path)
    _ensure_public_file(keys_dir / PUBLIC_KEY_FILE, key.public)
    return key


def _create_private_key(keys_dir: Path, private_path: Path) -> None:
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    tmp = keys_dir / f".{PRIVATE_KEY_FILE}.{secrets.token_hex(8)}.tmp"
    try:
        keys_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out:
            os.fchmod(out.fileno(), 0o600)  # the umask can only have removed bits; make it exactly 0600
            out.write(pem)
            out.flush()
            os.fsync(out.fileno())
        try:
            os.link(tmp, private_path)  # never replaces: a key made concurrently by another process wins
        except FileExistsError:
            pass
    except OSError as exc:
        raise SigningError(
            f"cannot create the signing key in {keys_dir}: {exc.strerror}",
            f"make {keys_dir} writable by this user, or point {KEY_ENV} at an existing key",
        ) from exc
    finally:
        tmp.unlink(missing_ok=True)


def _ensure_public_file(path: Path, public: PublicKey) -> None:
    if path.exists():
        try:
            same = load_public_key(path).keyid == public.keyid
        except SigningError:
            same = False
        if not same:
            raise SigningError(
                f"public key {path} does not belong to the private key beside it",
                f"delete {path}; the next signing writes it again from the private key",
            )
        return
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        tmp.write_bytes(public.pem)
        tmp.chmod(0o644)
        os.replace(tmp, path)
    except OSError as exc:
        raise SigningError(f"cannot write public key {path}: {exc.strerror}", f"make {path.parent} writable") from exc
    finally:
        tmp.unlink(missing_ok=True)
