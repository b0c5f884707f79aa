"""How the API and the MCP server are exposed: the bearer token, read-only mode, and what may listen where.

Fail closed: a server that can change runs, data or models does not start without a token, unless the
operator says `--insecure-local` and it listens on a loopback address only.
"""
from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Mapping

from controlplane.errors import KintsugiError

__all__ = ["ApiSettings", "ServerConfigError", "Unauthorized", "ReadOnlyMode", "read_only_refusal", "env_read_only",
           "resolve_settings", "check_exposure", "is_loopback", "TOKEN_ENV", "READ_ONLY_ENV"]

TOKEN_ENV = "KINTSUGI_API_TOKEN"
READ_ONLY_ENV = "KINTSUGI_READ_ONLY"
_TRUE = {"1", "true", "yes", "on"}


class ServerConfigError(KintsugiError):
    code = "server_config"


class Unauthorized(KintsugiError):
    code = "unauthorized"


class ReadOnlyMode(KintsugiError):
    code = "read_only"


def read_only_refusal(what: str) -> ReadOnlyMode:
    return ReadOnlyMode(f"{what} changes runs, data or models, and this Kintsugi server is read-only",
                        f"ask an operator, or start the server without --read-only / {READ_ONLY_ENV}")


@dataclass(frozen=True)
class ApiSettings:
    token: str | None = None
    read_only: bool = False
    insecure_local: bool = False
    host: str = "127.0.0.1"

    @property
    def mutating(self) -> bool:
        return not self.read_only


def env_read_only(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get(READ_ONLY_ENV, "").strip().lower() in _TRUE


def resolve_settings(*, host: str = "127.0.0.1", read_only: bool = False, insecure_local: bool = False,
                     environ: Mapping[str, str] = os.environ) -> ApiSettings:
    """Flags win; the token and read-only mode also come from the environment."""
    token = environ.get(TOKEN_ENV, "").strip() or None
    return ApiSettings(token=token, read_only=read_only or env_read_only(environ), insecure_local=insecure_local,
                       host=host)


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
        raise ServerConfigError(f"--insecure-local is for a loopback address, not {settings.host}",
                                f"bind 127.0.0.1, or set {TOKEN_ENV} and drop --insecure-local")
    if settings.mutating and settings.token is None and not settings.insecure_local:
        raise ServerConfigError("the API would accept runs, approvals and promotions from anyone: no "
                                f"{TOKEN_ENV} is set",
                                f"set {TOKEN_ENV} to a long random secret, or pass --read-only, or "
                                "--insecure-local on 127.0.0.1 for a laptop")
