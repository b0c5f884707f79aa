"""`kintsugi datahub push` publishes the Lite store with its history, idempotently; `pull` brings datasets back."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import typer
from datahub.emitter.aspect import ASPECT_MAP
from datahub.metadata import schema_classes as s
from typer.testing import CliRunner

from controlplane.cli.datahub import datahub_app
from controlplane.datahub.config import GmsConfig
from controlplane.datahub.datasets import walk_upstream
from controlplane.datahub.gms import GmsMetadata
from controlplane.datahub.history import health_at
from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.sync import plan_push, pull, push
from controlplane.errors import MetadataError
from controlplane.workspace import Workspace
from demo.seed import FEATURE_TABLE, UPSTREAMS
from tests.controlplane.datahub.conftest import TOKEN, configure
from tests.controlplane.datahub.standin import GmsStandIn
from tests.support import DEMO_NOW

NOW_MS = int(DEMO_NOW.timestamp() * 1000)


def _gms(standin: GmsStandIn) -> GmsMetadata:
    return GmsMetadata(GmsConfig(server=standin.url, token=TOKEN, timeout_sec=5.0, retries=1, backoff_sec=0.01))


def _rows(store: Path) -> int:
    with closing(sqlite3.connect(store)) as db:
        return int(db.execute("SELECT count(*) FROM metadata_aspect_v2").fetchone()[0])


def _pairs(store: Path) -> list[tuple[str, str]]:
    with closing(sqlite3.connect(store)) as db:
        return db.execute("SELECT DISTINCT urn, aspect_name FROM metadata_aspect_v2 ORDER BY 1, 2").fetchall()


def test_push_publishes_every_version_in_order_and_a_second_push_writes_nothing(demo_run, tmp_path, start_standin):
    ws, _ = demo_run
    standin = start_standin(tmp_path / "gms.db")
    gms, lite = _gms(standin), LiteMetadata(ws.datahub_db, read_only=True)
    plan = plan_push(ws.datahub_db, gms)
    assert plan.count("unchanged") == 0 and plan.versions > len(plan.items)  # history, not just current values
    assert push(plan, gms) == plan.versions
    for urn, aspect in _pairs(ws.datahub_db):
        cls = ASPECT_MAP[aspect]
        assert [v.to_obj() for v in gms.history(urn, cls)] == [v.to_obj() for v in lite.history(urn, cls)], (
            urn,
            aspect,
        )
    datasets = {FEATURE_TABLE, *UPSTREAMS}
    for at in (NOW_MS - 5 * 86_400_000, NOW_MS + 5 * 60_000, NOW_MS + 3_600_000):
        assert health_at(gms, datasets, at) == health_at(lite, datasets, at)
    rows = _rows(standin.store)
    again = plan_push(ws.datahub_db, gms)
    assert (again.versions, again.count("unchanged")) == (0, len(again.items))
    push(again, gms)
    assert _rows(standin.store) == rows
    lite.close()
    gms.close()


def test_push_dry_run_reports_and_writes_nothing(demo_run, tmp_path, start_standin):
    ws, _ = demo_run
    standin = start_standin(tmp_path / "gms.db")
    target = Workspace(tmp_path / "ws")
    shutil.copytree(ws.root, target.root)
    configure(target, standin.url)
    app = typer.Typer()
    app.add_typer(datahub_app, name="datahub")
    result = CliRunner().invoke(app, ["datahub", "push", "--dry-run", "--workspace", str(target.root)])
    assert result.exit_code == 0, result.output
    assert "would push" in result.output and f"to DataHub GMS at {standin.url}" in result.output
    assert "new      incidentInfo of urn:li:incident:" in result.output
    assert standin.count("ingestProposal") == 0 and _rows(standin.store) == 0


@pytest.fixture
def team_gms(demo_run, tmp_path, start_standin) -> GmsStandIn:
    """A team's GMS holding the demo estate."""
    ws, _ = demo_run
    shutil.copyfile(ws.datahub_db, tmp_path / "team.db")
    return start_standin(tmp_path / "team.db")


def test_pull_brings_datasets_lineage_and_upstream_properties_and_repeats_as_a_no_op(team_gms, tmp_path):
    gms = _gms(team_gms)
    lite = LiteMetadata(tmp_path / "pulled.db")
    report = pull(gms, lite, [FEATURE_TABLE], NOW_MS)
    assert (report.datasets, set(report.upstreams), report.missing_upstreams) == ((FEATURE_TABLE,), set(UPSTREAMS), ())
    for cls in (s.SchemaMetadataClass, s.UpstreamLineageClass, s.OwnershipClass, s.DatasetPropertiesClass):
        assert lite.aspect(FEATURE_TABLE, cls).to_obj() == gms.aspect(FEATURE_TABLE, cls).to_obj()
    for upstream in UPSTREAMS:
        assert (
            lite.aspect(upstream, s.DatasetPropertiesClass).to_obj()
            == gms.aspect(upstream, s.DatasetPropertiesClass).to_obj()
        )
    assert walk_upstream(lite, FEATURE_TABLE) == walk_upstream(gms, FEATURE_TABLE)
    assert pull(gms, lite, [FEATURE_TABLE], NOW_MS + 1).written == 0
    lite.close()
    gms.close()


def test_pull_brings_what_the_governance_scan_reads_so_it_finds_in_lite_what_it_finds_on_gms(team_gms, tmp_path):
    import yaml

    from controlplane.models.governance import GovernanceSeverity
    from controlplane.spec import parse_spec
    from controlplane.stages.governance import govern
    from demo.seed import PII_FIELD, PIPELINE

    gms = _gms(team_gms)
    lite = LiteMetadata(tmp_path / "pulled.db")
    pull(gms, lite, [FEATURE_TABLE], NOW_MS)
    ws = Workspace(tmp_path / "ws")
    source = Path(__file__).resolve().parents[3] / "demo" / "pipelines" / f"{PIPELINE}.yaml"
    spec = parse_spec(yaml.safe_load(source.read_text()), source, ws)
    lineage = tuple(node.urn for node in walk_upstream(gms, FEATURE_TABLE))
    found = govern(lite, spec, lineage)
    assert found == govern(gms, spec, lineage)
    assert [(f.severity, f.dataset, f.source_column, f.marker) for f in found] == [
        (GovernanceSeverity.NOTED, *PII_FIELD)
    ]
    lite.close()
    gms.close()


def test_pull_of_a_urn_the_server_does_not_hold_fails_closed(team_gms, tmp_path):
    gms = _gms(team_gms)
    lite = LiteMetadata(tmp_path / "pulled.db")
    missing = "urn:li:dataset:(urn:li:dataPlatform:postgres,no.such.table,PROD)"
    with pytest.raises(MetadataError, match=r"holds none of .*no\.such\.table.*; check the URN"):
        pull(gms, lite, [missing], NOW_MS)
    with pytest.raises(MetadataError, match="takes dataset URNs"):
        pull(gms, lite, ["urn:li:incident:x"], NOW_MS)
    assert lite.urns("dataset") == []
