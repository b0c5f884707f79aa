"""The one place the HTTP API translates errors: `{"error": {"code", "message", "fix"}}` with a stable status."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from controlplane import errors as e
from controlplane.views import ErrorResponse

__all__ = ["status_of", "error_response", "install_error_handlers", "ERROR_RESPONSES", "STATUS"]

log = logging.getLogger(__name__)

# The error tree (controlplane.errors) as HTTP statuses. First match wins: subclasses before their bases; every
# branch of the tree is here, and a test checks that every error class anyone raises finds its row.
STATUS: tuple[tuple[type[e.KintsugiError], int], ...] = (
    (e.Unauthorized, 401),
    (e.ReadOnlyMode, 403),
    (e.AccessError, 403),
    (e.NotFound, 404),
    (e.Conflict, 409),
    (e.TableChanged, 409),
    (e.InputError, 422),
    (e.DataError, 422),
    (e.TrainingFailed, 422),
    (e.StoreError, 503),
    (e.WorkspaceError, 500),
    (e.ServerConfigError, 500),
    (e.InternalError, 500),
)

ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    status: {"description": what, "model": ErrorResponse}
    for status, what in (
        (401, "No bearer token, or a wrong one"),
        (403, "Read-only server, foreign Origin or Host"),
        (404, "Unknown pipeline, run or version"),
        (409, "The state does not allow it (busy, not paused, not APPROVED, the table changed)"),
        (413, "The body is too large"),
        (422, "Bad input, unreadable data, or data that cannot be trained on"),
        (500, "The workspace or the server's configuration: the message says what to do"),
        (503, "DataHub or MLflow failed or is not this workspace's store"),
    )
}


def status_of(exc: e.KintsugiError) -> int:
    return next((status for kind, status in STATUS if isinstance(exc, kind)), 500)


def error_response(status: int, code: str, message: str, fix: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": {"code": code, "message": message, "fix": fix}}, status_code=status, headers=headers)


async def _kintsugi(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, e.KintsugiError)
    return error_response(status_of(exc), exc.code, exc.message, exc.fix)


async def _validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    where = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
    if exc.errors() and all(err["loc"][:1] == ("path",) for err in exc.errors()):
        return error_response(404, "not_found", f"no such resource ({where})", "check the id in the URL")
    return error_response(
        422,
        "invalid_input",
        f"the request is not valid ({where})",
        "see the OpenAPI description at /docs for this route's parameters",
    )


async def _http(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http")
    return error_response(exc.status_code, code, str(exc.detail), "see the OpenAPI description at /docs")


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error", exc_info=exc)
    return error_response(
        500, "internal", f"unexpected {exc.__class__.__name__}", "check the server log; report it if it persists"
    )


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(e.KintsugiError, _kintsugi)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
