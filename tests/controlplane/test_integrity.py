"""A pass means what it says — the red team's findings, each as a test that failed before the change:
time of check = time of use, every writer locked, undo that cannot destroy, copies that are independent,
stores that are evidence, and bad input that gets one line and changes nothing."""

from __future__ import annotations

import json
import os
import shutil
import threading
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pytest
from mlflow import MlflowClient

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import read_passport
from controlplane.errors import PipelineBusy, RunStateError, StoreMismatch
from controlplane.frontdoor import services
from controlplane.pipeline import approve, reject, run_pipeline
from controlplane.runs.journal import load_run
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import load_spec
from controlplane.stages.pin import file_hash
from controlplane.takeback.undo import undo
from controlplane.vocab import LedgerKind, Stage
from controlplane.workspace import Workspace
from demo.seed import PIPELINE
from tests.support import DEMO_NOW, LATER_MS, champion, kintsugi, ms, poison, reseed


def _table(ws: Workspace) -> Path:
    return load_spec(ws, PIPELINE).data


def test_a_table_replaced_after_detect_is_not_what_training_reads(demo_copy):
    ws, _ = demo_copy
    data = _table(ws)
    guarded = file_hash(data)
    leaking = pd.read_parquet(data).assign(leak=lambda f: f["eta_minutes"])
    reseed(ws)  # a fit the champion is not: the run trains a candidate

    def swap(event) -> None:  # a writer replaces the table (atomically) right after the guard passed it
        if event.stage == "detect":
            leaking.to_parquet(data.with_name("incoming.parquet"))
            os.replace(data.with_name("incoming.parquet"), data)

    record = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(DEMO_NOW + timedelta(minutes=30)), listener=swap)
    assert record.last_event(Stage.DETECT).status == "CLEAN"
    train = record.last_event(Stage.TRAIN)
    mlflow_run = record.entries(LedgerKind.MLFLOW_RUN)[0].result["mlflow_run"]
    run = MlflowClient(tracking_uri=ws.mlflow_uri).get_run(mlflow_run)
    assert run.data.tags["kintsugi.dataset.content_hash"] == guarded  # trained on the bytes the guard passed
    assert file_hash(data) != guarded and train.status == "trained"


def test_a_table_rewritten_in_place_during_the_run_is_not_what_training_reads(demo_copy):
    ws, _ = demo_copy
    data = _table(ws)
    guarded = file_hash(data)
    frame = pd.read_parquet(data)
    reseed(ws)  # a fit the champion is not: the run trains a candidate

    def rewrite(event) -> None:  # an in-place writer: the pin is a private copy, so it keeps the guarded bytes
        if event.stage == "detect":
            frame.assign(distance_km=frame["distance_km"] * 1000).to_parquet(data)

    record = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(DEMO_NOW + timedelta(minutes=30)), listener=rewrite)
    assert record.last_event(Stage.TRAIN).status == "trained", record.outcome
    mlflow_run = record.entries(LedgerKind.MLFLOW_RUN)[0].result["mlflow_run"]
    run = MlflowClient(tracking_uri=ws.mlflow_uri).get_run(mlflow_run)
    assert run.data.tags["kintsugi.dataset.content_hash"] == guarded and file_hash(data) != guarded


def test_undo_takes_the_pipelines_lock(demo_copy):
    ws, result = demo_copy
    before = file_hash(_table(ws))
    with pipeline_lock(ws, PIPELINE, "run in progress"):
        with pytest.raises(PipelineBusy, match="is busy"):
            undo(ws, result.healed.run_id)
    assert file_hash(_table(ws)) == before and load_run(ws, result.healed.run_id).status == "promoted"


def test_undo_with_a_damaged_backup_changes_nothing_not_even_the_status(demo_copy):
    ws, result = demo_copy
    backup = ws.run_dir(result.healed.run_id) / "backup" / "files" / "eta_features.parquet"
    backup.write_bytes(b"18 bytes of garbage")
    before, champion_before = file_hash(_table(ws)), champion(ws)
    with pytest.raises(RunStateError, match="damaged"):
        undo(ws, result.healed.run_id)
    assert file_hash(_table(ws)) == before and champion(ws) == champion_before
    assert load_run(ws, result.healed.run_id).status == "promoted"


