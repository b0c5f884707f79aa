"""One served API over one copy of the demo workspace, shared by the API tests of a module."""

from __future__ import annotations

from typing import Iterator

import httpx
import pytest

from controlplane.api.app import create_app
from controlplane.frontdoor.access import ApiSettings
from controlplane.workspace import Workspace
from tests.support import TOKEN, copy_workspace, served


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
