"""Where the metadata lives: DataHub Lite in the workspace (the default), or a team's DataHub GMS.

A GMS is configured by the environment (``DATAHUB_GMS_URL``, ``DATAHUB_GMS_TOKEN``) or by the
workspace's ``kintsugi.toml``; the environment wins, key by key::

    [datahub]
    server = "https://datahub.example.com/gms"   # GMS, usually http://<host>:8080
    token = "..."              # prefer DATAHUB_GMS_TOKEN over a token in a file
    timeout_sec = 10           # per HTTP attempt (connect, then read)
    retries = 3                # further attempts after a connection error, a timeout or a 429/5xx
    backoff_sec = 0.5          # urllib3 backoff factor between attempts (capped at backoff_max_sec)
    backoff_max_sec = 10

No server configured (or ``server = ""``): DataHub Lite. A file that does not parse, or a value out
of range, is an error — a mistyped setting never silently falls back to Lite.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from controlplane.errors import MetadataError
from controlplane.workspace import Workspace

__all__ = ["CONFIG_FILE", "ENV_TOKEN", "ENV_URL", "GmsConfig", "config_path", "load_gms_config"]

CONFIG_FILE = "kintsugi.toml"
ENV_URL = "DATAHUB_GMS_URL"
ENV_TOKEN = "DATAHUB_GMS_TOKEN"
_KEYS = {"server", "token", "timeout_sec", "retries", "backoff_sec", "backoff_max_sec"}


@dataclass(frozen=True)
class GmsConfig:
    """How to reach one GMS, and how long to keep trying before failing closed."""

    server: str
    token: str | None = None
    timeout_sec: float = 10.0
    retries: int = 3
    backoff_sec: float = 0.5
    backoff_max_sec: float = 10.0
    source: str = ENV_URL  # where `server` came from, named in every error message

    def backoffs(self) -> list[float]:
        """The pauses urllib3 takes before each retry: none before the first, then factor * 2**(n-1)."""
        return [
            0.0 if n == 1 else min(self.backoff_sec * 2 ** (n - 1), self.backoff_max_sec)
            for n in range(1, self.retries + 1)
        ]

    @property
    def worst_case_sec(self) -> float:
        """Upper bound of one HTTP call: every attempt times out on connect and on read, plus the pauses."""
        return (self.retries + 1) * 2 * self.timeout_sec + sum(self.backoffs())

    def describe(self) -> str:
        token = "token set" if self.token else "no token"
        retries = "1 retry" if self.retries == 1 else f"{self.retries} retries"
        return (
            f"DataHub GMS at {self.server} (from {self.source}; {token}; {self.timeout_sec:g} s per attempt, "
            f"{retries}, at most {self.worst_case_sec:g} s per call)"
        )


def config_path(ws: Workspace) -> Path:
    return ws.root / CONFIG_FILE


def load_gms_config(ws: Workspace) -> GmsConfig | None:
    """The GMS to use, or None for DataHub Lite."""
    section = _file_section(config_path(ws))
    env_server = os.environ.get(ENV_URL, "").strip()
    server = env_server or str(section.get("server") or "").strip()
    if not server:
        return None
    source = ENV_URL if env_server else f"{config_path(ws)} [datahub] server"
    token = os.environ.get(ENV_TOKEN, "").strip() or _optional_text(section, "token")
    config = GmsConfig(
        server=_checked_url(server.rstrip("/"), source),
        token=token,
        source=source,
        timeout_sec=_number(section, "timeout_sec", 10.0, low=0.05, high=600.0),
        retries=int(_number(section, "retries", 3, low=0, high=10, integer=True)),
        backoff_sec=_number(section, "backoff_sec", 0.5, low=0.0, high=60.0),
        backoff_max_sec=_number(section, "backoff_max_sec", 10.0, low=0.0, high=600.0),
    )
    return config


def _file_section(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise MetadataError(
            f"cannot read the configuration {path}: {exc}",
            f"fix the TOML in {path} (see README, 'DataHub GMS'), or remove the file to use DataHub Lite",
        ) from exc
    section = document.get("datahub", {})
    if not isinstance(section, dict):
        raise MetadataError(f"{path}: [datahub] is not a table", f"write it as a [datahub] section in {path}")
    unknown = sorted(set(section) - _KEYS)
    if unknown:
        raise MetadataError(
            f"{path}: unknown [datahub] setting(s) {', '.join(unknown)}", f"use only {', '.join(sorted(_KEYS))}"
        )
    return section


def _checked_url(server: str, source: str) -> str:
    parts = urlsplit(server)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise MetadataError(
            f"DataHub GMS address {server!r} (from {source}) is not an http(s) URL",
            "set it to the GMS address, e.g. http://localhost:8080 or https://<name>.acryl.io/gms",
        )
    return server


def _optional_text(section: dict[str, Any], key: str) -> str | None:
    value = section.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MetadataError(f"[datahub] {key} in {CONFIG_FILE} must be a string", f'quote it: {key} = "..."')
    return value.strip() or None


def _number(
    section: dict[str, Any], key: str, default: float, *, low: float, high: float, integer: bool = False
) -> float:
    value = section.get(key, default)
    kind_ok = isinstance(value, int) if integer else isinstance(value, (int, float))
    if isinstance(value, bool) or not kind_ok or not low <= value <= high:
        kind = "an integer" if integer else "a number"
        raise MetadataError(
            f"[datahub] {key} = {value!r} in {CONFIG_FILE} is out of range",
            f"set {key} to {kind} between {low:g} and {high:g}",
        )
    return float(value)
