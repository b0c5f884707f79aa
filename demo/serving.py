"""The next day, served: what a team without the gate would serve, against what the loop serves.

The orders service still writes distance in metres the next day, so the traffic a model serves is broken the same
way. Each side retrains that day as it does every day and serves the day's deliveries, scored against what they
really took: without the gate, a model retrained (the loop's trainer, the loop's time split) on the table as the
feed sent it, serving the batch as sent; with the gate, the champion after the loop's run on that day (the version
that serves), serving the batch the loop healed; and that champion on the batch as a working feed would have sent
it (the clean baseline). The batch in metres is newer than a retrain's training split (`demo.story.HISTORY_DAYS`),
so the retrain without the gate learned km only and is served metres. The figures are kept in the workspace
(`controlplane.frontdoor.served`) for the console's served-error chart.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Callable

import pandas as pd

from controlplane.errors import WorkspaceError
from controlplane.frontdoor.served import ServedErrors, keep_served
from controlplane.models.modelstore import open_store, training_errors_mapped
from controlplane.pipeline import run_pipeline
from controlplane.runs.journal import Event, RunRecord
from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from demo.feature_tables import read_table
from demo.seed import PIPELINE
from demo.story import as_generated, broken_training_rows, land_batch, ms, new_deliveries
from training.model import evaluate, fit, time_holdout

__all__ = ["ServedDay", "serve_next_day"]


@dataclass(frozen=True)
class ServedDay:
    """The spec's metric of each model on the next day's deliveries."""

    metric: str
    rows: int
    without_gate: float  # retrained on the table as the broken feed sent it, serving the batch as sent
    healed: float  # the champion after the day's run, serving the batch the loop healed
    clean: float  # that champion, serving the batch as a working feed would have sent it
    champion: int  # the version that serves after the day's run
    broken_in_training: int  # training rows in metres of the retrain without the gate
    training_rows: int
    run: RunRecord  # the loop's run on the next day's batch

    @property
    def gap_measures(self) -> str:
        """What the first row's error is the cost of, said from how many of the retrain's rows were in metres."""
        said = f"the retrain without the gate had {self.broken_in_training} of its {self.training_rows} training rows in metres"
        if self.broken_in_training == 0:
            return said + " (they are newer than its training split): its error is the cost of serving the feed as sent"
        return said + ": its error is the cost of training on the feed as sent and serving it"


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
    history = read_table(ws, spec)
    served_after = history[training.time_column].max()
    day = now + timedelta(days=1)
    as_meant = new_deliveries(history, seed=seed, anchor=day)
    land_batch(ws, spec, seed=seed, anchor=day, metres=True)
    as_sent = _after(read_table(ws, spec), training.time_column, served_after)
    ran_at_ms = ms(day + timedelta(minutes=5))
    run = run_pipeline(ws, spec, now_ms=ran_at_ms, listener=listener)
    as_healed = _after(read_table(ws, spec), training.time_column, served_after)
    # without the gate nothing was ever healed: the table holds the first broken batch as it came, and today's
    sent_table = pd.concat([pd.read_parquet(ws.run_dir(healed_run.run_id) / "sandbox" / "input.parquet"), as_sent])
    with training_errors_mapped():
        train, _ = time_holdout(sent_table, training.time_column, training.holdout_fraction)
        without_gate_model = fit(training, train)
        store = open_store(ws)
        champion = store.champion_version(spec.name)  # read after the run: the version that serves today
        if champion is None:
            raise WorkspaceError(f"{spec.name} has no champion to serve", "run the demo again with --reset")
        champion_model = store.load_model(spec.name, champion)
        without_gate, healed, clean = (
            evaluate(training, model, batch)[training.metric]
            for model, batch in ((without_gate_model, as_sent), (champion_model, as_healed), (champion_model, as_meant))
        )
    broken = broken_training_rows(train, as_generated(sent_table, seed=seed, anchor=day))
    served = ServedDay(training.metric, len(as_sent), without_gate, healed, clean, champion, broken, len(train), run)
    measured = ServedErrors(
        spec.name,
        training.metric,
        served.rows,
        without_gate,
        healed,
        clean,
        champion,
        ran_at_ms,
        served.gap_measures,
    )
    keep_served(ws, measured)  # for the console's served-error chart
    return served


def _after(frame: pd.DataFrame, time_column: str, moment: pd.Timestamp) -> pd.DataFrame:
    return frame[frame[time_column] > moment].reset_index(drop=True)
