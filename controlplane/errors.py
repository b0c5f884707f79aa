"""One error tree. Every error says what was wrong and what to do; front doors print it and exit 2."""
from __future__ import annotations

__all__ = [
    "KintsugiError", "WorkspaceError", "SpecError", "PipelineNotFound", "DataError", "ContractError",
    "MetadataError", "RegistryError", "RunError", "HealRefused",
]


class KintsugiError(Exception):
    """Base class: `message` says what was wrong, `fix` says what to do."""

    code = "error"

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}"


class WorkspaceError(KintsugiError):
    code = "workspace"


class SpecError(KintsugiError):
    code = "spec_invalid"


class PipelineNotFound(SpecError):
    code = "pipeline_not_found"


class DataError(KintsugiError):
    code = "data"


class ContractError(KintsugiError):
    code = "contract_invalid"


class MetadataError(KintsugiError):
    """DataHub could not be read or written."""

    code = "datahub"


class RegistryError(KintsugiError):
    """MLflow could not be read or written."""

    code = "mlflow"


class RunError(KintsugiError):
    """A run id is unknown or the run is not in a state that allows the request."""

    code = "run"


class HealRefused(KintsugiError):
    code = "heal_refused"
