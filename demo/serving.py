"""The next day, served: what a user would have shipped without the gate, against what the loop shipped.

The orders service still writes distance in metres the next day, so the traffic a model serves is broken the same
way. Three models' predictions on that day's deliveries, scored against what the deliveries really took: the model
trained on the poisoned table, serving the batch as the feed sent it; the healed champion, serving the batch the
loop healed when it landed; and the healed champion on the batch as a working feed would have sent it (the clean
baseline).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

import pandas as pd

from controlplane.errors import WorkspaceError
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.pipeline import run_pipeline
from controlplane.runs.journal import Event, RunRecord
from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from demo.generate import generate_eta_features
from demo.seed import INITIAL_DAYS, PIPELINE
from demo.story import NEW_DAYS, land_batch, ms
from training.model import evaluate, fit, time_holdout

__all__ = ["ServedDay", "serve_next_day"]


@dataclass(frozen=True)
class ServedDay:
    """The spec's metric of each model on the next day's deliveries."""

    metric: str
    rows: int
    poisoned: float  # trained on the poisoned table, serving the batch as the broken feed sent it
    healed: float  # the healed champion, serving the batch the loop healed
    clean: float  # the healed champion, serving the batch as a working feed would have sent it
    champion: int  # the healed champion's version
    run: RunRecord  # the loop's run on the next day's batch


def serve_next_day(
    ws: Workspace,
    healed_run: RunRecord,
    *,
    seed: int,
    now: datetime,
    listener: Callable[[Event], None] | None = None,
) -> ServedDay:
    """Land the next day's broken batch, let the loop run on it, and score the three models on that day."""
    spec = load_spec(ws, PIPELINE)
    training = spec.training
    poisoned_table = pd.read_parquet(ws.run_dir(healed_run.run_id) / "sandbox" / "input.parquet")
    with training_errors_mapped():
        poisoned_model = fit(training, time_holdout(poisoned_table, training.time_column, training.holdout_fraction)[0])
        store = open_store(ws)
        champion = store.champion_version(spec.name)
        if champion is None:
            raise WorkspaceError(f"{spec.name} has no champion to serve", "run the demo again with --reset")
        healed_model = store.load_model(spec.name, champion)
    served_after = pd.read_parquet(spec.data)[training.time_column].max()
    day = now + timedelta(days=1)
    days = INITIAL_DAYS + NEW_DAYS + 1  # the same days as before, and one more
    land_batch(ws, spec, seed=seed, anchor=day, metres=True, days=days)
    as_sent = _after(pd.read_parquet(spec.data), training.time_column, served_after)
    run = run_pipeline(ws, spec, now_ms=ms(day + timedelta(minutes=5)), listener=listener)
    as_healed = _after(pd.read_parquet(spec.data), training.time_column, served_after)
    as_meant = _after(generate_eta_features(days=days, seed=seed, anchor=day), training.time_column, served_after)
    with training_errors_mapped():
        poisoned, healed, clean = (
            evaluate(training, model, batch)[training.metric]
            for model, batch in ((poisoned_model, as_sent), (healed_model, as_healed), (healed_model, as_meant))
        )
    return ServedDay(training.metric, len(as_sent), poisoned, healed, clean, champion, run)


def _after(frame: pd.DataFrame, time_column: str, moment: pd.Timestamp) -> pd.DataFrame:
    return frame[frame[time_column] > moment].reset_index(drop=True)
