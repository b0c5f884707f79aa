"""Throwaway drill estates: one clean demo estate with a first champion per seed, forked per scenario.

Building an estate (seed it, promote a first champion, land a clean batch) costs seconds; forking it is a
folder copy. The batch is `demo.story.land_batch`'s: `NEW_DAYS` more days ending at the drill's instant,
the city a little more congested, so a model trained on healed data can beat the champion. The loop then
runs a few minutes after the batch lands (the label freshness SLA counts from there).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd

from chaos.drill.impact import clean_holdout, holdout_score
from chaos.errors import DrillFailed
from controlplane.pipeline import run_pipeline
from controlplane.spec import PipelineSpec, load_spec
from controlplane.workspace import Workspace
from demo.seed import PIPELINE, seed_estate
from demo.story import NEW_DAYS, land_batch

__all__ = [
    "DrillEstate",
    "build_estate",
    "load_estate",
    "fork",
    "fork_control",
    "write_table",
    "DRILL_NOW",
    "RUN_DELAY",
]

DRILL_NOW = datetime(2026, 11, 1, 12, 0, tzinfo=timezone.utc)
RUN_DELAY = timedelta(minutes=5)  # the loop runs this long after the batch lands
_META = "estate.json"


@dataclass(frozen=True)
class DrillEstate:
    root: str
    seed: int
    pipeline: str
    anchor_ms: int  # the batch's last instant (upstreams report loads at it)
    now_ms: int  # when the loop runs on the batch
    clean_score: float | None  # the clean model's holdout metric

    @property
    def base(self) -> Workspace:
        """Seeded, first champion promoted, no batch yet."""
        return Workspace(Path(self.root) / "base")

    @property
    def landed(self) -> Workspace:
        """The base with the clean batch landed: what every scenario forks and corrupts."""
        return Workspace(Path(self.root) / "landed")

    def spec(self, ws: Workspace | None = None) -> PipelineSpec:
        return load_spec(ws or self.landed, self.pipeline)

    def clean(self) -> pd.DataFrame:
        return pd.read_parquet(self.spec().data)


def build_estate(root: Path, seed: int, now: datetime = DRILL_NOW) -> DrillEstate:
    """Seed a clean estate in `root`, promote its first champion, land a clean batch ending at `now`."""
    first_day = now - timedelta(days=NEW_DAYS)
    base = Workspace(root / "base").ensure()
    seed_estate(base, seed=seed, anchor=first_day)
    spec = load_spec(base, PIPELINE)
    first = run_pipeline(base, spec, now_ms=_ms(first_day + timedelta(hours=1)))
    if first.status != "promoted":
        raise DrillFailed(
            f"the drill's clean estate for seed {seed} did not promote a first champion "
            f"({first.status}: {first.outcome})",
            f"inspect the throwaway estate in {root}",
        )
    landed = Workspace(root / "landed")
    shutil.copytree(base.root, landed.root)
    land_batch(landed, load_spec(landed, PIPELINE), seed=seed, anchor=now, metres=False)
    batch_spec = load_spec(landed, PIPELINE)
    clean = pd.read_parquet(batch_spec.data)
    score = holdout_score(batch_spec, clean, clean_holdout(batch_spec, clean))
    if score.value is None:
        raise DrillFailed(
            f"the clean batch of seed {seed} does not train: {score.error}", f"inspect the throwaway estate in {root}"
        )
    estate = DrillEstate(str(root), seed, PIPELINE, _ms(now), _ms(now + RUN_DELAY), score.value)
    (root / _META).write_text(json.dumps(asdict(estate), indent=2, sort_keys=True))
    return estate


def load_estate(root: Path) -> DrillEstate:
    return DrillEstate(**json.loads((root / _META).read_text()))


def fork(estate: DrillEstate, name: str) -> Workspace:
    """A private copy of the landed estate (clean batch, champion) to corrupt and run."""
    target = Path(estate.root) / "forks" / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(estate.landed.root, target)
    return Workspace(target)


def fork_control(estate: DrillEstate, name: str, batch_seed: int) -> Workspace:
    """A private copy of the base estate with another clean batch landed (generator seed `batch_seed`)."""
    if batch_seed == estate.seed:
        return fork(estate, name)
    target = Path(estate.root) / "forks" / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(estate.base.root, target)
    ws = Workspace(target)
    anchor = datetime.fromtimestamp(estate.anchor_ms / 1000, tz=timezone.utc)
    land_batch(ws, load_spec(ws, estate.pipeline), seed=batch_seed, anchor=anchor, metres=False)
    return ws


def write_table(path: Path, frame: pd.DataFrame) -> None:
    """Write a feature table the way the demo lands it, atomically."""
    temporary = path.with_name(f".{path.name}.chaos.tmp")
    frame.to_parquet(temporary, index=False, row_group_size=100_000)
    os.replace(temporary, path)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
