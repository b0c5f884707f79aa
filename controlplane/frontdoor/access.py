"""Who may do what through the HTTP API and the MCP server: the bearer token, read-only mode, what may listen
where. Shared by both front doors.

Fail closed: a server that can change runs, data or models does not start without a token, unless the
operator says `--insecure-local` and it listens on a loopback address only. A token shorter than
`MIN_TOKEN_LENGTH` is refused, unless `--insecure-local` (loopback only), and warned about even then. Bound
beyond loopback, reads need the token too.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Mapping

from controlplane.errors import ReadOnlyMode, ServerConfigError

__all__ = [
    "ApiSettings",
    "read_only_refusal",
    "env_read_only",
    "resolve_settings",
    "check_exposure",
    "is_loopback",
    "token_warning",
    "TOKEN_ENV",
    "TOKEN_NAME_ENV",
    "READ_ONLY_ENV",
    "MIN_TOKEN_LENGTH",
]

TOKEN_ENV = "KINTSUGI_API_TOKEN"
TOKEN_NAME_ENV = "KINTSUGI_API_TOKEN_NAME"  # whose token it is: the actor of every decision made with it
READ_ONLY_ENV = "KINTSUGI_READ_ONLY"
MIN_TOKEN_LENGTH = 32
_TRUE = {"1", "true", "yes", "on"}


def read_only_refusal(what: str) -> ReadOnlyMode:
    return ReadOnlyMode(
        f"{what} changes runs, data or models, and this Kintsugi server is read-only",
        f"ask an operator, or start the server without --read-only / {READ_ONLY_ENV}",
    )


@dataclass(frozen=True)
class ApiSettings:
    token: str | None = None
    read_only: bool = False
    insecure_local: bool = False
    host: str = "127.0.0.1"
    token_name: str = "api-token"

    @property
    def actor(self) -> str:
        """Who decides through this server: the token's holder, or the laptop's user on an --insecure-local one."""
        return f"http:{self.token_name}" if self.token is not None else "http:insecure-local"

    @property
    def mutating(self) -> bool:
        return not self.read_only

    @property
    def reads_need_token(self) -> bool:
        """Beyond loopback, reads (paths, passports, metrics) are not for anyone who can reach the port."""
        return self.token is not None and not is_loopback(self.host)


def env_read_only(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(READ_ONLY_ENV, "").strip().lower() in _TRUE


def resolve_settings(
    *,
    host: str = "127.0.0.1",
    read_only: bool = False,
    insecure_local: bool = False,
    environ: Mapping[str, str] = os.environ,
) -> ApiSettings:
    """Flags win; the token and read-only mode also come from the environment."""
    token = environ.get(TOKEN_ENV, "").strip() or None
    return ApiSettings(
        token=token,
        read_only=read_only or env_read_only(environ),
        insecure_local=insecure_local,
        host=host,
        token_name=environ.get(TOKEN_NAME_ENV, "").strip() or ApiSettings.token_name,
    )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(settings: ApiSettings) -> None:
    """Refuse a server that could change things without a token, except `--insecure-local` on loopback."""
    if settings.insecure_local and not is_loopback(settings.host):
        raise ServerConfigError(
            f"--insecure-local is for a loopback address, not {settings.host}",
            f"bind 127.0.0.1, or set {TOKEN_ENV} and drop --insecure-local",
        )
    if settings.token is not None and len(settings.token) < MIN_TOKEN_LENGTH and not settings.insecure_local:
        raise ServerConfigError(
            f"{TOKEN_ENV} is {len(settings.token)} characters; it must be at least {MIN_TOKEN_LENGTH}",
            f"set {TOKEN_ENV}=$(openssl rand -hex 32), or pass --insecure-local on 127.0.0.1 for a laptop",
        )
    if not is_loopback(settings.host) and settings.token is None:
        raise ServerConfigError(
            f"on {settings.host} anyone who reaches the port could read runs, passports and "
            f"metrics: no {TOKEN_ENV} is set",
            f"set {TOKEN_ENV}, or bind 127.0.0.1",
        )
    if settings.mutating and settings.token is None and not settings.insecure_local:
        raise ServerConfigError(
            f"the API would accept runs, approvals and promotions from anyone: no {TOKEN_ENV} is set",
            f"set {TOKEN_ENV} to a long random secret, or pass --read-only, or "
            "--insecure-local on 127.0.0.1 for a laptop",
        )


def token_warning(settings: ApiSettings) -> str | None:
    """A warning worth printing at start: a short token (only `--insecure-local` on loopback starts with one)."""
    if settings.token is not None and len(settings.token) < MIN_TOKEN_LENGTH:
        return (
            f"warning: {TOKEN_ENV} is only {len(settings.token)} characters; use at least {MIN_TOKEN_LENGTH} "
            "(openssl rand -hex 32)"
        )
    return None
