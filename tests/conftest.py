"""Shared fixtures: one demo workspace, built once per session with the real stores, copied for tests that write."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support import DEMO_NOW

os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
for _name in ("DATAHUB_GMS_URL", "DATAHUB_GMS_TOKEN", "MLFLOW_TRACKING_URI"):  # never a developer's servers
    os.environ.pop(_name, None)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory):
    """The full `kintsugi demo` story in a fresh workspace, at a fixed instant. Read it, don't write it."""
    from controlplane.workspace import Workspace
    from demo.story import run_demo

    ws = Workspace(tmp_path_factory.mktemp("demo") / "ws").ensure()
    return ws, run_demo(ws, now=DEMO_NOW)


@pytest.fixture
def demo_copy(demo_run, tmp_path: Path):
    """A private copy of the demo workspace, for tests that write."""
    from controlplane.runs.identity import rebase_if_moved
    from controlplane.workspace import Workspace

    ws, result = demo_run
    target = tmp_path / "ws"
    shutil.copytree(ws.root, target)
    rebase_if_moved(Workspace(target))  # what the copy's first command would do: its own artifacts from now on
    return Workspace(target), result


@pytest.fixture(scope="session")
def s3_endpoint():
    """A real S3-compatible server (moto in server mode) on a free loopback port, for the session."""
    try:
        from moto.server import ThreadedMotoServer
    except ImportError as exc:
        pytest.skip(f"moto[server] is not installed ({exc}); run `make install-dev`")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    try:
        server.start()
        host, port = server.get_host_and_port()
    except Exception as exc:  # noqa: BLE001 - any failure to start is a reason to skip, said as it is
        pytest.skip(f"moto's S3 server cannot start on loopback: {type(exc).__name__}: {exc}")
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_filesystem(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch):
    """pyarrow's S3 filesystem on the loopback server, with the AWS environment pointing at it (and nothing else)."""
    from pyarrow import fs as pafs

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    host = s3_endpoint.split("://", 1)[1]
    return pafs.S3FileSystem(endpoint_override=host, scheme="http", region="us-east-1", allow_bucket_creation=True)
