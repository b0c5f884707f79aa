"""Game days on a real workspace: corrupt a pipeline's feature table (or its upstreams' metadata) by hand,
keeping the table's original bytes, and revert to exactly those bytes afterwards.

State lives in `<workspace>/chaos/<pipeline>/`: `original.parquet` (the kept bytes) and `injection.json`
(what was injected, the content hashes, and the DataHub aspects that undo a metadata injection). One
injection per pipeline at a time; both commands hold the pipeline's run lock.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from chaos.drill.copies import contract_of
from chaos.drill.estate import write_table
from chaos.errors import GameDayError
from chaos.failures.catalog import get_scenario
from chaos.failures.registry import Scenario, UpstreamTarget
from chaos.failures.selection import Selection
from controlplane.datahub.connect import metadata_session
from controlplane.datahub.port import AspectWrite
from controlplane.datahub.writes import UnreadableWrite, writes_from_json, writes_to_json
from controlplane.errors import DataError
from controlplane.runs.locks import pipeline_lock
from controlplane.spec import PipelineSpec, load_spec
from controlplane.workspace import Workspace
from profiles.snapshot import read_frame
from remediations.sandbox import content_hash

__all__ = ["GameDay", "inject_game_day", "revert_game_day", "active_game_day", "state_dir"]

_MANIFEST = "injection.json"
_ORIGINAL = "original.parquet"


@dataclass(frozen=True)
class GameDay:
    scenario: str
    pipeline: str
    seed: int
    magnitude: float
    selection: str
    data: str
    original_hash: str
    injected_hash: str
    expected: dict[str, Any]
    summary: str
    at_ms: int
    undo: list[dict[str, Any]] = field(default_factory=list)  # serialized MCPs that undo a metadata injection


def state_dir(ws: Workspace, pipeline: str) -> Path:
    return ws.root / "chaos" / pipeline


def active_game_day(ws: Workspace, pipeline: str) -> GameDay | None:
    manifest = state_dir(ws, pipeline) / _MANIFEST
    if not manifest.is_file():
        return None
    try:
        return GameDay(**json.loads(manifest.read_text()))
    except (ValueError, TypeError) as exc:
        raise GameDayError(
            f"chaos state {manifest} is unreadable ({exc})",
            f"restore {state_dir(ws, pipeline) / _ORIGINAL} to the table by hand, then remove that folder",
        ) from exc


def inject_game_day(
    ws: Workspace,
    pipeline: str,
    name: str,
    *,
    seed: int = 0,
    magnitude: float | None = None,
    selection: Selection | None = None,
    now_ms: int | None = None,
) -> GameDay:
    """Corrupt `pipeline`'s table (or its upstreams in DataHub) as scenario `name` says, keeping the original."""
    scenario = get_scenario(name)
    spec = load_spec(ws, pipeline)
    active = active_game_day(ws, spec.name)
    if active is not None:
        raise GameDayError(
            f"chaos scenario {active.scenario!r} is already injected into pipeline {spec.name!r}",
            f"revert it first with `kintsugi chaos revert --pipeline {spec.name}`",
        )
    if not spec.data.is_file():
        raise DataError(
            f"data file {spec.data} of pipeline {spec.name!r} does not exist",
            "land the table first (e.g. `kintsugi demo`)",
        )
    with pipeline_lock(ws, spec.name, f"chaos inject {name}"):
        folder = state_dir(ws, spec.name)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(spec.data, folder / _ORIGINAL)
        try:
            game = _inject(ws, spec, scenario, seed, magnitude, selection, now_ms or int(time.time() * 1000))
        except BaseException:
            _put_back(folder / _ORIGINAL, spec.data)
            shutil.rmtree(folder, ignore_errors=True)
            raise
        (folder / _MANIFEST).write_text(json.dumps(asdict(game), indent=2, sort_keys=True))
    return game


def revert_game_day(ws: Workspace, pipeline: str) -> GameDay:
    """Put back the table's original bytes and undo a metadata injection; returns what was reverted."""
    spec = load_spec(ws, pipeline)
    game = active_game_day(ws, spec.name)
    if game is None:
        raise GameDayError(
            f"no chaos injection is active on pipeline {spec.name!r} in {ws.root}",
            f"inject one with `kintsugi chaos inject SCENARIO --pipeline {spec.name}`",
        )
    folder = state_dir(ws, spec.name)
    undo = _undo_proposals(game, folder)  # read before anything is put back
    with pipeline_lock(ws, spec.name, "chaos revert"):
        _put_back(folder / _ORIGINAL, spec.data)
        restored = content_hash(spec.data)
        if restored != game.original_hash:
            raise GameDayError(
                f"restored {spec.data} hashes to {restored}, not the original {game.original_hash}",
                f"copy {folder / _ORIGINAL} over it by hand",
            )
        if undo:
            with metadata_session(ws) as metadata:
                metadata.emit(undo, int(time.time() * 1000))
        shutil.rmtree(folder)
    return game


def _undo_proposals(game: GameDay, folder: Path) -> list[AspectWrite]:
    """The recorded undo aspects as proposals; one DataHub's client cannot read back as an aspect is refused."""
    try:
        return writes_from_json(game.undo)
    except UnreadableWrite as exc:
        raise GameDayError(
            f"the undo record in {folder} holds a {exc.aspect!r} proposal this DataHub "
            "client cannot read back as an aspect; nothing was reverted",
            f"copy {folder / _ORIGINAL} over the table and revert that aspect in DataHub by hand, then delete {folder}",
        ) from exc


def _inject(
    ws: Workspace,
    spec: PipelineSpec,
    scenario: Scenario,
    seed: int,
    magnitude: float | None,
    selection: Selection | None,
    now_ms: int,
) -> GameDay:
    original = content_hash(spec.data)
    value = scenario.magnitude if magnitude is None else magnitude
    undo: list[dict[str, Any]] = []
    if scenario.upstream_injector is not None:
        assert scenario.upstream is not None
        with metadata_session(ws) as metadata:
            done = scenario.upstream_injector(metadata, UpstreamTarget(scenario.upstream, value, now_ms))
        undo, summary = writes_to_json(done.undo), done.summary
    else:
        assert scenario.table is not None
        contract = contract_of(ws, spec, DataError)
        injected = scenario.table(read_frame(spec.data), scenario.target(contract, seed, value, selection))
        write_table(spec.data, injected.frame)
        summary = (
            f"{injected.corrupted_cells} cells corrupted"
            + (f", {injected.rows_added} rows added" if injected.rows_added else "")
            + (f", {int(injected.removed.sum())} rows removed" if injected.removed is not None else "")
        )
    return GameDay(
        scenario.name,
        spec.name,
        seed,
        value,
        (selection or scenario.selection).label(),
        str(spec.data),
        original,
        content_hash(spec.data),
        _expected(scenario),
        summary,
        now_ms,
        undo,
    )


def _expected(scenario: Scenario) -> dict[str, Any]:
    return {
        "kind": scenario.kind.value,
        "columns": list(scenario.columns),
        "upstream": scenario.upstream,
        "healable": scenario.healable,
    }


def _put_back(kept: Path, target: Path) -> None:
    temporary = target.with_name(f".{target.name}.revert.tmp")
    shutil.copyfile(kept, temporary)
    os.replace(temporary, target)
