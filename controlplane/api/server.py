"""How the API is served: uvicorn on h11, whose answer to a request it cannot parse (a `Content-Length` that is
not a number, negative, or two that disagree; a header line that is not `name: value`) is the API's own one-line
JSON error with status 400, as every other refusal is, instead of uvicorn's plain-text one."""

from __future__ import annotations

import json
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["JsonErrorH11Protocol", "server_config", "BAD_REQUEST_BODY"]

BAD_REQUEST_BODY = (
    json.dumps(
        {
            "error": {
                "code": "bad_request",
                "message": "the request's headers could not be parsed (Content-Length, Transfer-Encoding or a header line)",
                "fix": "send one Content-Length of a non-negative whole number, and headers as `name: value` lines",
            }
        }
    ).encode()
    + b"\n"
)


class JsonErrorH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, answering an unparsable request with the API's JSON error."""

    def send_400_response(self, msg: str) -> None:
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(BAD_REQUEST_BODY)).encode()),
            (b"connection", b"close"),
        ]
        self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request")))
        self.transport.write(self.conn.send(h11.Data(data=BAD_REQUEST_BODY)))
        self.transport.write(self.conn.send(h11.EndOfMessage()))
        self.transport.close()


def server_config(app: Any, **options: Any) -> uvicorn.Config:
    """The one way the API is served (`kintsugi serve` and the tests' servers alike)."""
    return uvicorn.Config(app, http=JsonErrorH11Protocol, **options)
