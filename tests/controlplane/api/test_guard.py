"""What every request passes before a route sees it: Host and Origin, the body's size, the token (for reads
too, beyond loopback), and answers that name no absolute path."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from fastapi.testclient import TestClient

from controlplane.api.app import create_app
from controlplane.api.guard import MAX_BODY_BYTES
from controlplane.errors import ServerConfigError
from controlplane.frontdoor.access import ApiSettings, check_exposure, token_warning
from tests.support import PIPELINE, TOKEN, served

LOCAL = "http://127.0.0.1:8765"


def _client(ws, **settings) -> TestClient:
    return TestClient(create_app(ws, ApiSettings(**settings)), base_url=LOCAL)


def test_a_cross_site_form_post_is_refused_whatever_it_carries(demo_copy):
    ws, result = demo_copy
    runs_before = sorted(p.name for p in ws.runs.iterdir())
    local = _client(ws, insecure_local=True)  # no token at all: only the Origin check stands
    for origin in ("https://evil.example", "null", "http://127.0.0.1:9999"):
        refused = local.post(f"/pipelines/{PIPELINE}/runs", headers={"Origin": origin}, data={"policy": "auto"})
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "cross_origin", origin
    promote = local.post(f"/models/{PIPELINE}/versions/1/promote", headers={"Origin": "https://evil.example"})
    assert promote.status_code == 403
    assert sorted(p.name for p in ws.runs.iterdir()) == runs_before
    assert local.get("/pipelines", headers={"Origin": LOCAL}).status_code == 200  # the page's own origin


def test_a_foreign_host_is_refused_on_a_loopback_server(demo_copy):
    ws, _ = demo_copy
    rebinding = TestClient(create_app(ws, ApiSettings(insecure_local=True)), base_url="http://evil.example")
    answer = rebinding.get("/pipelines")
    assert answer.status_code == 403 and answer.json()["error"]["code"] == "host_refused"


def test_an_oversized_body_is_refused_before_it_is_read(demo_copy):
    ws, _ = demo_copy
    app = create_app(ws, ApiSettings(token=TOKEN))
    sent: list[dict] = []

    async def receive() -> dict:
        raise AssertionError("the body was read")

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": f"/pipelines/{PIPELINE}/runs",
        "raw_path": b"/",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8765"), (b"content-length", str(200 * 1024 * 1024).encode())],
    }
    asyncio.run(app(scope, receive, send))  # unauthenticated, 200 MB announced: answered without reading a byte
    assert sent[0]["status"] == 413
    chunked = TestClient(app, base_url=LOCAL).post(
        "/runs/x/reject", content=iter([b"x" * MAX_BODY_BYTES, b"y"]), headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert chunked.status_code == 413


def test_short_tokens_are_refused_unless_insecure_local_and_warned_about_even_then():
    for host in ("0.0.0.0", "127.0.0.1"):
        with pytest.raises(ServerConfigError, match="at least 32"):
            check_exposure(ApiSettings(token="x", host=host))
    with pytest.raises(ServerConfigError, match="at least 32"):
        check_exposure(ApiSettings(token="x" * 31))
    check_exposure(ApiSettings(token="x", insecure_local=True))  # a laptop, on loopback: allowed...
    assert "only 1 characters" in token_warning(ApiSettings(token="x", insecure_local=True))  # ...and warned
    check_exposure(ApiSettings(token=TOKEN))
    assert token_warning(ApiSettings(token=TOKEN)) is None


_MALFORMED = {
    "a word": b"Content-Length: abc\r\n",
    "negative": b"Content-Length: -5\r\n",
    "two that disagree": b"Content-Length: 2\r\nContent-Length: 3\r\n",
    "a list": b"Content-Length: 2, 3\r\n",
    "a header line without a colon": b"NoColon\r\n",
}


def _raw_answer(url: str, headers: bytes) -> tuple[int, dict[str, str], bytes]:
    """What the server answers on the wire to a request no HTTP client would send."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(b"POST /runs/x/reject HTTP/1.1\r\nHost: 127.0.0.1\r\n" + headers + b"\r\nabc")
        data = b""
        while chunk := connection.recv(65536):  # the server answers, then closes: never a dropped connection
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), fields, body


@pytest.mark.parametrize("malformed", sorted(_MALFORMED))
def test_a_malformed_header_on_the_wire_gets_a_400_with_one_line_of_json(demo_copy, malformed):
    ws, _ = demo_copy
    with served(create_app(ws, ApiSettings(insecure_local=True))) as url:
        status, fields, body = _raw_answer(url, _MALFORMED[malformed])
    assert status == 400 and fields["content-type"] == "application/json", (status, fields, body)
    assert body.count(b"\n") <= 1 and json.loads(body)["error"]["code"] == "bad_request", body


def test_a_content_length_the_app_cannot_use_is_a_400_whichever_server_parsed_it(demo_copy):
    ws, _ = demo_copy
    app = create_app(ws, ApiSettings(insecure_local=True))
    for lengths in ([b"abc"], [b"-5"], [b"2", b"3"], [b"\xd9\xa3"]):  # the last: a digit, but not an ASCII one
        sent: list[dict] = []

        async def receive() -> dict:
            raise AssertionError("the body was read")

        async def send(message: dict, sent: list[dict] = sent) -> None:
            sent.append(message)

        headers = [(b"host", b"127.0.0.1:8765"), *((b"content-length", v) for v in lengths)]
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/runs/x/reject",
            "raw_path": b"/",
            "query_string": b"",
            "headers": headers,
        }
        asyncio.run(app(scope, receive, send))
        body = json.loads(b"".join(m.get("body", b"") for m in sent))
        assert sent[0]["status"] == 400 and body["error"]["code"] == "bad_request", (lengths, sent)


def test_reads_need_the_token_beyond_loopback(demo_copy):
    ws, result = demo_copy
    exposed = TestClient(create_app(ws, ApiSettings(token=TOKEN, host="0.0.0.0")), base_url="http://kintsugi.internal")
    assert exposed.get("/runs").status_code == 401
    assert exposed.get(f"/models/{PIPELINE}/passport").status_code == 401
    assert exposed.get("/health").status_code == 200  # liveness stays open
    answer = exposed.get(f"/runs/{result.healed.run_id}", headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200
    assert str(ws.root) not in answer.text  # workspace-relative paths only
    assert str(ws.root) not in exposed.get("/health").text


def test_unknown_versions_and_over_long_ids_are_404(demo_copy):
    ws, _ = demo_copy
    client = _client(ws, token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    cases = [
        client.post(f"/models/{PIPELINE}/versions/999/promote", headers=auth, json={"reason": "r"}),
        client.get("/runs/" + "x" * 5000),
        client.get(f"/models/{PIPELINE}/passport", params={"version": 999}),
        client.post("/runs/" + "y" * 300 + "/undo", headers=auth),
    ]
    for answer in cases:
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["code"] in ("version_not_found", "not_found", "run_not_found")
