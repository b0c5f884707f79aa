"""Customer impact: the spec's holdout metric of a model trained on some version of the data, scored on
a clean holdout — the `demo.story.customer_impact` measure, for poisoned, healed and clean data alike."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from controlplane.spec import PipelineSpec
from training.errors import TrainingError
from training.model import evaluate, fit, time_holdout

__all__ = ["Score", "clean_holdout", "holdout_score", "relative_change", "recovery_ratio", "HARM_THRESHOLD"]

HARM_THRESHOLD = 0.02  # a metric worse than the clean model's by more than this share hurts customers


@dataclass(frozen=True)
class Score:
    value: float | None
    error: str | None = None  # why no model could be trained (the pipeline would fail loudly)


def clean_holdout(spec: PipelineSpec, clean: pd.DataFrame) -> pd.DataFrame:
    """The newest rows of the clean batch: what customers will see next."""
    training = spec.training
    labelled = clean[clean[training.target].notna()]
    return time_holdout(labelled, training.time_column, training.holdout_fraction)[1]


def holdout_score(spec: PipelineSpec, frame: pd.DataFrame, holdout: pd.DataFrame) -> Score:
    """Train as the loop does (labelled rows, time split) on `frame`; score on the clean `holdout`."""
    training = spec.training
    try:
        labelled = frame[frame[training.target].notna()] if training.target in frame else frame
        train, _ = time_holdout(labelled, training.time_column, training.holdout_fraction)
        return Score(float(evaluate(training, fit(training, train), holdout)[training.metric]))
    except (TrainingError, KeyError, TypeError, ValueError) as exc:
        return Score(None, f"{type(exc).__name__}: {getattr(exc, 'message', exc)}")


def relative_change(score: float | None, clean: float | None, direction: str = "min") -> float | None:
    """How much worse than clean, as a share of clean (positive = worse), whatever the metric's direction."""
    if score is None or clean is None or clean == 0:
        return None
    worse = score - clean if direction == "min" else clean - score
    return worse / abs(clean)


def recovery_ratio(poisoned: float | None, healed: float | None, clean: float | None) -> float | None:
    """(healed - poisoned) / (clean - poisoned): 1 when the heal recovers all the poison cost, 0 when none.
    None when the poison did not move the metric by more than HARM_THRESHOLD (nothing to recover)."""
    if poisoned is None or healed is None or clean is None or clean == 0:
        return None
    if abs(poisoned - clean) / abs(clean) <= HARM_THRESHOLD:
        return None
    return (healed - poisoned) / (clean - poisoned)
