"""A producer that rewrites the live table IN PLACE (same path, same inode, other bytes) at any point of a run,
between two stages or between a stage's hash check and its read, never gets its bytes trained on: the run trains
on the bytes the guard passed, or ends BLOCKED because the table changed, and the champion never moves to a model
whose training read other bytes."""

from __future__ import annotations

import io
import os
import re
import shutil
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable

import pandas as pd
import pytest

from controlplane.datahub.lite import LiteMetadata
from controlplane.datahub.models import read_passport
from controlplane.pipeline import run_pipeline
from controlplane.runs.identity import rebase_if_moved
from controlplane.runs.journal import RunRecord
from controlplane.spec import load_spec
from controlplane.stages import detect, pin
from controlplane.vocab import Stage
from controlplane.workspace import Workspace
from demo.seed import PIPELINE
from demo.story import land_batch
from tables import readonce
from tests.support import DEMO_NOW, LATER, LATER_MS, champion, ms, poison, reseed

CHANGED = re.compile(r"the table( at \S+)? changed")


@dataclass(frozen=True)
class Trained:
    """What a run's training read, as the run and the passport record it."""

    rows: tuple[int, int, int]  # train, holdout, unlabelled
    snapshot: dict[str, Any]  # the passport's: content hash, location hash, rows
    version: int


def _trained(ws: Workspace, record: RunRecord) -> Trained | None:
    event = record.last_event(Stage.TRAIN)
    if event is None or event.status != "trained":
        return None
    evidence = event.evidence
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        passport = read_passport(store, PIPELINE, int(evidence["version"]))
    finally:
        store.close()
    rows = (evidence["rows_train"], evidence["rows_holdout"], evidence["rows_unlabelled"])
    return Trained(rows, passport["body"]["snapshot"] if passport else {}, int(evidence["version"]))


def _rewrite_in_place(path: Path, data: bytes) -> None:
    """What `DataFrame.to_parquet(path)` does to an existing file: truncate and rewrite the same inode."""
    inode = path.stat().st_ino
    with open(path, "r+b") as handle:
        handle.write(data)
        handle.truncate()
    assert path.stat().st_ino == inode


