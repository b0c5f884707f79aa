"""Shared test plumbing for the front doors: serve an app with uvicorn on a free loopback port, and the
demo instants and workspace edits the stories need (a poisoned batch, a worse estimator)."""
from __future__ import annotations

import shutil
import socket
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Iterator

import uvicorn

from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from demo.seed import PIPELINE
from demo.story import land_batch
from tests.conftest import DEMO_NOW

__all__ = ["served", "copy_workspace", "iso", "ms", "poison", "use_estimator", "TOKEN", "GUARD_AT", "BLOCKED_AT",
           "LATER", "RATIFY_AT", "APPROVE_AT", "PIPELINE"]

TOKEN = "test-token-4f9c2e"
GUARD_AT = DEMO_NOW + timedelta(minutes=15)
BLOCKED_AT = DEMO_NOW + timedelta(minutes=20)
LATER = DEMO_NOW + timedelta(days=10)
RATIFY_AT = LATER + timedelta(minutes=5)
APPROVE_AT = LATER + timedelta(minutes=10)


def iso(moment: datetime) -> str:
    return moment.isoformat()


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def copy_workspace(source: Workspace, target: Path) -> Workspace:
    shutil.copytree(source.root, target)
    return Workspace(target)


def poison(ws: Workspace) -> None:
    """Ten more days of a slowing city land, with distance written in metres (as in test_gates)."""
    land_batch(ws, load_spec(ws, PIPELINE), seed=7, anchor=LATER, metres=True, days=50)


@contextmanager
def use_estimator(ws: Workspace, estimator: str) -> Iterator[None]:
    """The spec trains `estimator` for the duration; the original spec text is put back after."""
    import yaml

    path = ws.pipelines / f"{PIPELINE}.yaml"
    original = path.read_text()
    raw = yaml.safe_load(original)
    raw["model"] = {"estimator": estimator, "params": {}, "seed": 1}
    path.write_text(yaml.safe_dump(raw))
    try:
        yield
    finally:
        path.write_text(original)


@contextmanager
def served(app: Any) -> Iterator[str]:
    """Run `app` with uvicorn in a thread on 127.0.0.1 and a free port; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()
