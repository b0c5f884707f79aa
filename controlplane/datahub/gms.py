"""DataHub GMS adapter of the metadata port, on acryl-datahub's own client (DataHubGraph and its REST emitter).

Endpoints it needs (all JSON; every call but /config carries ``Authorization: Bearer <token>``):

| port operation | GMS endpoint |
|---|---|
| first use | ``GET /config`` (``noCode: "true"`` proves it is GMS, not the frontend) |
| ``emit`` | ``POST /aspects?action=ingestProposalBatch`` ``{"proposals": [...], "async": "false"}`` |
| ``aspect`` (versioned, latest) | ``GET /aspects/{urn}?aspect={name}&version=0`` |
| ``history`` (versioned) | ``GET /aspects/{urn}?aspect={name}&version=N``, N = 1, 2, ... until 404, then version 0 |
| ``aspect`` (versioned, ``as_of_ms``) | ``GET /openapi/v3/entity/{type}/{urn}/{name}?version=N&systemMetadata=true`` |
| ``aspect`` / ``history`` (timeseries) | ``POST /aspects?action=getTimeseriesAspectValues`` |
| ``urns`` | ``POST /entities?action=listUrns`` ``{"entity", "start", "count"}`` |

Semantics kept from the Lite adapter: ``emit(..., at_ms)`` stamps ``systemMetadata.lastObserved`` (and the
property ``kintsugi.atMs``, which GMS keeps with the version it created, while lastObserved moves on no-op
re-writes); ``as_of_ms`` reads see what was written strictly before that instant — versioned aspects by that
stamp, timeseries aspects by ``timestampMillis`` (``endTimeMillis = as_of_ms - 1``, inclusive on GMS).
GMS numbers versions 0 = latest, 1 = oldest, so ``history`` is versions 1..N then 0.

Every failure becomes a MetadataError naming the server, the operation and what to check — here and
nowhere else (``datahub_errors``). Idempotent calls (all of them: writes are upserts of aspects whose URNs
derive from keys) are retried by the client's urllib3 policy, tuned from the configuration.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import socket
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import requests
import urllib3.exceptions as u3
from datahub.configuration.common import ConfigurationError, GraphError
from datahub.emitter.mcp import MetadataChangeProposalWrapper
from datahub.emitter.rest_emitter import EmitMode
from datahub.emitter.serialization_helper import post_json_transform
from datahub.ingestion.graph.client import DataHubGraph
from datahub.ingestion.graph.config import ClientMode, DatahubClientConfig
from datahub.metadata.schema_classes import SystemMetadataClass, _Aspect
from datahub.utilities.urns.urn import guess_entity_type

from controlplane.datahub.config import GmsConfig
from controlplane.datahub.port import AspectT
from controlplane.errors import MetadataError

__all__ = ["AT_MS_PROPERTY", "GmsMetadata", "datahub_errors", "is_timeseries"]

AT_MS_PROPERTY = "kintsugi.atMs"
_PAGE = 1000
_TIMESERIES_LIMIT = 10000
_MAX_VERSIONS = 10000
_DETAIL = 240
_THIRD_PARTY: tuple[type[BaseException], ...] = (
    requests.RequestException,
    u3.HTTPError,
    GraphError,
    ConfigurationError,
    ValueError,
    KeyError,
    TypeError,
)


def is_timeseries(aspect_class: type[_Aspect]) -> bool:
    return getattr(aspect_class, "ASPECT_TYPE", "default") == "timeseries"


class GmsMetadata:
    """The metadata port on a DataHub GMS. Connects on first use, so opening it never fails on the network."""

    def __init__(self, config: GmsConfig, *, read_only: bool = False) -> None:
        self.location = config.server
        self.config = config
        self.read_only = read_only
        self._graph: DataHubGraph | None = None
        self.server_info: dict[str, Any] = {}

    # -- the port ------------------------------------------------------------------------

    def emit(self, mcps: Sequence[MetadataChangeProposalWrapper], at_ms: int | None = None) -> None:
        self.emit_stamped([(mcp, at_ms) for mcp in mcps])

    def emit_stamped(self, items: Sequence[tuple[MetadataChangeProposalWrapper, int | None]]) -> None:
        """Write aspects, each stamped with its own instant; one batch request per chunk."""
        if self.read_only:
            raise MetadataError(
                f"DataHub GMS at {self.location} was opened read-only (dry-run)", "run with a policy that may write"
            )
        if not items:
            return
        stamped = [_stamped(mcp, at_ms) for mcp, at_ms in items]
        names = sorted({mcp.aspectName or "?" for mcp in stamped})
        with self._call(f"write {', '.join(names)} ({len(stamped)} aspects)"):
            self._client().emit_mcps(stamped, emit_mode=EmitMode.SYNC_PRIMARY)

    def aspect(self, urn: str, aspect_class: type[AspectT], as_of_ms: int | None = None) -> AspectT | None:
        name = aspect_class.ASPECT_NAME
        if is_timeseries(aspect_class):
            end = None if as_of_ms is None else as_of_ms - 1
            found = self._timeseries(urn, aspect_class, end_ms=end, limit=1)
            return found[0] if found else None
        if as_of_ms is None:
            with self._call(f"read {name} of {urn}"):
                return self._client().get_aspect(urn, aspect_class)
        before = [value for stamp, value in self._stamped_versions(urn, aspect_class) if stamp < as_of_ms]
        return before[-1] if before else None

    def history(self, urn: str, aspect_class: type[AspectT]) -> list[AspectT]:
        """Every recorded version, oldest first: GMS versions 1..N, then version 0 (the latest)."""
        if is_timeseries(aspect_class):
            return list(reversed(self._timeseries(urn, aspect_class, end_ms=None, limit=_TIMESERIES_LIMIT)))
        name = aspect_class.ASPECT_NAME
        with self._call(f"read the versions of {name} of {urn}"):
            graph = self._client()
            latest = graph.get_aspect(urn, aspect_class)
            if latest is None:
                return []
            older: list[AspectT] = []
            for version in range(1, _MAX_VERSIONS):
                value = graph.get_aspect(urn, aspect_class, version=version)
                if value is None:
                    return [*older, latest]
                older.append(value)
        raise MetadataError(
            f"{name} of {urn} has more than {_MAX_VERSIONS} versions on {self.location}",
            "apply a version retention policy on GMS",
        )

    def urns(self, entity_type: str) -> list[str]:
        found: list[str] = []
        with self._call(f"list the {entity_type} entities"):
            for start in itertools.count(0, _PAGE):
                value = self._post(
                    "/entities?action=listUrns", {"entity": entity_type, "start": start, "count": _PAGE}
                )["value"]
                page = value.get("entities") or []
                found.extend(page)
                if len(page) < _PAGE or start + len(page) >= int(value.get("total", 0)):
                    break
        return sorted(set(found))

    def close(self) -> None:
        if self._graph is not None:
            self._graph.close()
        self._graph = None

    # -- beyond the port: what `kintsugi doctor` asks -------------------------------------

    def probe(self, operation: str, method: str, path: str, body: dict[str, Any] | None = None) -> int:
        """One request; its HTTP status (404 is an answer). Errors other than 404 raise MetadataError."""
        with self._call(operation):
            response = self._client().session.request(method, self.location + path, json=body)
            if response.status_code != 404:
                response.raise_for_status()
            return int(response.status_code)

    # -- plumbing ------------------------------------------------------------------------

    def _client(self) -> DataHubGraph:
        if self._graph is None:
            with self._call("connect (GET /config)"):
                graph = DataHubGraph(
                    DatahubClientConfig(
                        server=self.config.server,
                        token=self.config.token,
                        timeout_sec=self.config.timeout_sec,
                        retry_max_times=self.config.retries,
                        openapi_ingestion=False,
                        client_mode=ClientMode.SDK,
                        datahub_component="kintsugi",
                    )
                )
                _tune_retries(graph.session, self.config)
                response = graph.session.get(f"{self.location}/config")
                response.raise_for_status()
                info = response.json()
            if not isinstance(info, dict) or info.get("noCode") != "true":
                graph.close()
                raise MetadataError(
                    f"{self.location} answered /config, but not as DataHub GMS",
                    "point DATAHUB_GMS_URL at GMS (usually http://<host>:8080, or "
                    "<frontend>/api/gms), not at the DataHub web frontend",
                )
            self._graph, self.server_info = graph, info
        return self._graph

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self._client().session.post(self.location + path, json=body)
        response.raise_for_status()
        found: dict[str, Any] = response.json()
        return found

    def _timeseries(self, urn: str, aspect_class: type[AspectT], *, end_ms: int | None, limit: int) -> list[AspectT]:
        """Values newest first (GMS sorts by timestampMillis, descending), at or before `end_ms`."""
        name = aspect_class.ASPECT_NAME
        body: dict[str, Any] = {"urn": urn, "entity": guess_entity_type(urn), "aspect": name, "limit": limit}
        if end_ms is not None:
            body["endTimeMillis"] = end_ms
        with self._call(f"read the {name} timeseries of {urn}"):
            values = self._post("/aspects?action=getTimeseriesAspectValues", body)["value"].get("values") or []
            return [aspect_class.from_obj(post_json_transform(json.loads(v["aspect"]["value"]))) for v in values]

    def _stamped_versions(self, urn: str, aspect_class: type[AspectT]) -> list[tuple[int, AspectT]]:
        """(instant written, value) of every version, oldest first, from the OpenAPI v3 aspect read."""
        name = aspect_class.ASPECT_NAME
        path = f"/openapi/v3/entity/{guess_entity_type(urn)}/{quote(urn, safe='')}/{name}"
        with self._call(f"read the dated versions of {name} of {urn}"):
            session = self._client().session

            def version(number: int) -> tuple[int, AspectT] | None:
                params: dict[str, int | str] = {"version": number, "systemMetadata": "true"}
                response = session.get(self.location + path, params=params)
                if response.status_code == 404:
                    return None
                response.raise_for_status()
                return _dated(response.json(), aspect_class)

            latest = version(0)
            if latest is None:
                return []
            older = list(itertools.takewhile(lambda v: v is not None, map(version, range(1, _MAX_VERSIONS))))
        return [*older, latest]  # type: ignore[list-item]

    @contextmanager
    def _call(self, operation: str) -> Iterator[None]:
        with datahub_errors(self.config, operation):
            yield


@contextmanager
def datahub_errors(config: GmsConfig, operation: str) -> Iterator[None]:
    """The one place acryl-datahub's, requests' and urllib3's errors become MetadataError."""
    try:
        yield
    except MetadataError:
        raise
    except _THIRD_PARTY as exc:
        what, fix = _explain(exc, config)
        raise MetadataError(f"DataHub GMS at {config.server} could not {operation}: it {what}", fix) from exc


