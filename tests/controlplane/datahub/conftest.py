"""Fixtures for the GMS and MLflow-server tests: the GMS stand-in, a workspace configured for it, and a real
`mlflow server` process (booted in the background at the first test of this folder, since it takes a while)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from controlplane.workspace import Workspace
from tests.controlplane.datahub.standin import GmsStandIn

TOKEN = "kintsugi-test-token"


def configure(
    ws: Workspace,
    server: str,
    *,
    token: str | None = TOKEN,
    timeout_sec: float = 1.0,
    retries: int = 1,
    backoff_sec: float = 0.01,
) -> None:
    """Point the workspace at a GMS through its kintsugi.toml, with test-sized timeouts."""
    lines = [
        "[datahub]",
        f'server = "{server}"',
        f"timeout_sec = {timeout_sec}",
        f"retries = {retries}",
        f"backoff_sec = {backoff_sec}",
    ]
    if token is not None:
        lines.append(f'token = "{token}"')
    ws.root.mkdir(parents=True, exist_ok=True)
    (ws.root / "kintsugi.toml").write_text("\n".join(lines) + "\n")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def start_standin() -> Iterator[Callable[..., GmsStandIn]]:
    started: list[GmsStandIn] = []

    def start(store: Path, token: str | None = TOKEN) -> GmsStandIn:
        started.append(GmsStandIn(store, token=token).start())
        return started[-1]

    yield start
    for standin in started:
        standin.stop()


@dataclass
class MlflowServer:
    url: str
    root: Path
    process: subprocess.Popen[bytes]

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    def wait_healthy(self, timeout: float = 180.0) -> MlflowServer:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"mlflow server exited {self.process.returncode}: {self._log_tail()}")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            time.sleep(0.25)
        raise RuntimeError(f"mlflow server not healthy after {timeout:.0f} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        return (self.root / "server.log").read_text(errors="replace")[-2000:]


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    """A real `mlflow server` on 127.0.0.1: sqlite backend, proxied artifacts, both in a temporary folder."""
    root = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    command = [
        str(Path(sys.executable).with_name("mlflow")),
        "server",
        "--backend-store-uri",
        f"sqlite:///{root / 'mlflow.db'}",
        "--serve-artifacts",
        "--artifacts-destination",
        str(root / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
    ]
    with open(root / "server.log", "wb") as log:
        process = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "MLFLOW_LOGGING_LEVEL": "WARNING"},
        )
    yield MlflowServer(f"http://127.0.0.1:{port}", root, process)
    os.killpg(process.pid, signal.SIGTERM)  # the server and the uvicorn worker it started, nothing else
    try:
        process.wait(timeout=3)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="session", autouse=True)
def _boot_mlflow_server_early(mlflow_server: MlflowServer) -> None:
    """Start booting the server with the first test here; the test that needs it waits for /health."""
