"""`kintsugi doctor`: a bad URL, a bad token and a good configuration give three different, clear answers."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from controlplane.cli.datahub import doctor_command
from controlplane.workspace import Workspace
from tests.controlplane.datahub.conftest import configure, free_port
from tests.controlplane.datahub.standin import GMS_VERSION


def _doctor(ws: Workspace) -> tuple[int, str]:
    app = typer.Typer()
    app.command("doctor")(doctor_command)
    app.command("unused")(lambda: None)  # two commands, so `doctor` is a sub-command as in the real CLI
    result = CliRunner().invoke(app, ["doctor", "--workspace", str(ws.root)])
    return result.exit_code, result.output


@pytest.fixture(autouse=True)
def _no_ambient_configuration(monkeypatch):
    for name in ("DATAHUB_GMS_URL", "DATAHUB_GMS_TOKEN", "MLFLOW_TRACKING_URI"):
        monkeypatch.delenv(name, raising=False)


def test_a_bad_url_is_named_unreachable(tmp_path):
    ws = Workspace(tmp_path / "ws")
    dead = f"http://127.0.0.1:{free_port()}"
    configure(ws, dead)
    code, output = _doctor(ws)
    assert code == 1, output
    assert (
        f"  FAIL reachable: DataHub GMS at {dead} could not connect (GET /config): it is unreachable "
        f"(connection refused, 2 attempt(s)); check {ws.root / 'kintsugi.toml'} [datahub] server" in output
    )
    assert "  skip endpoints: not checked until the checks above pass" in output
    assert "authenticated" not in output


def test_a_bad_token_is_named_not_authenticated(tmp_path, start_standin):
    standin = start_standin(tmp_path / "gms.db")
    ws = Workspace(tmp_path / "ws")
    configure(ws, standin.url, token="expired")
    code, output = _doctor(ws)
    assert code == 1, output
    assert f"  ok   reachable: GMS {GMS_VERSION} (commit kintsugi-standin) answers at {standin.url}" in output
    assert "  FAIL authenticated: DataHub GMS at" in output
    assert "refused the token given with HTTP 401, not authenticated" in output
    assert "set DATAHUB_GMS_TOKEN" in output


def test_a_good_configuration_passes_every_check(tmp_path, start_standin):
    standin = start_standin(tmp_path / "gms.db")
    ws = Workspace(tmp_path / "ws")
    configure(ws, standin.url)
    code, output = _doctor(ws)
    assert code == 0, output
    assert "FAIL" not in output
    assert "  ok   authenticated: the token is accepted" in output
    for endpoint in (
        "GET /aspects/{urn}?aspect=&version=",
        "GET /openapi/v3/entity/{type}/{urn}/{aspect}",
        "POST /aspects?action=getTimeseriesAspectValues",
    ):
        assert f"  ok   {endpoint}: answers" in output
    assert output.rstrip().endswith("all backends answer as the loop needs")
