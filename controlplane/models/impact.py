"""The impact of a heal, measured in the run that healed: the holdout metric of a model trained on the pinned
poisoned bytes next to the candidate trained on the healed bytes, both scored on the healed holdout.

One extra fit (the candidate is already scored), only when the run healed and the spec keeps `impact: true`
(the default). Recorded in the run's facts (`impact`) for its postmortem; a poisoned table that cannot be
trained on is recorded as such, never an error of the run.
"""

from __future__ import annotations

from typing import Any

from controlplane.errors import KintsugiError
from controlplane.models.modelstore import training_errors_mapped
from controlplane.runs.context import RunContext
from controlplane.stages.pin import Pinned, verify_file
from controlplane.stages.train import Trained, holdout_of, labelled_of
from training.model import evaluate, fit, time_holdout

__all__ = ["measure_impact"]


def measure_impact(run: RunContext, trained: Trained) -> dict[str, Any] | None:
    """Score a model trained on the poisoned bytes on the healed holdout; None when the run did not heal."""
    pinned = run.record.facts.get("pinned")
    if not trained.remediations or not pinned or not run.spec.impact:
        return None
    metric = run.spec.training.metric
    try:
        poisoned = _poisoned_scores(run, Pinned.from_dict(pinned), trained)
    except (KintsugiError, KeyError, ValueError, TypeError) as exc:
        why = exc.message if isinstance(exc, KintsugiError) else f"{type(exc).__name__}: {exc}"
        impact: dict[str, Any] = {"metric": metric, "healed": trained.metrics.get(metric), "error": why}
    else:
        impact = {
            "metric": metric,
            "poisoned": poisoned[metric],
            "healed": trained.metrics.get(metric),
            "holdout_rows": trained.rows["holdout"],
            "version": trained.version,
        }
    run.record.facts["impact"] = impact  # a fact, not a stage: the timeline stays the loop's
    run.journal.save()
    return impact


def _poisoned_scores(run: RunContext, pinned: Pinned, trained: Trained) -> dict[str, float]:
    training = run.spec.training
    verify_file(run.ws, pinned.table, pinned.table_hash, "measuring the heal's impact")
    labelled, _, _, _ = labelled_of(run, pinned.path(run.ws))  # over the row budget: a sample, as trained
    holdout = holdout_of(run, trained.view).holdout
    with training_errors_mapped():
        train_df, _ = time_holdout(labelled, training.time_column, training.holdout_fraction)
        return evaluate(training, fit(training, train_df), holdout)
