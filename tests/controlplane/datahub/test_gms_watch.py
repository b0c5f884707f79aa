"""`kintsugi watch` through a DataHub GMS (the loopback stand-in): the same port methods, the same reconcile."""

from __future__ import annotations

import shutil

from datahub.metadata import schema_classes as s

from controlplane.datahub.config import GmsConfig
from controlplane.datahub.gms import GmsMetadata
from controlplane.datahub.model_risk import at_risk_urn
from controlplane.watch.follow import watch_pass
from demo.seed import PIPELINE
from tests.controlplane.datahub.conftest import TOKEN, configure
from tests.controlplane.watch.test_watch import INCIDENT, WATCH_AT, raise_upstream_incident
from tests.support import champion, ms


def test_watch_through_gms_marks_and_rolls_back(demo_copy, tmp_path, start_standin):
    ws, _ = demo_copy
    store = tmp_path / "gms.db"
    shutil.copyfile(ws.datahub_db, store)  # the team's GMS holds what the workspace's Lite held
    standin = start_standin(store)
    configure(ws, standin.url, timeout_sec=10.0, retries=2)
    ws.datahub_db.unlink()  # from now on, DataHub is the GMS only
    gms = GmsMetadata(GmsConfig(server=standin.url, token=TOKEN, timeout_sec=10.0, retries=1, backoff_sec=0.01))
    try:
        raise_upstream_incident(ws, port=gms)
        report = watch_pass(ws, now_ms=ms(WATCH_AT))
        assert [c.action for c in report.champions if c.pipeline == PIPELINE] == ["rolled-back"], report.lines()
        assert champion(ws) == 1
        mark = gms.aspect(at_risk_urn(PIPELINE, 2, INCIDENT), s.IncidentInfoClass)
        assert mark is not None and mark.status.state == "RESOLVED" and INCIDENT in mark.description
        assert [c.action for c in watch_pass(ws, now_ms=ms(WATCH_AT) + 60_000).champions] == ["healthy", "healthy"]
    finally:
        gms.close()
