"""Bad input: one clear line naming the fix, exit 2, and nothing half-written in DataHub, MLflow or the data."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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


def _chmod_binds(tmp_path: Path) -> bool:
    """Whether a folder without write permission refuses this process (root, or a process with
    CAP_DAC_OVERRIDE, writes there anyway)."""
    folder = tmp_path / "chmod-probe"
    folder.mkdir(mode=0o500)
    try:
        (folder / "x").touch()
    except PermissionError:
        return True
    finally:
        folder.chmod(0o700)
    return False


@pytest.mark.parametrize(
    "command",
    [
        ["run", "delivery-eta"],
        ["land", "delivery-eta", "{data}"],
        ["promote", "delivery-eta", "1", "--reason", "by hand"],
        ["watch", "--once"],
    ],
    ids=lambda c: c[0],
)
def test_read_only_workspace_is_refused_by_every_writer_before_it_writes(
    monkeypatch, capsys, demo_copy, tmp_path: Path, command
):
    ws, _ = demo_copy
    args = [word.format(data=ws.data / "eta_features.parquet") for word in command]
    if _chmod_binds(tmp_path):
        ws.root.chmod(0o555)  # `chmod -w` on the workspace: its stores' journals and new files cannot go there
    else:  # privileged: chmod is ignored, so the folder every writer needs is made impossible to create instead
        shutil.rmtree(ws.runs)
        ws.runs.write_text("not a folder")
    before = (_stores(ws), _tree(ws.root))
    try:
        code, out, err = kintsugi(monkeypatch, capsys, *args, "--workspace", str(ws.root))
    finally:
        ws.root.chmod(0o755)
    assert code == 2, out + err
    assert len(err.strip().splitlines()) == 1, err  # one line, no traceback
    assert f"error: workspace {ws.root} is not writable" in err and "make it writable" in err
    assert (_stores(ws), _tree(ws.root)) == before  # nothing written: no run record, no lock, no watch state


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_workspace_without_estate(monkeypatch, capsys, tmp_path: Path):
    code, _, err = kintsugi(monkeypatch, capsys, "guard", "delivery-eta", "--workspace", str(tmp_path))
    assert code == 2 and "no Kintsugi estate" in err and "kintsugi init" in err


def test_bad_now(monkeypatch, capsys, demo_copy):
    ws, _ = demo_copy
    code, _, err = kintsugi(monkeypatch, capsys, "guard", "delivery-eta", "-w", str(ws.root), "--now", "yesterday")
    assert code == 2 and "ISO-8601" in err