def _explain(exc: BaseException, config: GmsConfig) -> tuple[str, str]:
    response = _response_of(exc)
    status = response.status_code if response is not None else None
    tries = f"{config.retries + 1} attempt(s)"
    if status in (401, 403):
        return _auth_failure(status, response, config)
    if status is not None and (status >= 500 or status == 429):
        return (
            f"answered HTTP {status} after {tries}{_server_says(response)}",
            f"check the health and logs of GMS at {config.server}; retry once it answers again",
        )
    if status is not None:
        return (
            f"refused the request with HTTP {status}{_server_says(response)}",
            "check that this GMS version supports the request (`kintsugi doctor` shows its version)",
        )
    unreachable = _unreachable(exc)
    if unreachable:
        return (
            f"is unreachable ({unreachable}, {tries})",
            f"check {config.source} and that GMS is running there: curl {config.server}/config",
        )
    if _caused_by(exc, (requests.Timeout, u3.TimeoutError)):
        return (
            f"did not answer within {config.timeout_sec:g} s ({tries})",
            "check the load of GMS and the network to it, or raise timeout_sec in [datahub] of kintsugi.toml",
        )
    if _caused_by(exc, (requests.ConnectionError, u3.ProtocolError, ConnectionError)):
        return (
            f"dropped the connection ({tries})",
            f"check {config.source} and that GMS is running there: curl {config.server}/config",
        )
    if isinstance(exc, (ValueError, KeyError, TypeError, GraphError)):
        return (
            f"answered with something that is not the DataHub response expected ({_short(exc)})",
            "check that the address is GMS and that its version matches acryl-datahub (`kintsugi doctor`)",
        )
    return f"failed ({_short(exc)})", f"check {config.source} and the GMS logs"


