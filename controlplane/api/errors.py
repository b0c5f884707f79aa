"""The one place the HTTP API translates errors: `{"error": {"code", "message", "fix"}}` with a stable status."""
from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from controlplane.api.schemas import ErrorResponse
from controlplane.api.settings import ReadOnlyMode, Unauthorized
from controlplane.errors import KintsugiError, PipelineNotFound, RunError
from controlplane.operations import DrillsNotInstalled, InvalidInput, RunNotFound

__all__ = ["status_of", "error_response", "install_error_handlers", "ERROR_RESPONSES"]

log = logging.getLogger(__name__)

# First match wins: subclasses before their bases.
_STATUS: tuple[tuple[type[KintsugiError], int], ...] = (
    (PipelineNotFound, 404), (RunNotFound, 404), (Unauthorized, 401), (ReadOnlyMode, 403), (InvalidInput, 422),
    (DrillsNotInstalled, 501), (RunError, 409),
)

ERROR_RESPONSES: dict[int | str, dict[str, object]] = {
    status: {"description": what, "model": ErrorResponse} for status, what in (
        (401, "No bearer token, or a wrong one"), (403, "The server is read-only"), (404, "Unknown pipeline or run"),
        (409, "The run is not in a state that allows this (another run in progress, not paused, not APPROVED)"),
        (422, "Bad input"), (500, "Anything else: the message says what to do"))
}


def status_of(exc: KintsugiError) -> int:
    return next((status for kind, status in _STATUS if isinstance(exc, kind)), 500)


def error_response(status: int, code: str, message: str, fix: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": {"code": code, "message": message, "fix": fix}}, status_code=status,
                        headers=headers)


async def _kintsugi(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, KintsugiError)
    return error_response(status_of(exc), exc.code, exc.message, exc.fix)


async def _validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    where = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
    return error_response(422, "invalid_input", f"the request is not valid ({where})",
                          "see the OpenAPI description at /docs for this route's parameters")


async def _http(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http")
    return error_response(exc.status_code, code, str(exc.detail), "see the OpenAPI description at /docs")


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unexpected error", exc_info=exc)
    return error_response(500, "internal", f"unexpected {exc.__class__.__name__}",
                          "check the server log; report it if it persists")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(KintsugiError, _kintsugi)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
