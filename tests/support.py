"""Shared test plumbing: the demo instants, the workspace edits the stories need (a poisoned batch, a worse
estimator), what the stores say (incidents, the champion, byte hashes), the CLI in-process, and an app served
with uvicorn on a free loopback port."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

import uvicorn
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s
from mlflow import MlflowClient

from controlplane.api.server import server_config
from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import PASSPORT_PROPERTY
from controlplane.datahub.urns import model_urn
from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from demo.seed import PIPELINE
from demo.story import land_batch

__all__ = [
    "rewrite_passport",
    "served",
    "copy_workspace",
    "iso",
    "ms",
    "poison",
    "use_estimator",
    "reseed",
    "TOKEN",
    "GUARD_AT",
    "BLOCKED_AT",
    "LATER",
    "LATER_MS",
    "RATIFY_AT",
    "APPROVE_AT",
    "PIPELINE",
    "DEMO_NOW",
    "incidents_on",
    "champion",
    "store_hashes",
    "kintsugi",
    "kintsugi_process",
    "clean_batch",
]

DEMO_NOW = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
TOKEN = "test-token-4f9c2e-0b1d7a93c55e8f21"
GUARD_AT = DEMO_NOW + timedelta(minutes=15)
BLOCKED_AT = DEMO_NOW + timedelta(minutes=20)
LATER = DEMO_NOW + timedelta(days=10)
LATER_MS = int((LATER + timedelta(minutes=5)).timestamp() * 1000)
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
    land_batch(ws, load_spec(ws, PIPELINE), seed=7, anchor=LATER, metres=True)


def reseed(ws: Workspace, name: str = PIPELINE, seed: int = 1) -> None:
    """The team changes the model's seed in the spec: a run on the same rows fits a candidate again rather than
    letting the champion stand (a candidate on exactly the champion's rows and spec is the champion)."""
    import yaml

    path = ws.pipelines / f"{name}.yaml"
    raw = yaml.safe_load(path.read_text())
    raw["model"]["seed"] = seed
    path.write_text(yaml.safe_dump(raw))


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
    server = uvicorn.Server(server_config(app, log_level="warning", lifespan="on"))
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


def active_incident(
    entity: str, title: str, at_ms: int, *, actor: str = "urn:li:corpuser:oncall", **more: Any
) -> s.IncidentInfoClass:
    """An operational incident a person raised on `entity` at `at_ms`, ACTIVE (`more`: startedAt, priority)."""
    stamp = s.AuditStampClass(time=at_ms, actor=actor)
    return s.IncidentInfoClass(
        type=s.IncidentTypeClass.OPERATIONAL,
        entities=[entity],
        title=title,
        status=s.IncidentStatusClass(state=s.IncidentStateClass.ACTIVE, lastUpdated=stamp),
        created=stamp,
        **more,
    )


def as_nobody(attempt: Callable[[], str]) -> str:
    """What `attempt` says when run as a user without root's rights (chmod does not deny root): in a forked child
    that dropped to uid 65534 and exits without pytest's teardown. Skips where the drop is not allowed."""
    import os

    import pytest

    if os.geteuid() != 0:
        return attempt()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(65534)
            os.setuid(65534)
            message = "said:" + attempt()
        except BaseException as exc:  # noqa: BLE001 - reported to the test as text
            message = f"setup: {type(exc).__name__}: {exc}"
        os.write(write, message.encode()[:4000])
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(pid, 0)
    if not message.startswith("said:"):
        pytest.skip(f"running as root and cannot drop to uid 65534 ({message})")
    return message.removeprefix("said:")


def incidents_on(ws: Workspace, dataset: str) -> dict[str, Any]:
    """urn -> IncidentInfo of every incident on `dataset`, read from DataHub Lite."""
    from datahub.metadata import schema_classes as s

    from controlplane.datahub.lite import LiteMetadata

    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        infos = {urn: store.aspect(urn, s.IncidentInfoClass) for urn in store.urns("incident")}
    finally:
        store.close()
    return {urn: info for urn, info in infos.items() if info is not None and dataset in info.entities}


def champion(ws: Workspace, model: str = PIPELINE) -> int | None:
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    try:
        return int(MlflowClient(tracking_uri=ws.mlflow_uri).get_model_version_by_alias(model, "champion").version)
    except MlflowException:
        return None


def store_hashes(ws: Workspace) -> tuple[str, str, str]:
    """The bytes of DataHub Lite, MLflow and the demo table."""
    from controlplane.stages.pin import file_hash

    return file_hash(ws.datahub_db), file_hash(ws.mlflow_db), file_hash(ws.data / "eta_features.parquet")


def kintsugi(monkeypatch: Any, capsys: Any, *args: str) -> tuple[int, str, str]:
    """The CLI in-process: (exit code, stdout, stderr)."""
    import sys

    import pytest

    from controlplane.cli import main

    monkeypatch.setattr(sys, "argv", ["kintsugi", *args])
    with pytest.raises(SystemExit) as exit_info:
        main.main()
    captured = capsys.readouterr()
    return exit_info.value.code, captured.out, captured.err


def whole_cli(*args: str) -> tuple[int, str, str]:
    """`kintsugi ARGS` through the real composition root (`controlplane.cli.main`), in this process."""
    import io
    import sys
    from contextlib import redirect_stderr, redirect_stdout

    from controlplane.cli import main

    out, err, saved = io.StringIO(), io.StringIO(), sys.argv
    sys.argv = ["kintsugi", *args]
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main.main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        sys.argv = saved
    return code, out.getvalue(), err.getvalue()


def kintsugi_process(ws: Workspace, *args: str, crash: str | None = None) -> Any:
    """`kintsugi ARGS -w WS` in a process of its own (a `subprocess.CompletedProcess`); `crash` names the
    test-only crash point where it is killed with SIGKILL (returncode -9)."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "KINTSUGI_TEST_CRASH_AT"}
    if crash:
        env["KINTSUGI_TEST_CRASH_AT"] = crash
    return subprocess.run(
        [sys.executable, "-m", "controlplane", *args, "-w", str(ws.root)],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def clean_batch(ws: Workspace, target: Path) -> Path:
    """A day of rows after the table's last one, in its units: a batch `land` appends and the guard passes."""

    from demo.feature_tables import read_table
    from demo.generate import generate_eta_features

    table = read_table(ws, load_spec(ws, PIPELINE))
    generated = generate_eta_features(days=52, seed=11, anchor=LATER + timedelta(days=1))
    batch = generated[generated["event_ts"] > table["event_ts"].max()].astype(table.dtypes.to_dict())
    batch.to_parquet(target, index=False)
    return target


def rewrite_passport(ws: Workspace, model: str, version: int, document: dict) -> None:
    """Put `document` in both stores, as someone with write access to DataHub and MLflow could."""
    store = LiteMetadata(ws.datahub_db)
    urn = model_urn(model, version)
    properties = store.aspect(urn, s.MLModelPropertiesClass)
    properties.customProperties[PASSPORT_PROPERTY] = json.dumps(document, sort_keys=True)
    store.emit([MCP(entityUrn=urn, aspect=properties)])
    store.close()
    client = MlflowClient(tracking_uri=ws.mlflow_uri)
    run_id = client.get_model_version(model, str(version)).run_id
    artifact = Path(client.get_run(run_id).info.artifact_uri.removeprefix("file://")) / "passport.json"
    artifact.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
