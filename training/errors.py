"""The training package's one error tree: every error says what was wrong and how to fix it."""

from __future__ import annotations

__all__ = ["RegistryError", "SpecError", "TrainingError"]


class TrainingError(Exception):
    """A training step could not be done; ``fix`` says what to do about it.

    ``str(err)`` is ``"{message}; {fix}"`` so a front door can print it as one line.
    """

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message, fix)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}"


class SpecError(TrainingError):
    """The training spec is wrong: estimator path, estimator params, metric, columns."""


class RegistryError(TrainingError):
    """The MLflow store is unreachable, failed, or lacks the run, model or artifact asked for."""
