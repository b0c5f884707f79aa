"""One error tree. Every error says what was wrong (`message`) and what to do (`fix`), and has a stable `code`.

    KintsugiError                  error            base: message + fix
    ├── InputError                 invalid_input    the request is wrong: fix the input and ask again
    │   ├── SpecError              spec_invalid     a pipeline spec (YAML) is malformed or inconsistent
    │   └── ContractError          contract_invalid a data contract (ODCS YAML) is malformed or inconsistent
    ├── NotFound                   not_found        no such thing
    │   ├── PipelineNotFound       pipeline_not_found
    │   ├── RunNotFound            run_not_found
    │   └── VersionNotFound        version_not_found
    ├── Conflict                   conflict         the current state does not allow it
    │   ├── PipelineBusy           pipeline_busy    another writer holds the pipeline's lock
    │   ├── RunStateError          run_state        the run is not in a state that allows it
    │   │   └── DamagedRecord      run_damaged      a run's record lacks what its own writes must have recorded
    │   └── GateRefused            gate_refused     the promotion gate did not approve this version
    ├── DataError                  data             the table cannot be read or written
    │   └── TableChanged           table_changed    the table changed during a run (the run ends BLOCKED)
    ├── StoreError                 store            a store of record failed
    │   ├── MetadataError          datahub          DataHub (Lite or GMS) could not be read or written
    │   ├── RegistryError          mlflow           MLflow could not be read or written
    │   └── StoreMismatch          store_mismatch   a store is not this workspace's (replaced or emptied)
    ├── WorkspaceError             workspace        the workspace folder is missing, unwritable or moved
    ├── TrainingFailed             training         the model could not be trained or scored on this data
    ├── AccessError                access           the caller may not do this
    │   ├── Unauthorized           unauthorized     no API token, or a wrong one
    │   └── ReadOnlyMode           read_only        the server only reads
    ├── ServerConfigError          server_config    the server would start unsafely
    └── InternalError              internal         something unexpected (a bug): the message says what

Third-party errors become these at one place each (DataHub in `controlplane.datahub`, MLflow and training in
`controlplane.models.modelstore`, the file system in `controlplane.stages.pin`), chained with `from exc`. Each front
door maps the tree in one place: `controlplane.cli.errors` (exit 2 and one line), `controlplane.api.errors`
(HTTP status), `mcp_server.server.error_result` (a tool error carrying the code).

Anything else that escapes (a bug) is named the same way by every front door, on one line (`unexpected`); a run
it ended tags the error with its id (`tag_run`), so the line can say which run to report (`tagged_run`).
"""

from __future__ import annotations

__all__ = [
    "KintsugiError",
    "InputError",
    "SpecError",
    "ContractError",
    "NotFound",
    "PipelineNotFound",
    "RunNotFound",
    "VersionNotFound",
    "Conflict",
    "PipelineBusy",
    "RunStateError",
    "DamagedRecord",
    "GateRefused",
    "DataError",
    "TableChanged",
    "StoreError",
    "MetadataError",
    "RegistryError",
    "StoreMismatch",
    "WorkspaceError",
    "TrainingFailed",
    "AccessError",
    "Unauthorized",
    "ReadOnlyMode",
    "ServerConfigError",
    "InternalError",
    "one_line",
    "unexpected",
    "report_fix",
    "tag_run",
    "tagged_run",
]

MAX_LINE = 300  # an unexpected error's own text, in a line a person reads
_RUN_ATTRIBUTE = "_kintsugi_run_id"


class KintsugiError(Exception):
    """Base class: `message` says what was wrong, `fix` says what to do."""

    code = "error"

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        return f"{self.message}; {self.fix}"

    def __reduce__(self) -> tuple[type, tuple[str, str]]:  # crosses process boundaries whole (the drill's workers)
        return type(self), (self.message, self.fix)


class InputError(KintsugiError):
    code = "invalid_input"


class SpecError(InputError):
    code = "spec_invalid"


class ContractError(InputError):
    code = "contract_invalid"


class NotFound(KintsugiError):
    code = "not_found"


class PipelineNotFound(NotFound):
    code = "pipeline_not_found"


class RunNotFound(NotFound):
    code = "run_not_found"


class VersionNotFound(NotFound):
    code = "version_not_found"


class Conflict(KintsugiError):
    code = "conflict"


class PipelineBusy(Conflict):
    code = "pipeline_busy"


class RunStateError(Conflict):
    code = "run_state"


class DamagedRecord(RunStateError):
    """One run's record cannot be acted on (a ledger entry lacks a field its write records): that run is refused,
    nothing is changed, and the pipeline's other commands go on."""

    code = "run_damaged"


class GateRefused(Conflict):
    code = "gate_refused"


class DataError(KintsugiError):
    code = "data"


class TableChanged(DataError):
    code = "table_changed"


class StoreError(KintsugiError):
    code = "store"


class MetadataError(StoreError):
    code = "datahub"


class RegistryError(StoreError):
    code = "mlflow"


class StoreMismatch(StoreError):
    code = "store_mismatch"


class WorkspaceError(KintsugiError):
    code = "workspace"


class TrainingFailed(KintsugiError):
    code = "training"


class AccessError(KintsugiError):
    code = "access"


class Unauthorized(AccessError):
    code = "unauthorized"


class ReadOnlyMode(AccessError):
    code = "read_only"


class ServerConfigError(KintsugiError):
    code = "server_config"


class InternalError(KintsugiError):
    code = "internal"


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """`text` on one line (every run of whitespace one space), cut at `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def unexpected(exc: BaseException, where: str | None = None) -> str:
    """An error nobody foresaw, on one line: `unexpected Type in where: message`."""
    said = one_line(str(exc))
    return f"unexpected {type(exc).__name__}" + (f" in {where}" if where else "") + (f": {said}" if said else "")


def report_fix(exc: BaseException) -> str:
    """What to do about a bug: report it, with the id of the run it ended when one did."""
    run_id = tagged_run(exc)
    return "report it with the run id" + (f" {run_id}" if run_id else "")


def tag_run(exc: BaseException, run_id: str) -> None:
    """Remember on the error the run it ended (the innermost run wins: it is the one whose record says why)."""
    if tagged_run(exc) is None:
        try:
            setattr(exc, _RUN_ATTRIBUTE, run_id)
        except (AttributeError, TypeError):  # an exception type that takes no attributes: the id is only missing
            pass


def tagged_run(exc: BaseException) -> str | None:
    """The run an error (or one it was raised from, or while handling) ended, if one did."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        run_id = getattr(current, _RUN_ATTRIBUTE, None)
        if isinstance(run_id, str):
            return run_id
        current = current.__cause__ or current.__context__
    return None