def _auth_failure(status: int, response: requests.Response | None, config: GmsConfig) -> tuple[str, str]:
    if status == 401:
        given = "the token given" if config.token else "no token"
        fix = (
            "set DATAHUB_GMS_TOKEN (or token in [datahub] of kintsugi.toml) to a valid personal access "
            "token of this GMS (DataHub UI: Settings > Access Tokens)"
        )
        return f"refused {given} with HTTP 401, not authenticated{_server_says(response)}", fix
    fix = (
        "grant that user the privileges to read and edit these entities (a DataHub policy), "
        "or use a token of a user who has them"
    )
    return f"refused the token's user with HTTP 403, not authorized{_server_says(response)}", fix


def _unreachable(exc: BaseException) -> str | None:
    """Why no connection could be made at all, or None. (urllib3's NewConnectionError is a ConnectTimeoutError.)"""
    if _caused_by(exc, (u3.NameResolutionError, socket.gaierror)):
        return "host name not found"
    if _caused_by(exc, (ConnectionRefusedError,)):
        return "connection refused"
    if _caused_by(exc, (u3.NewConnectionError,)) and not _caused_by(exc, (socket.timeout,)):
        return "no connection"
    return None


def _response_of(exc: BaseException) -> requests.Response | None:
    for link in _chain(exc):
        response = getattr(link, "response", None)
        if isinstance(response, requests.Response):
            return response
    return None


