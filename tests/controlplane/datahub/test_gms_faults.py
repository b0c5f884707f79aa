"""The loop on a GMS that fails: down mid-run, 500s, slow answers, a bad token. Each run fails closed with a
message naming the server, the operation and what to check; the champion stays where it was; a retry
reuses the incident and assertions (their URNs derive from keys) instead of duplicating them."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from datetime import timedelta
from pathlib import Path

import pytest
from datahub.metadata import schema_classes as s

from controlplane.datahub.connect import open_metadata
from controlplane.errors import MetadataError
from controlplane.models.modelstore import open_store
from controlplane.pipeline import run_pipeline
from controlplane.runs.journal import list_runs
from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from demo.seed import FEATURE_TABLE, PIPELINE, seed_estate
from demo.story import NEW_DAYS, land_batch
from tests.controlplane.datahub.conftest import configure
from tests.controlplane.datahub.standin import Fault, GmsStandIn, Matcher, Request, writes_aspect
from tests.support import DEMO_NOW

FIRST_DAY = DEMO_NOW - timedelta(days=NEW_DAYS)
RUN_AT = int((DEMO_NOW + timedelta(minutes=5)).timestamp() * 1000)
RETRY_AT = RUN_AT + 10 * 60_000
TIMEOUT = 4.0  # per attempt: a 128-aspect batch must fit in it on a loaded machine (the suite runs two workers)


@pytest.fixture(scope="module")
def estate(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """The demo up to its poisoned batch: estate seeded, v1 champion on clean data, distance now in metres."""
    ws = Workspace(tmp_path_factory.mktemp("estate") / "ws").ensure()
    seed_estate(ws, seed=7, anchor=FIRST_DAY)
    spec = load_spec(ws, PIPELINE)
    first = run_pipeline(ws, spec, now_ms=int((FIRST_DAY + timedelta(hours=1)).timestamp() * 1000))
    assert first.status == "promoted", first.outcome
    land_batch(ws, spec, seed=7, anchor=DEMO_NOW, metres=True)
    return ws


@pytest.fixture
def on_gms(estate: Workspace, tmp_path: Path, start_standin) -> tuple[Workspace, GmsStandIn]:
    """A copy of the estate whose DataHub is a GMS (the stand-in, serving the estate's metadata)."""
    ws = Workspace(tmp_path / "ws")
    shutil.copytree(estate.root, ws.root)
    store = tmp_path / "gms.db"
    ws.datahub_db.rename(store)
    standin = start_standin(store)
    configure(ws, standin.url, timeout_sec=TIMEOUT)
    return ws, standin


def _champion(ws: Workspace) -> int | None:
    return open_store(ws).champion_version(PIPELINE)


def _incidents(ws: Workspace) -> dict[str, str]:
    metadata = open_metadata(ws, read_only=True)
    try:
        found = {urn: metadata.aspect(urn, s.IncidentInfoClass) for urn in metadata.urns("incident")}
        return {urn: info.status.state for urn, info in found.items() if info and FEATURE_TABLE in info.entities}
    finally:
        metadata.close()


def _run_events(store: Path) -> list[tuple[str, int]]:
    """(assertion, timestampMillis) of every run event written to the GMS."""
    with closing(sqlite3.connect(store)) as db:
        rows = db.execute(
            "SELECT urn, json_extract(metadata, '$.timestampMillis') FROM metadata_aspect_v2 "
            "WHERE aspect_name = 'assertionRunEvent' AND version > 0"
        ).fetchall()
    return sorted((urn, int(t)) for urn, t in rows)


def _second(matcher: Matcher) -> Matcher:
    """Matches from the second request `matcher` matches."""
    seen: list[Request] = []

    def match(request: Request) -> bool:
        if matcher(request):
            seen.append(request)
        return len(seen) >= 2

    return match


def _fails_closed(ws: Workspace, standin: GmsStandIn, *words: str) -> None:
    with pytest.raises(MetadataError) as raised:
        run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=RUN_AT)
    message = str(raised.value)
    assert message.startswith(f"DataHub GMS at {standin.url} could not "), message
    assert all(word in message for word in words), message
    assert _champion(ws) == 1, "a run that could not reach DataHub must not move the champion"
    failed = list_runs(ws)[-1]
    assert failed.status == "failed" and standin.url in failed.outcome


def test_server_down_mid_run_leaves_the_champion_and_the_retry_resolves_the_same_incident(on_gms):
    ws, standin = on_gms
    standin.fault = Fault(down=True, when=_second(writes_aspect("incidentInfo")))  # at the resolve
    _fails_closed(ws, standin, "could not write incidentInfo", "check")
    standin.restart()
    assert list(_incidents(ws).values()) == ["ACTIVE"]  # raised before the server went down
    events = _run_events(standin.store)
    retry = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=RETRY_AT)
    assert retry.status == "promoted", retry.outcome
    assert list(_incidents(ws).values()) == ["RESOLVED"]  # the same incident, cleared at the source
    assert {urn for urn, _ in _run_events(standin.store)} == {urn for urn, _ in events}  # no new assertions
    assert _champion(ws) == 2


def test_500s_at_the_write_back_leave_the_champion_and_the_retry_writes_no_duplicates(on_gms):
    ws, standin = on_gms
    standin.fault = Fault(status=500, when=writes_aspect("mlModelProperties"))
    _fails_closed(ws, standin, "could not write", "answered HTTP 500 after 2 attempt(s)", "check the health")
    assertions = {urn for urn, _ in _run_events(standin.store)}
    standin.fault = None
    retry = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=RETRY_AT)
    assert retry.status == "promoted", retry.outcome
    assert {urn for urn, _ in _run_events(standin.store)} == assertions
    assert list(_incidents(ws).values()) == ["RESOLVED"]
    assert _champion(ws) == 3  # v2 was trained but not promoted; the retry's v3 is


def test_slow_answers_at_the_write_back_time_out_and_leave_the_champion(on_gms):
    ws, standin = on_gms
    standin.fault = Fault(delay=TIMEOUT + 0.5, when=writes_aspect("mlModelProperties"))
    _fails_closed(ws, standin, f"did not answer within {TIMEOUT:g} s (2 attempt(s))", "timeout_sec")


def test_a_bad_token_fails_the_run_before_anything_is_written(on_gms):
    ws, standin = on_gms
    configure(ws, standin.url, token="revoked", timeout_sec=TIMEOUT)
    with closing(sqlite3.connect(standin.store)) as db:
        before = db.execute("SELECT count(*) FROM metadata_aspect_v2").fetchone()
    _fails_closed(ws, standin, "refused the token given with HTTP 401", "DATAHUB_GMS_TOKEN")
    with closing(sqlite3.connect(standin.store)) as db:
        assert db.execute("SELECT count(*) FROM metadata_aspect_v2").fetchone() == before
