"""`kintsugi land`: the load recorded as DataHub's standard operation and last-modified (the feature table's, and an
upstream's when asked), the same batch never landed twice, and an interrupted land settled by the next writer."""

from __future__ import annotations

import time

import pyarrow.parquet as pq
import yaml
from datahub.metadata import schema_classes as s

from controlplane.datahub.lite import LiteMetadata
from controlplane.runs.journal import LedgerEntry, RunJournal, RunRecord, list_runs
from controlplane.vocab import Policy, RunKind, RunStatus

from onboard_support import NAME, UPSTREAM, cli, copy_ws, weather

AT = "2013-02-01T06:00:00+00:00"
AT_MS = 1359698400000


def test_land_records_the_load_in_datahub_and_never_lands_a_batch_twice(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    batch = tmp_path / "january.parquet"
    weather("2013-01-01", "2013-02-01").to_parquet(batch, index=False)
    code, out, err = cli("land", NAME, str(batch), "--now", AT, "--upstream", UPSTREAM, workspace=ws.root)
    assert code == 0 and "31 rows from january.parquet landed" in out, err
    table = ws.root / "data" / "seattle-weather.parquet"
    assert pq.read_metadata(table).num_rows == 366 + 31
    urn = yaml.safe_load((ws.pipelines / f"{NAME}.yaml").read_text())["feature_table"]
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        operation = store.aspect(urn, s.OperationClass)
        modified = store.aspect(urn, s.DatasetPropertiesClass).lastModified.time
        upstream = store.aspect(UPSTREAM, s.OperationClass)
    finally:
        store.close()
    assert (operation.operationType, operation.numAffectedRows, operation.lastUpdatedTimestamp) == ("INSERT", 31, AT_MS)
    assert modified == AT_MS and upstream.lastUpdatedTimestamp == AT_MS

    code, out, err = cli("land", NAME, str(batch), "--now", AT, workspace=ws.root)
    assert code == 0 and "was landed already by" in out and "nothing changed" in out, err + out
    assert pq.read_metadata(table).num_rows == 366 + 31
    assert [r.status.value for r in list_runs(ws) if r.kind == "land"] == ["landed", "landed"]


def test_an_interrupted_land_is_settled_by_the_next_writer(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    record = RunRecord(
        "20130201T060000Z-dead00",
        NAME,
        Policy.AUTO,
        started_ms=int(time.time() * 1000),
        now_ms=AT_MS,
        pid=999_999,
        kind=RunKind.LAND,
        batch="/gone/january.parquet",
    )
    record.ledger.append(LedgerEntry(1, "append", "data/seattle-weather.parquet", {"batch_sha256": "sha256:x"}))
    RunJournal(ws, record).save()  # its process died after recording the intent: running on paper, no lock held
    code, out, err = cli("land", NAME, str(tmp_path / "missing.parquet"), workspace=ws.root)
    assert code == 2 and "does not exist" in err  # refused before the lock: nothing settled yet
    batch = tmp_path / "january.parquet"
    weather("2013-01-01", "2013-02-01").to_parquet(batch, index=False)
    assert cli("land", NAME, str(batch), "--now", AT, workspace=ws.root)[0] == 0
    settled = next(r for r in list_runs(ws) if r.run_id == record.run_id)
    assert settled.status is RunStatus.RECOVERED
    assert "append data/seattle-weather.parquet may or may not have been written" in settled.outcome


def test_a_batch_without_rows_is_refused_and_nothing_is_written(onboarded, tmp_path):
    from controlplane.stages.pin import file_hash

    ws = copy_ws(onboarded[0], tmp_path / "ws")
    header_only, empty_parquet = tmp_path / "header-only.csv", tmp_path / "empty.parquet"
    weather("2013-01-01", "2013-02-01").head(0).to_csv(header_only, index=False)
    weather("2013-01-01", "2013-02-01").head(0).to_parquet(empty_parquet, index=False)
    assert header_only.read_text().count("\n") == 1  # the header, no row
    table = ws.root / "data" / "seattle-weather.parquet"
    before = file_hash(table), file_hash(ws.datahub_db), sorted(p.name for p in ws.runs.iterdir())
    for batch in (header_only, empty_parquet):
        code, out, err = cli("land", NAME, str(batch), "--now", AT, workspace=ws.root)
        assert code == 2, out + err
        assert err.strip().splitlines() == [
            f"error: batch {batch.name} has no rows; nothing was landed; land a file with at least one row"
        ]
    assert (file_hash(table), file_hash(ws.datahub_db), sorted(p.name for p in ws.runs.iterdir())) == before
