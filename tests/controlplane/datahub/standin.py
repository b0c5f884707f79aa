"""A DataHub GMS stand-in on loopback: a real HTTP server answering the GMS endpoints Kintsugi's adapter uses,
with the request and response shapes DataHub documents, backed by a real DataHub Lite file.

GMS semantics it keeps (so that what the adapter writes can be read back as from a GMS):

- versioned aspects: version 0 is the latest value, versions 1..N-1 the earlier ones, oldest first. (Lite keeps
  the latest as both version 0 and its highest version N; on a GMS that value exists only as 0, so N is 404.)
- writing a value equal to the latest creates no version (GMS's rule, and Lite's) but moves the latest's
  ``systemMetadata.lastObserved``, which an older version keeps as it was when it was superseded;
- timeseries aspects: one value per (urn, timestampMillis) — a re-write overwrites — read newest first,
  ``startTimeMillis``/``endTimeMillis`` inclusive;
- ``/config`` answers without a token; every other endpoint wants ``Authorization: Bearer <token>`` when the
  stand-in has a token (401 otherwise);
- unknown aspects or malformed proposals: 422, as GMS's validation does.

Faults (``standin.fault = Fault(...)``): from the first request matching ``when`` on (sticky), or for the next
``times`` matching requests, answer with an HTTP ``status``, answer ``delay`` seconds late, or go ``down``
(stop listening: later connections are refused, as when the process dies; ``restart()`` brings it back on the
same port and store).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from datahub.emitter.aspect import ASPECT_MAP
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.lite.lite_util import get_datahub_lite
from datahub.metadata.schema_classes import MetadataChangeProposalClass

__all__ = ["GMS_VERSION", "Fault", "GmsStandIn", "Matcher", "Request", "any_request", "writes_aspect"]

GMS_VERSION = "v1.2.0"


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: str


Matcher = Callable[[Request], bool]


def any_request(request: Request) -> bool:
    return request.path != "/config"


def writes_aspect(name: str) -> Matcher:
    """Matches an ingest request that carries aspect `name`."""
    return lambda r: "action=ingestProposal" in r.path and f'"aspectName": "{name}"' in r.body


@dataclass
class Fault:
    status: int | None = None  # answer this HTTP status instead
    delay: float = 0.0  # answer this many seconds late (then normally, unless status is set)
    down: bool = False  # stop listening
    when: Matcher = any_request
    times: int | None = None  # None: sticky from the first match on
    hits: int = 0
    armed: bool = field(default=False, repr=False)

    def applies(self, request: Request) -> bool:
        if self.times is not None and self.hits >= self.times:
            return False
        if (self.armed and self.times is None) or self.when(request):
            self.armed, self.hits = True, self.hits + 1
            return True
        return False


class GmsStandIn:
    """Start with `start()`; `url` is the GMS address; `requests` logs (method, path, status) of every answer."""

    def __init__(self, store: Path, *, token: str | None = None, port: int = 0) -> None:
        self.store = store
        self.token = token
        self.fault: Fault | None = None
        self.requests: list[tuple[str, str, int]] = []
        self._port = port
        self._lock = threading.Lock()
        self._lite: Any = None
        self._server: ThreadingHTTPServer | None = None
        self._observed: dict[tuple[str, str, int], int] = {}  # (urn, aspect, Lite version) -> lastObserved

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def start(self) -> GmsStandIn:
        options = {"synchronous": "OFF", "journal_mode": "WAL"}  # a test server: speed over durability
        self._lite = get_datahub_lite({"type": "sqlite", "config": {"file": str(self.store), "options": options}})
        server = ThreadingHTTPServer(("127.0.0.1", self._port), _handler(self))
        server.daemon_threads = True
        self._port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with self._lock:
            if self._lite is not None:
                self._lite.close()
                self._lite = None

    def restart(self) -> GmsStandIn:
        self.stop()
        self.fault = None
        return self.start()

    def go_down(self) -> None:
        """Stop listening from inside a request handler (shutdown waits for serve_forever: use a thread)."""
        threading.Thread(target=self.stop, daemon=True).start()

    def count(self, path_part: str) -> int:
        return sum(1 for _, path, _ in self.requests if path_part in path)

    # -- the endpoints -------------------------------------------------------------------

    def answer(self, request: Request, headers: dict[str, str]) -> tuple[int, Any]:
        url = urlsplit(request.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if url.path == "/config" and request.method == "GET":
            return 200, _config()
        if self.token is not None and headers.get("authorization") != f"Bearer {self.token}":
            return 401, {"message": "Unauthorized to perform this action. Please provide a valid token.", "status": 401}
        body = json.loads(request.body) if request.body else {}
        action = query.get("action")
        with self._lock:
            if url.path == "/aspects" and action in ("ingestProposal", "ingestProposalBatch"):
                return self._ingest(body.get("proposals") or [body.get("proposal")])
            if url.path == "/aspects" and action == "getTimeseriesAspectValues":
                return self._timeseries(body)
            if url.path == "/entities" and action == "listUrns":
                return self._list_urns(body)
            if url.path.startswith("/aspects/") and request.method == "GET":
                return self._versioned_restli(unquote(url.path[len("/aspects/") :]), query)
            if url.path.startswith("/openapi/v3/entity/") and request.method == "GET":
                return self._versioned_v3(url.path, query)
        return 404, {"message": f"No resource for {request.method} {url.path}", "status": 404}

    def _ingest(self, proposals: list[Any]) -> tuple[int, Any]:
        wrappers = []
        for proposal in proposals:
            try:
                mcpc = MetadataChangeProposalClass.from_obj(proposal)
                wrapper = MetadataChangeProposalWrapper.try_from_mcpc(mcpc)
            except Exception as exc:  # noqa: BLE001 - GMS answers any malformed proposal with 422
                return 422, {"message": f"Failed to validate proposal: {exc}", "status": 422}
            if wrapper is None or wrapper.aspectName not in ASPECT_MAP:
                return 422, {"message": f"Unknown aspect {proposal.get('aspectName')!r}", "status": 422}
            wrappers.append(wrapper)
        for wrapper in wrappers:
            self._note_observed(wrapper)
            self._lite.write(wrapper)
        return 200, {"value": "success"}

    def _note_observed(self, wrapper: MetadataChangeProposalWrapper) -> None:
        """A re-write of the latest value moves that version's lastObserved (Lite moves only its copy at 0)."""
        assert wrapper.entityUrn and wrapper.aspectName and wrapper.aspect
        rows = self._rows(wrapper.entityUrn, wrapper.aspectName)
        observed = wrapper.systemMetadata.lastObserved if wrapper.systemMetadata else None
        if (
            rows
            and observed
            and json.loads(rows[-1][1])
            == json.loads(json.dumps(wrapper.to_obj(simplified_structure=True)["aspect"]["json"]))
        ):
            self._observed[(wrapper.entityUrn, wrapper.aspectName, rows[-1][0])] = observed

    def _rows(self, urn: str, aspect: str) -> list[tuple[int, str, str]]:
        with closing(sqlite3.connect(self.store)) as db:
            return db.execute(
                "SELECT version, metadata, system_metadata FROM metadata_aspect_v2 WHERE urn = ? "
                "AND aspect_name = ? AND version > 0 ORDER BY version",
                (urn, aspect),
            ).fetchall()

    def _gms_version(self, urn: str, aspect: str, version: int) -> tuple[str, str] | None:
        rows = self._rows(urn, aspect)
        if not rows or ASPECT_MAP[aspect].ASPECT_TYPE == "timeseries":
            return None
        if version >= len(rows) or version < 0:
            return None
        number, metadata, system = rows[version - 1]  # version 0: the last row, Lite's copy of the latest
        observed = self._observed.get((urn, aspect, number))
        if observed is not None:
            system = json.dumps({**json.loads(system), "lastObserved": observed})
        return metadata, system

    def _versioned_restli(self, urn: str, query: dict[str, str]) -> tuple[int, Any]:
        aspect, version = query.get("aspect", ""), int(query.get("version", "0"))
        found = self._gms_version(urn, aspect, version) if aspect in ASPECT_MAP else None
        if found is None:
            return 404, {"message": f"Did not find urn: {urn} aspect: {aspect} version: {version}", "status": 404}
        fqcn = ASPECT_MAP[aspect].RECORD_SCHEMA.fullname.replace(".pegasus2avro", "")
        return 200, {"version": version, "aspect": {fqcn: json.loads(found[0])}}

    def _versioned_v3(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        parts = path.split("/")  # '', openapi, v3, entity, {type}, {urn}, {aspect}
        if len(parts) != 7:
            return 404, {"message": f"No resource for {path}"}
        urn, aspect = unquote(parts[5]), parts[6]
        found = self._gms_version(urn, aspect, int(query.get("version", "0"))) if aspect in ASPECT_MAP else None
        if found is None:
            return 404, {"message": f"Not found: {urn} {aspect}"}
        document = {"value": json.loads(found[0])}
        if query.get("systemMetadata") == "true":
            document["systemMetadata"] = json.loads(found[1])
        return 200, document

    def _timeseries(self, body: dict[str, Any]) -> tuple[int, Any]:
        aspect, limit = body["aspect"], int(body.get("limit", 10000))
        start, end = body.get("startTimeMillis"), body.get("endTimeMillis")
        latest: dict[int, tuple[str, str]] = {}
        for _, metadata, system in self._rows(body["urn"], aspect):  # oldest write first: later ones overwrite
            latest[int(json.loads(metadata)["timestampMillis"])] = (metadata, system)
        chosen = sorted(
            (t for t in latest if (start is None or t >= start) and (end is None or t <= end)), reverse=True
        )[:limit]
        values = [
            {
                "aspect": {"value": latest[t][0], "contentType": "application/json"},
                "systemMetadata": json.loads(latest[t][1]),
            }
            for t in chosen
        ]
        value = {"entityName": body["entity"], "aspectName": aspect, "limit": limit, "values": values}
        value.update({k: body[k] for k in ("startTimeMillis", "endTimeMillis") if k in body})
        return 200, {"value": value}

    def _list_urns(self, body: dict[str, Any]) -> tuple[int, Any]:
        prefix, start, count = f"urn:li:{body['entity']}:", int(body.get("start", 0)), int(body.get("count", 10))
        with closing(sqlite3.connect(self.store)) as db:
            every = [r[0] for r in db.execute("SELECT DISTINCT urn FROM metadata_aspect_v2 ORDER BY urn")]
        matching = [u for u in every if u.startswith(prefix)]
        page = matching[start : start + count]
        return 200, {"value": {"entities": page, "start": start, "count": len(page), "total": len(matching)}}


def _config() -> dict[str, Any]:
    return {
        "noCode": "true",
        "statefulIngestionCapable": True,
        "supportsImpactAnalysis": True,
        "patchCapable": True,
        "datahub": {"serverType": "quickstart"},
        "versions": {"acryldata/datahub": {"version": GMS_VERSION, "commit": "kintsugi-standin"}},
        "telemetry": {"enabledCli": False, "enabledIngestion": False},
    }


def _handler(standin: GmsStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = Request(method, self.path, self.rfile.read(length).decode() if length else "")
            fault = standin.fault
            status: int | None = None
            if fault is not None and fault.applies(request):
                if fault.down:
                    standin.requests.append((method, self.path, 0))
                    standin.go_down()
                    self.close_connection = True
                    return
                time.sleep(fault.delay)
                status = fault.status
            if status is not None:
                payload: Any = {"message": f"stand-in fault: HTTP {status}", "status": status}
            else:
                try:
                    status, payload = standin.answer(request, {k.lower(): v for k, v in self.headers.items()})
                except Exception as exc:  # noqa: BLE001 - a server answers 500, it does not die
                    status, payload = 500, {"message": f"{type(exc).__name__}: {exc}", "status": 500}
            standin.requests.append((method, self.path, status))
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            try:
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a timeout fault): nobody to answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
