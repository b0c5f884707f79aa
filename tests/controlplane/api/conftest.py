"""One served API over one copy of the demo workspace, shared by the API tests of a module; and the estate the
operator console is tested on: a champion put at risk by another team's incident, its rollback waiting for a person."""

from __future__ import annotations

from typing import Iterator

import httpx
import pytest

from controlplane.api.app import create_app
from controlplane.frontdoor.access import ApiSettings
from controlplane.runs.identity import rebase_if_moved
from controlplane.vocab import Policy
from controlplane.watch.follow import watch_pass
from controlplane.workspace import Workspace
from tests.controlplane.watch.test_watch import WATCH_AT, raise_upstream_incident
from tests.support import TOKEN, copy_workspace, ms, served


@pytest.fixture(scope="module")
def api(demo_run, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Workspace]]:
    """(client, workspace): the API with a token, served by uvicorn on a free loopback port."""
    source, _ = demo_run
    ws = copy_workspace(source, tmp_path_factory.mktemp("api") / "ws")
    with served(create_app(ws, ApiSettings(token=TOKEN))) as url:
        with httpx.Client(base_url=url, timeout=120) as client:
            yield client, ws


@pytest.fixture
def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def at_risk_estate(demo_run, tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str]:
    """(workspace, rollback run id): the demo estate after an upstream incident covering v2's training instant and
    one watch pass under ratify: v2 at risk and flagged, its rollback to v1 paused at the rollback gate."""
    source, _ = demo_run
    ws = copy_workspace(source, tmp_path_factory.mktemp("console") / "ws")
    rebase_if_moved(ws)
    raise_upstream_incident(ws)
    report = watch_pass(ws, now_ms=ms(WATCH_AT), policy=Policy.RATIFY)
    (proposal,) = [c.record for c in report.champions if c.action == "proposed"]
    assert proposal is not None, report.lines()
    return ws, proposal