def _caused_by(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    return any(isinstance(link, kinds) for link in _chain(exc))


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """The exception, its causes, and the exceptions wrapped in their args (requests wraps urllib3's)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        link = todo.pop(0)
        if id(link) in seen:
            continue
        seen.add(id(link))
        yield link
        todo.extend(e for e in (link.__cause__, link.__context__, getattr(link, "reason", None)) if e is not None)
        todo.extend(a for a in link.args if isinstance(a, BaseException))


def _server_says(response: requests.Response | None) -> str:
    if response is None:
        return ""
    try:
        body = response.json()
        message = body.get("message") or body.get("error") if isinstance(body, dict) else None
    except ValueError:
        message = response.text
    text = " ".join(str(message or "").split())
    return f" (GMS said: {text[:_DETAIL]})" if text else ""


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= _DETAIL else text[: _DETAIL - 3] + "..."


def _stamped(mcp: MetadataChangeProposalWrapper, at_ms: int | None) -> MetadataChangeProposalWrapper:
    if at_ms is None:
        return mcp
    system = SystemMetadataClass(lastObserved=at_ms, properties={AT_MS_PROPERTY: str(at_ms)})
    return dataclasses.replace(mcp, systemMetadata=system)


def _dated(document: dict[str, Any], aspect_class: type[AspectT]) -> tuple[int, AspectT]:
    system = document.get("systemMetadata") or {}
    stamp = (system.get("properties") or {}).get(AT_MS_PROPERTY) or system.get("lastObserved")
    if stamp is None:
        raise ValueError(f"version of {aspect_class.ASPECT_NAME} without systemMetadata.lastObserved")
    return int(stamp), aspect_class.from_obj(post_json_transform(document["value"]))


def _tune_retries(session: requests.Session, config: GmsConfig) -> None:
    """The client's own urllib3 retry policy, with this configuration's count and backoff."""
    adapter = session.get_adapter("http://gms")
    retry = adapter.max_retries.new(  # type: ignore[attr-defined]
        total=config.retries,
        backoff_factor=config.backoff_sec,
        backoff_max=config.backoff_max_sec,
    )
    for prefix in ("http://", "https://"):
        session.get_adapter(prefix + "gms").max_retries = retry  # type: ignore[attr-defined]