def _leaking_bytes(table: Path) -> bytes:
    """Other bytes a guard would never pass: a tenth of the rows gone and the label copied into a feature."""
    frame = pd.read_parquet(table)
    frame = frame.iloc[: len(frame) * 9 // 10].assign(distance_km=lambda f: f["eta_minutes"])
    out = io.BytesIO()
    frame.to_parquet(out)
    return out.getvalue()


def _run(ws: Workspace, monkeypatch: pytest.MonkeyPatch, at_point: Callable[[str], None], now_ms: int) -> RunRecord:
    """A real run of the healing story, telling `at_point` every stage boundary and every hash check of the pin
    (after the hash was taken, before the stage reads the bytes)."""
    checked, digested = pin.file_hash, readonce.digests_of
    counts: dict[str, int] = {}

    def told(path: Path) -> None:
        counts[path.name] = counts.get(path.name, 0) + 1
        at_point(f"hash:{path.name}#{counts[path.name]}")

    def hashed(path: Path) -> str:
        digest = checked(path)
        told(path)
        return digest

    def digests(path: Path, expected: str) -> readonce.Digests:  # a stage's check, before it reads through the door
        taken = digested(path, expected)
        told(path)
        return taken

    monkeypatch.setattr(pin, "file_hash", hashed)
    monkeypatch.setattr(readonce, "digests_of", digests)
    try:
        return run_pipeline(
            ws, load_spec(ws, PIPELINE), now_ms=now_ms, listener=lambda e: at_point(f"{e.stage}:{e.status}")
        )
    finally:
        monkeypatch.setattr(pin, "file_hash", checked)
        monkeypatch.setattr(readonce, "digests_of", digested)


FULL = os.environ.get("KINTSUGI_FAULT_MATRIX") == "full"


def _fresh(pristine: Workspace, target: Path) -> Workspace:
    shutil.copytree(pristine.root, target)
    ws = Workspace(target)
    rebase_if_moved(ws)
    return ws


@pytest.mark.parametrize("story", ["healed", "clean"])
def test_an_in_place_rewrite_at_any_point_of_a_run_is_never_trained_on(demo_copy, monkeypatch, tmp_path, story):
    """healed: the run heals, publishes, trains on the healed copy and promotes (every stage boundary, every hash
    check); clean: training reads the pin itself (every hash check: the guard's, training's, the promotion's)."""
    pristine, _ = demo_copy
    now_ms = LATER_MS if story == "healed" else ms(DEMO_NOW + timedelta(minutes=30))
    if story == "healed":
        poison(pristine)
    else:
        reseed(pristine)  # the same rows, another fit: training reads the pin rather than the champion standing
    points: list[str] = []
    baseline_ws = _fresh(pristine, tmp_path / "baseline")
    baseline = _run(baseline_ws, monkeypatch, points.append, now_ms)
    guarded = _trained(baseline_ws, baseline)
    assert guarded is not None and (guarded.snapshot or story == "clean"), (
        baseline.outcome
    )  # clean: paused, no passport
    assert any(p.startswith("hash:") for p in points) and len(points) >= 3, points

    failures = []
    # `make test` rewrites after every hash check; `make test-faults` (run by CI too) at every stage boundary too
    for index, point in enumerate(p for p in points if (FULL and story == "healed") or p.startswith("hash:")):
        ws = _fresh(pristine, tmp_path / f"at-{index}")
        live = load_spec(ws, PIPELINE).data
        rewrite = _leaking_bytes(live)
        done: list[str] = []

        def at_point(
            name: str, point: str = point, live: Path = live, rewrite: bytes = rewrite, done: list[str] = done
        ) -> None:
            if name == point and not done:
                _rewrite_in_place(live, rewrite)
                done.append(name)

        before = champion(ws)
        record = _run(ws, monkeypatch, at_point, now_ms)
        assert done == [point], (point, done)
        trained = _trained(ws, record)
        moved = champion(ws)
        if trained is not None and (trained.rows, trained.snapshot) != (guarded.rows, guarded.snapshot):
            failures.append(f"{point}: trained on other bytes {trained} (guarded: {guarded})")
        if moved != before and (trained is None or moved != trained.version):
            failures.append(f"{point}: the champion moved to v{moved}, not to the version this run trained")
        if record.status != baseline.status and not (record.status == "blocked" and CHANGED.search(record.outcome)):
            failures.append(f"{point}: ended {record.status}: {record.outcome}")
    assert not failures, "\n".join(failures)


def _pinned_copy(ws: Workspace) -> Path | None:
    """The newest run's own pinned copy (`runs/<id>/snapshot/files/`), once the run has pinned."""
    newest = max((p for p in ws.runs.iterdir() if p.is_dir()), default=None)
    found = sorted(newest.glob("snapshot/files/*.parquet")) if newest is not None else []
    return found[0] if found else None


def test_a_rewrite_of_the_runs_own_pinned_copy_at_any_point_is_never_learned(demo_copy, monkeypatch, tmp_path):
    """The pin itself rewritten in place (by another job on the host, say) at every stage boundary and after every
    hash check of a file: training decodes exactly the bytes it hashed, so no version trained on the rewritten
    bytes is registered, let alone promoted; the run trains on what the guard passed or ends BLOCKED."""
    pristine, _ = demo_copy
    reseed(pristine)  # the same rows, another fit: training reads the pin itself
    now_ms = ms(DEMO_NOW + timedelta(minutes=30))
    points: list[str] = []
    baseline_ws = _fresh(pristine, tmp_path / "baseline")
    baseline = _run(baseline_ws, monkeypatch, points.append, now_ms)
    guarded = _trained(baseline_ws, baseline)
    assert guarded is not None, baseline.outcome

    failures, rewritten = [], 0
    for index, point in enumerate(points):
        ws = _fresh(pristine, tmp_path / f"at-{index}")
        done: list[str] = []

        def at_point(name: str, point: str = point, ws: Workspace = ws, done: list[str] = done) -> None:
            pinned = _pinned_copy(ws)
            if name == point and not done and pinned is not None:
                os.chmod(pinned, 0o644)  # its owner can: read-only keeps out accidents, not its owner
                _rewrite_in_place(pinned, _leaking_bytes(pinned))
                done.append(name)

        before = champion(ws)
        record = _run(ws, monkeypatch, at_point, now_ms)
        rewritten += bool(done)
        trained = _trained(ws, record)
        if trained is not None and trained.rows != guarded.rows:
            failures.append(f"{point}: trained on the rewritten pin {trained} (guarded: {guarded})")
        if champion(ws) != before and (trained is None or champion(ws) != trained.version):
            failures.append(f"{point}: the champion moved to v{champion(ws)}, not to the version this run trained")
        if record.status != baseline.status and not (record.status == "blocked" and CHANGED.search(record.outcome)):
            failures.append(f"{point}: ended {record.status}: {record.outcome}")
    assert rewritten >= 3, points  # the pin existed at several points: the guard's, training's, the gate's
    assert not failures, "\n".join(failures)


def test_the_guard_decodes_the_pinned_bytes_not_clean_ones_swapped_in_while_it_reads(demo_copy, monkeypatch, tmp_path):
    """Another job on the host swaps the run's pinned copy for clean bytes once the pin is taken, and puts the
    poisoned bytes back the moment the guard is done, so that any hash taken after the guard matches the pin. The
    guard reads through the door (`tables.readonce`): it decodes no byte that is not the pin's, so the run ends
    BLOCKED (the table changed), nothing is trained and the champion stays. Before the door, the guard passed the
    clean bytes and the run trained on the poisoned ones."""
    pristine, _ = demo_copy
    twin = _fresh(pristine, tmp_path / "twin")
    land_batch(twin, load_spec(twin, PIPELINE), seed=7, anchor=LATER, metres=False)
    clean = load_spec(twin, PIPELINE).data.read_bytes()  # the same batch, in kilometres: a guard passes it
    ws = _fresh(pristine, tmp_path / "run")
    poison(ws)
    swapped: dict[str, Any] = {}
    pin_table, guard_table = detect.pin_table, detect.guard_table

    def pin_then_swap(*args: Any) -> pin.Pinned:
        pinned = pin_table(*args)
        path = pinned.path(ws)
        swapped.update(path=path, poisoned=path.read_bytes())
        os.chmod(path, 0o644)
        _rewrite_in_place(path, clean)
        return pinned

    def guard_then_restore(*args: Any, **options: Any) -> Any:
        try:
            return guard_table(*args, **options)
        finally:
            _rewrite_in_place(swapped["path"], swapped["poisoned"])

    monkeypatch.setattr(detect, "pin_table", pin_then_swap)
    monkeypatch.setattr(detect, "guard_table", guard_then_restore)
    before = champion(ws)
    record = run_pipeline(ws, load_spec(ws, PIPELINE), now_ms=LATER_MS)
    assert swapped, "the pin was never taken"
    assert record.status == "blocked" and CHANGED.search(record.outcome), (record.status, record.outcome)
    assert record.last_event(Stage.TRAIN) is None, record.outcome
    assert champion(ws) == before
