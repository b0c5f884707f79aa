"""Bad input: one clear line naming the fix, exit 2, and nothing half-written in DataHub, MLflow or the data."""

from __future__ import annotations

from pathlib import Path

from controlplane.stages.pin import file_hash as content_hash
from tests.support import kintsugi


def _stores(ws) -> tuple[str, str, str]:
    return content_hash(ws.datahub_db), content_hash(ws.mlflow_db), content_hash(ws.data / "eta_features.parquet")


def test_unknown_pipeline(monkeypatch, capsys, demo_copy):
    ws, _ = demo_copy
    code, _, err = kintsugi(monkeypatch, capsys, "run", "nope", "--workspace", str(ws.root))
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: unknown pipeline 'nope' in {ws.root} (known: cancel-risk, delivery-eta); "
        "check the name, or onboard it with `kintsugi init`"
    ]


def test_malformed_spec_yaml(monkeypatch, capsys, demo_copy):
    ws, _ = demo_copy
    (ws.pipelines / "broken.yaml").write_text("name: [unclosed\n")
    code, _, err = kintsugi(monkeypatch, capsys, "run", "broken", "--workspace", str(ws.root))
    assert code == 2
    assert "is not valid YAML" in err and "fix the YAML syntax" in err
    assert len(err.strip().splitlines()) == 1


def test_spec_missing_a_field(monkeypatch, capsys, demo_copy):
    ws, _ = demo_copy
    (ws.pipelines / "partial.yaml").write_text("name: partial\ntask: regression\n")
    code, _, err = kintsugi(monkeypatch, capsys, "run", "partial", "--workspace", str(ws.root))
    assert code == 2 and "missing or mistypes" in err


def test_missing_parquet_writes_nothing(monkeypatch, capsys, demo_copy):
    ws, _ = demo_copy
    data = ws.data / "eta_features.parquet"
    data.rename(ws.root / "moved.parquet")
    before = (content_hash(ws.datahub_db), content_hash(ws.mlflow_db))
    code, _, err = kintsugi(monkeypatch, capsys, "run", "delivery-eta", "--workspace", str(ws.root))
    assert code == 2
    assert f"pipeline 'delivery-eta': no table at {data}" in err and "`data:` in" in err
    assert len(err.strip().splitlines()) == 1
    assert (content_hash(ws.datahub_db), content_hash(ws.mlflow_db)) == before


def test_corrupt_parquet_writes_nothing(monkeypatch, capsys, demo_copy):
    ws, _ = demo_copy
    (ws.data / "eta_features.parquet").write_bytes(b"PAR1 this is not parquet")
    before = _stores(ws)
    code, _, err = kintsugi(monkeypatch, capsys, "run", "delivery-eta", "--workspace", str(ws.root))
    assert code == 2 and "is not a readable parquet file" in err
    assert _stores(ws) == before


def test_corrupt_parquet_blocks_the_guard(monkeypatch, capsys, demo_copy):
    ws, _ = demo_copy
    (ws.data / "eta_features.parquet").write_bytes(b"garbage")
    code, out, _ = kintsugi(monkeypatch, capsys, "guard", "delivery-eta", "--workspace", str(ws.root))
    assert code == 1
    assert "BLOCKED" in out and "snapshot_unreadable" in out


def test_unwritable_workspace(monkeypatch, capsys, tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    code, _, err = kintsugi(monkeypatch, capsys, "demo", "--workspace", str(blocker / "ws"))
    assert code == 2
    assert "is not writable" in err and "--workspace DIR" in err
    assert blocker.read_text() == "not a folder"


def test_workspace_without_estate(monkeypatch, capsys, tmp_path: Path):
    code, _, err = kintsugi(monkeypatch, capsys, "guard", "delivery-eta", "--workspace", str(tmp_path))
    assert code == 2 and "no Kintsugi estate" in err and "kintsugi init" in err


def test_bad_now(monkeypatch, capsys, demo_copy):
    ws, _ = demo_copy
    code, _, err = kintsugi(monkeypatch, capsys, "guard", "delivery-eta", "-w", str(ws.root), "--now", "yesterday")
    assert code == 2 and "ISO-8601" in err
