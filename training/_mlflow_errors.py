"""The one place MLflow's exceptions become RegistryError."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from mlflow.exceptions import MlflowException
from requests import RequestException
from sqlalchemy.exc import SQLAlchemyError

from training.errors import RegistryError, TrainingError

__all__ = ["NOT_FOUND_CODES", "display_uri", "is_not_found", "mlflow_errors"]

NOT_FOUND_CODES = frozenset({"RESOURCE_DOES_NOT_EXIST", "NOT_FOUND"})
_STORE_ERRORS: tuple[type[BaseException], ...] = (
    MlflowException,
    RequestException,
    SQLAlchemyError,
    OSError,
)
_MAX_DETAIL = 300


def is_not_found(exc: MlflowException) -> bool:
    """True if MLflow said the model, version, run or experiment does not exist."""
    return exc.error_code in NOT_FOUND_CODES


def display_uri(uri: str) -> str:
    """``uri`` without any user:password part, for messages."""
    parts = urlsplit(uri)
    if not parts.netloc or "@" not in parts.netloc:
        return uri
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


@contextmanager
def mlflow_errors(uri: str, action: str, also: tuple[type[BaseException], ...] = ()) -> Iterator[None]:
    """Turn MLflow/store failures (and ``also``) inside the block into RegistryError."""
    try:
        yield
    except TrainingError:
        raise
    except (*_STORE_ERRORS, *also) as exc:
        shown = display_uri(uri)
        raise RegistryError(f"MLflow could not {action} at {shown}: {_detail(exc)}", _fix(exc, shown)) from exc


def _detail(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


def _fix(exc: BaseException, uri: str) -> str:
    if isinstance(exc, MlflowException) and is_not_found(exc):
        return "check the model name, version or run id against the MLflow store"
    if isinstance(exc, RequestException) or "API request to" in str(exc):
        return f"check that the MLflow tracking server at {uri} is running and reachable, then retry"
    if isinstance(exc, OSError):
        return "check that the MLflow store and artifact directories exist and are writable"
    return f"check the MLflow tracking URI {uri} and the store's logs, then retry"
