"""An error nobody foresaw (a bug) answers 500 with the error body every other error has, logged on one line."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient

from controlplane.api.app import create_app
from controlplane.frontdoor import services, views
from controlplane.frontdoor.access import ApiSettings
from controlplane.runs.journal import RunJournal, RunRecord
from controlplane.vocab import Policy
from controlplane.workspace import Workspace
from tests.support import PIPELINE, TOKEN


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("boom\nsecond line")


@pytest.mark.parametrize(
    ("method", "path", "service"),
    [("GET", "/pipelines", "pipelines"), ("POST", "/runs/r1/undo", "undo")],
)
def test_an_unexpected_error_is_a_500_with_the_error_body_and_one_log_line(
    method, path, service, monkeypatch, caplog, tmp_path
):
    monkeypatch.setattr(services, service, _boom)
    client = TestClient(create_app(Workspace(tmp_path), ApiSettings(token=TOKEN)), base_url="http://127.0.0.1")
    with caplog.at_level(logging.INFO):
        answer = client.request(method, path, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 500
    assert answer.json() == {
        "error": {
            "code": "internal",
            "message": f"unexpected RuntimeError in {method} {path}",
            "fix": "check the server log; report it if it persists",
        }
    }
    logged = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in logged] == [f"unexpected RuntimeError in {method} {path}: boom second line"]
    assert logged[0].exc_info is None  # the traceback only at DEBUG


def test_an_unexpected_error_mid_stream_ends_the_stream_with_one_log_line(monkeypatch, caplog, tmp_path):
    ws = Workspace(tmp_path)
    RunJournal(ws, RunRecord("r1", PIPELINE, Policy.AUTO, started_ms=1)).save()  # a run, running on paper
    monkeypatch.setattr(views, "run_events_out", _boom)
    client = TestClient(create_app(ws, ApiSettings(token=TOKEN)), base_url="http://127.0.0.1")
    with caplog.at_level(logging.INFO):
        answer = client.get("/runs/r1/events/stream")
    assert answer.status_code == 200 and answer.text.startswith("retry: ")  # what was sent stays; the stream ends
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert logged == ["unexpected RuntimeError in GET /runs/r1/events/stream: boom second line"]
