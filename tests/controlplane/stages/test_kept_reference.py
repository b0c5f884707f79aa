"""controlplane/stages/kept_reference.py: kept batch profiles whose distinct sketches are of a hash format this
version does not know are refused as a workspace error naming the fix; the first format's still load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controlplane.errors import WorkspaceError
from controlplane.stages.kept_reference import ReferenceState, load_reference, save_batch
from controlplane.workspace import Workspace
from profiles.snapshot import read_snapshot
from tests.profiles.batches_support import month_window, table, write


def test_a_kept_batch_of_an_unknown_hash_format_is_refused_with_the_fix(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    batch = read_snapshot(write(tmp_path, table(), "table"), window=month_window("2024-01")).batch
    assert batch is not None
    save_batch(ws, "p", batch, ReferenceState("ts", "month", (), None))
    (kept,) = (ws.references / "p" / "batches").glob("*.json")
    data = json.loads(kept.read_text())
    del data["profile"]["hash_format"]  # as format 1 wrote it: loads, its strings' sketches dropped
    kept.write_text(json.dumps(data))
    reference = load_reference(ws, "p")
    assert reference is not None and reference.profile.columns["id"].distinct is None
    assert reference.profile.columns["load"].distinct is not None
    data["profile"]["hash_format"] = 3
    kept.write_text(json.dumps(data))
    with pytest.raises(WorkspaceError) as refused:
        load_reference(ws, "p")
    line = str(refused.value)
    assert "\n" not in line and line == (
        f"the reference batch {ws.rel(kept)}: the profile's distinct sketches are of hash format 3; this version "
        "hashes with 2; run the kintsugi version that wrote it, or establish the reference again with "
        "`kintsugi init --force`"
    )
