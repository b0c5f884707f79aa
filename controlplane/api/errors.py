"""The one place the HTTP API translates errors: `{"error": {"code", "message", "fix"}}` with a stable status.

An exception outside the error tree (a bug) is a 500 with the same body, and one line in the log (the traceback
at DEBUG): `UnexpectedErrors` answers it inside the app, before Starlette's outermost layer would log a
traceback and re-raise it to the server, which logs another.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from controlplane import errors as e
from controlplane.errors import unexpected
from controlplane.frontdoor.views import ErrorResponse

__all__ = ["status_of", "error_response", "install_error_handlers", "UnexpectedErrors", "ERROR_RESPONSES", "STATUS"]

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


def unexpected_response(exc: Exception, method: str, path: str) -> JSONResponse:
    """A bug as a 500 with the error body, logged on one line. The body names the type, not the text: an
    exception's text (paths, values) is for the server's log, not for whoever can reach the port."""
    where = f"{method} {path}"
    log.error("%s", unexpected(exc, where), exc_info=exc if log.isEnabledFor(logging.DEBUG) else None)
    return error_response(
        500, "internal", f"unexpected {type(exc).__name__} in {where}", "check the server log; report it if it persists"
    )


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:  # the last resort, outside the app's layers
    return unexpected_response(exc, request.method, request.url.path)


class UnexpectedErrors:
    """ASGI layer inside the app: an exception no handler maps becomes `unexpected_response`. A response already
    under way (a stream) is ended where it is, with the one log line."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = ended = False

        async def sending(message: Message) -> None:
            nonlocal started, ended
            started = started or message["type"] == "http.response.start"
            ended = ended or (message["type"] == "http.response.body" and not message.get("more_body", False))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            response = unexpected_response(exc, scope.get("method", ""), scope.get("path", ""))
            if not started:
                await response(scope, receive, send)
            elif not ended:
                await send({"type": "http.response.body", "body": b"", "more_body": False})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(e.KintsugiError, _kintsugi)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(Exception, _unexpected)
    app.add_middleware(UnexpectedErrors)
