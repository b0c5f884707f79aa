"""What every request passes before any route (the MCP mount included) sees it.

- Host: on a loopback bind, only a loopback Host (a DNS-rebinding page cannot reach the API by name).
- Origin: a request that names an Origin must come from the server's own origin, so a cross-site form or
  fetch from any web page is refused (403), whatever it carries.
- Body: at most MAX_BODY_BYTES, refused (413) from Content-Length before the body is read, and cut off when a
  chunked body runs over. A Content-Length that is not a non-negative whole number, or two that disagree, is a
  malformed request (400), whichever server parsed it.
- Token: routes that change something (and every route on a server bound beyond loopback) need the bearer
  token, checked in constant time before the route runs (401); a read-only server refuses writes (403).
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from controlplane.api.errors import error_response
from controlplane.errors import Unauthorized
from controlplane.frontdoor.access import ApiSettings, is_loopback, read_only_refusal

__all__ = ["RequestGuard", "MAX_BODY_BYTES", "PUBLIC_PATHS"]

MAX_BODY_BYTES = 1 << 20
PUBLIC_PATHS = frozenset({"/", "/console.js", "/health", "/docs", "/openapi.json", "/docs/oauth2-redirect"})
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


class _TooLarge(BaseException):  # not an Exception: a framework that catches those must not swallow it
    pass


class RequestGuard:
    def __init__(self, app: ASGIApp, settings: ApiSettings) -> None:
        self.app, self.settings = app, settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self._bounded(scope, receive, send)

    def _refusal(self, scope: Scope):  # type: ignore[no-untyped-def]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = headers.get("host", "")
        if is_loopback(self.settings.host) and _hostname(host) not in _LOOPBACK_NAMES:
            return error_response(
                403,
                "host_refused",
                f"Host {host[:100]!r} is not this loopback server",
                "reach the server at 127.0.0.1 or localhost",
            )
        origin = headers.get("origin")
        if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
            return error_response(
                403,
                "cross_origin",
                f"requests from {origin[:100]!r} are refused",
                "call the API from the operator page it serves, or from a client without Origin",
            )
        lengths = sorted(
            {v.decode("latin-1").strip() for k, v in scope.get("headers") or [] if k.lower() == b"content-length"}
        )
        length = lengths[0] if lengths else "0"
        if len(lengths) > 1 or not (length.isascii() and length.isdigit()):
            return error_response(
                400,
                "bad_request",
                f"Content-Length {', '.join(lengths)[:60]!r} is not one non-negative whole number",
                "send one Content-Length header with the body's size in bytes",
            )
        if int(length) > MAX_BODY_BYTES:
            return error_response(
                413, "body_too_large", f"the body is {length[:20]} bytes", f"send at most {MAX_BODY_BYTES} bytes"
            )
        return self._auth(scope, headers)

    def _auth(self, scope: Scope, headers: dict[str, str]):  # type: ignore[no-untyped-def]
        method, path = scope["method"], scope["path"]
        writes = method not in _READS or path.startswith("/mcp")
        if self.settings.read_only and writes and not path.startswith("/mcp"):
            error = read_only_refusal(f"{method} {path}")
            return error_response(403, error.code, error.message, error.fix)
        token = self.settings.token
        if token is None or (path in PUBLIC_PATHS and method in _READS):
            return None
        if not writes and not self.settings.reads_need_token:
            return None
        scheme, _, given = headers.get("authorization", "").partition(" ")
        given = given if scheme.lower() == "bearer" else ""
        if given and hmac.compare_digest(given.encode(), token.encode()):
            return None
        return error_response(
            401,
            Unauthorized.code,
            "this route needs the API token" if not given else "the bearer token is not the API token",
            "send `Authorization: Bearer $KINTSUGI_API_TOKEN`",
        )

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        seen, started = 0, False

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > MAX_BODY_BYTES:
                    raise _TooLarge
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, tracking)
        except _TooLarge:
            if not started:
                await error_response(
                    413,
                    "body_too_large",
                    f"the body ran over {MAX_BODY_BYTES} bytes",
                    f"send at most {MAX_BODY_BYTES} bytes",
                )(scope, receive, send)


def _hostname(host: str) -> str:
    if host.startswith("["):
        return host[1:].split("]")[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
