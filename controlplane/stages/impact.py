"""The impact of a heal, measured in the run that healed: the holdout metric of a model trained on the pinned
poisoned bytes next to the candidate trained on the healed bytes, both scored on the healed holdout.

One extra fit (the candidate is already scored), only when the run healed and the spec keeps `impact: true`
(the default). Recorded on the run's record (`RunRecord.impact`) for its postmortem; a poisoned table that cannot be
trained on is recorded as such, never an error of the run.
"""

from __future__ import annotations

from controlplane.errors import KintsugiError
from controlplane.models.modelstore import training_errors_mapped
from controlplane.runs.context import RunContext
from controlplane.runs.facts import Impact
from controlplane.stages.pin import Pinned
from controlplane.stages.train import Trained, holdout_of, labelled_of
from training.model import evaluate, fit, time_holdout

__all__ = ["measure_impact"]


def measure_impact(run: RunContext, trained: Trained) -> Impact | None:
    """Score a model trained on the poisoned bytes on the healed holdout; None when the run did not heal."""
    pinned = run.record.pinned
    if not trained.remediations or not pinned or not run.spec.impact:
        return None
    metric = run.spec.training.metric
    try:
        poisoned = _poisoned_scores(run, pinned, trained)
    except (KintsugiError, KeyError, ValueError, TypeError) as exc:
        why = exc.message if isinstance(exc, KintsugiError) else f"{type(exc).__name__}: {exc}"
        impact = Impact(metric, trained.metrics.get(metric), error=why)
    else:
        impact = Impact(metric, trained.metrics.get(metric), poisoned[metric], trained.rows["holdout"], trained.version)
    run.record.impact = impact  # on the record, not a stage: the timeline stays the loop's
    run.journal.save()
    return impact


def _poisoned_scores(run: RunContext, pinned: Pinned, trained: Trained) -> dict[str, float]:
    training = run.spec.training
    labelled = labelled_of(run, pinned.table, pinned.table_hash).rows  # over the row budget: a sample, as trained
    holdout = holdout_of(run, trained.view).holdout
    with training_errors_mapped():
        train_df, _ = time_holdout(labelled, training.time_column, training.holdout_fraction)
        return evaluate(training, fit(training, train_df), holdout)