def test_undo_in_any_order_leaves_the_newest_version_still_eligible_as_champion(demo_copy):
    ws, _ = demo_copy
    poison(ws)
    first = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=LATER_MS)  # A: heals, publishes, promotes v3
    assert first.status == "promoted", first.outcome
    reseed(ws)  # B's fit differs from A's, so B trains a candidate on the same rows
    second = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=LATER_MS + 600_000)  # B: clean, v4, needs review
    if second.status == "paused":
        second = approve(ws, second.run_id, reason="reviewed", by="tester", now_ms=LATER_MS + 660_000)
    assert second.status == "promoted", second.outcome
    assert champion(ws) == 4
    assert undo(ws, first.run_id).status == "undone"  # A first: its v3 is retired, B's v4 stays champion
    assert champion(ws) == 4
    assert undo(ws, second.run_id).status == "undone"  # then B: the newest version still eligible is v2
    assert champion(ws) == 2
    tags = MlflowClient(tracking_uri=ws.mlflow_uri).get_model_version(PIPELINE, "2").tags
    assert "kintsugi.undone" not in tags


def test_reject_racing_approve_exactly_one_wins(demo_copy):
    ws, _ = demo_copy
    poison(ws)
    paused = run_pipeline(ws, load_spec(ws, PIPELINE), policy="ratify", now_ms=LATER_MS)
    outcomes: dict[str, object] = {}

    def attempt(name, call) -> None:
        try:
            outcomes[name] = call().status
        except (PipelineBusy, RunStateError) as exc:
            outcomes[name] = exc

    threads = [
        threading.Thread(
            target=attempt,
            args=("approve", lambda: approve(ws, paused.run_id, reason="ok", by="tester", now_ms=LATER_MS + 60_000)),
        ),
        threading.Thread(target=attempt, args=("reject", lambda: reject(ws, paused.run_id, "no", by="tester"))),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    won = [name for name, outcome in outcomes.items() if not isinstance(outcome, Exception)]
    assert len(won) == 1, outcomes
    loser = next(outcome for outcome in outcomes.values() if isinstance(outcome, Exception))
    assert "busy" in str(loser) or "needs it paused" in str(loser)


def test_a_copied_workspace_never_writes_into_the_original(demo_run, tmp_path, monkeypatch, capsys):
    original, result = demo_run
    table_before = file_hash(_table(original))
    artifacts_before = sorted(str(p) for p in original.artifacts.rglob("*"))
    copy = Workspace(tmp_path / "copy")
    shutil.copytree(original.root, copy.root)  # a plain copy: no rebase by hand
    code, out, err = kintsugi(monkeypatch, capsys, "undo", result.healed.run_id, "-w", str(copy.root))
    assert code == 0, out + err
    assert file_hash(_table(original)) == table_before
    assert sorted(str(p) for p in original.artifacts.rglob("*")) == artifacts_before
    assert champion(original) == 2 and champion(copy) == 1
    source = MlflowClient(tracking_uri=copy.mlflow_uri).get_model_version(PIPELINE, "1").source
    assert str(copy.root) in source and str(original.root) not in source


def test_an_emptied_mlflow_store_is_an_error_never_a_fresh_start(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    passport_before = read_passport(LiteMetadata(ws.datahub_db, read_only=True), PIPELINE, 1)
    ws.mlflow_db.unlink()  # MLflow would quietly start a new, empty store here
    code, _, err = kintsugi(
        monkeypatch,
        capsys,
        "run",
        PIPELINE,
        "-w",
        str(ws.root),
        "--now",
        (DEMO_NOW + timedelta(minutes=30)).isoformat(),
    )
    assert code == 2 and "MLflow store" in err and "replaced or emptied" in err, err
    assert len(err.strip().splitlines()) == 1
    assert read_passport(LiteMetadata(ws.datahub_db, read_only=True), PIPELINE, 1) == passport_before
    code, _, err = kintsugi(monkeypatch, capsys, "audit", "--all", "-w", str(ws.root))
    assert code == 2 and "replaced or emptied" in err  # audit does not say "ok" on an emptied store


def test_an_emptied_datahub_store_is_an_error(demo_copy):
    ws, _ = demo_copy
    ws.datahub_db.unlink()
    LiteMetadata(ws.datahub_db).close()
    store = LiteMetadata(ws.datahub_db)
    from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
    from datahub.metadata import schema_classes as s

    store.emit([MCP(entityUrn="urn:li:tag:someone-else", aspect=s.TagPropertiesClass(name="x"))])
    store.close()
    with pytest.raises(StoreMismatch, match="DataHub store"):
        run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=ms(DEMO_NOW + timedelta(minutes=30)))


def test_a_corrupt_run_record_is_skipped_and_reported(demo_copy, monkeypatch, capsys):
    from controlplane.frontdoor.scheduler import Scheduler

    ws, result = demo_copy
    (ws.run_dir(result.first.run_id) / "run.json").write_text('{"run_id": "trunc')
    code, out, err = kintsugi(monkeypatch, capsys, "runs", "-w", str(ws.root))
    assert code == 0 and result.healed.run_id in out and f"unreadable run {result.first.run_id}" in err
    listing = services.runs(ws)
    assert [u.run_id for u in listing.unreadable] == [result.first.run_id]
    assert Scheduler(ws).schedules() == {}  # the scheduler reads on, too


@pytest.mark.parametrize(
    "args, words",
    [
        (["--now", "1970-01-01T00:00:00+00:00"], "is outside"),
        (["--now", "2999-01-01T00:00:00+00:00"], "is outside"),
        (["--now", "yesterday"], "ISO-8601"),
    ],
)
def test_a_now_outside_a_sane_window_is_refused(demo_copy, monkeypatch, capsys, args, words):
    ws, _ = demo_copy
    code, _, err = kintsugi(monkeypatch, capsys, "guard", PIPELINE, "-w", str(ws.root), *args)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1


def test_free_text_is_length_limited(demo_copy):
    ws, _ = demo_copy
    poison(ws)
    paused = run_pipeline(ws, load_spec(ws, PIPELINE), policy="ratify", now_ms=LATER_MS)
    with pytest.raises(Exception, match="characters long"):
        services.reject(ws, paused.run_id, "x" * 5_000_000, actor="tester")
    assert load_run(ws, paused.run_id).status == "paused"


CONTRACT = (Path(__file__).resolve().parents[2] / "demo" / "contracts" / "eta_features.odcs.yaml").read_text()
_LABEL_ROLE = "          - property: role\n            value: label\n"
_AT_LEAST = "          - property: atLeast\n            value: {}\n"


def test_a_contract_declares_an_order_between_two_columns_of_one_unit():
    """A delivery's ETA is at least its preparation time (both in minutes): `atLeast`, held as a bound."""
    from controlplane.documents.odcs import parse_odcs

    assert parse_odcs(CONTRACT).declared_orders == ()
    declared = parse_odcs(CONTRACT.replace(_LABEL_ROLE, _LABEL_ROLE + _AT_LEAST.format("prep_time_min"), 1))
    assert declared.declared_orders == (("prep_time_min", "eta_minutes"),)


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda t: "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n" + t, "alias"),
        (
            lambda t: t.replace(
                "logicalType: string\n        required: true\n        primaryKey: true",
                "logicalType: string\n        required: true\n        primaryKey: true\n"
                "        customProperties:\n          - property: unit\n            value: km",
                1,
            ),
            "only numbers have units",
        ),
        (lambda t: t.replace("{minimum: 0, maximum: 50}", "{minimum: 60, maximum: 50}", 1), "above maximum"),
        (lambda t: t.replace(_LABEL_ROLE, _LABEL_ROLE + _AT_LEAST.format("prep_time"), 1), "not another number column"),
        (lambda t: t.replace(_LABEL_ROLE, _LABEL_ROLE + _AT_LEAST.format("distance_km"), 1), "columns of one unit"),
        (
            lambda t: t.replace("urn:li:dataset:(urn:li:dataPlatform:file,delivery.eta_features,PROD)", "not-a-urn", 1),
            "not a DataHub dataset URN",
        ),
        (lambda t: t + "nested: " + "[" * 5000 + "]" * 5000 + "\n", "nests deeper than 64 levels"),  # no RecursionError
        (lambda t: t + "#" * 1_000_000 + "\n", "is over 1000000 bytes"),
    ],
)
def test_a_bad_contract_gets_one_line_and_changes_nothing(demo_copy, monkeypatch, capsys, tmp_path, edit, words):
    ws, _ = demo_copy
    bad = tmp_path / "contract.yaml"
    bad.write_text(edit(CONTRACT))
    before = file_hash(ws.datahub_db), sorted(ws.contracts.iterdir())
    code, _, err = kintsugi(monkeypatch, capsys, "contract", "apply", str(bad), "-w", str(ws.root))
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert (file_hash(ws.datahub_db), sorted(ws.contracts.iterdir())) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="as root, a read-only folder is still writable")
def test_a_read_only_workspace_gets_one_line(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    for path in [ws.root, *ws.root.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    code, _, err = kintsugi(monkeypatch, capsys, "run", PIPELINE, "-w", str(ws.root))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_a_run_record_is_workspace_relative(demo_run):
    ws, result = demo_run
    text = (ws.run_dir(result.healed.run_id) / "run.json").read_text()
    assert str(ws.root) not in text
    assert json.loads(text)["ledger"]
