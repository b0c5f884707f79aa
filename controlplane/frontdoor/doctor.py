"""`kintsugi doctor`: are the configured backends reachable, authenticated, and answering what the loop needs?

DataHub GMS: reachable (``GET /config``: it is GMS, and which version), authenticated (a token-checked read),
then each read endpoint the adapter uses, probed with a URN that does not exist (404 is an answer). Writes are
not probed — a probe would write. DataHub Lite: the store file. MLflow: a sqlite store is looked at, never
created; a tracking server is asked for a model's aliases through the training package, with one attempt.
Spark: the master of every `engine: spark` pipeline is started or reached and asked to run the guard on its
executors (`profiles.engines.spark.probe_spark`), one line per master. Each check says what it found and, when it
fails, what to do.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata as dist
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from controlplane.datahub.config import GmsConfig, load_gms_config
from controlplane.datahub.gms import GmsMetadata
from controlplane.datahub.lite import LiteMetadata
from controlplane.errors import KintsugiError
from controlplane.workspace import Workspace

__all__ = ["PROBE_URN", "Check", "Diagnosis", "diagnose"]

PROBE_URN = "urn:li:dataset:(urn:li:dataPlatform:kintsugi,doctor.probe,PROD)"
_PROBE_MODEL = "kintsugi-doctor-probe"
_MIN_GMS = (0, 14)
OK, FAIL, SKIP, INFO = "ok", "FAIL", "skip", "info"


@dataclass(frozen=True)
class Check:
    backend: str
    name: str
    status: str  # ok | FAIL | skip | info
    detail: str

    def line(self) -> str:
        return f"  {self.status:<4} {self.name}: {self.detail}"


@dataclass(frozen=True)
class Diagnosis:
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(check.status != FAIL for check in self.checks)

    def lines(self) -> list[str]:
        out: list[str] = []
        backend = None
        for check in self.checks:
            if check.backend != backend:
                backend = check.backend
                out.append(backend)
            out.append(check.line())
        out.append("all backends answer as the loop needs" if self.ok else "problems found: fix the FAIL lines above")
        return out


def diagnose(ws: Workspace) -> Diagnosis:
    return Diagnosis((*_datahub_checks(ws), *_mlflow_checks(ws), *_spark_checks(ws)))


# -- DataHub ---------------------------------------------------------------------------


def _datahub_checks(ws: Workspace) -> list[Check]:
    try:
        config = load_gms_config(ws)
    except KintsugiError as exc:
        return [Check("DataHub", "configuration", FAIL, str(exc))]
    if config is None:
        return [_lite_check(ws)]
    return _gms_checks(config)


def _lite_check(ws: Workspace) -> Check:
    if not ws.datahub_db.exists():
        return Check(
            "DataHub",
            "DataHub Lite",
            OK,
            f"no GMS configured; {ws.datahub_db} will be created by "
            "`kintsugi demo` (set DATAHUB_GMS_URL to use a team's DataHub)",
        )
    lite = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        datasets = len(lite.urns("dataset"))
    except KintsugiError as exc:
        return Check("DataHub", "DataHub Lite", FAIL, str(exc))
    finally:
        lite.close()
    return Check("DataHub", "DataHub Lite", OK, f"{ws.datahub_db} holds {datasets} dataset(s); no GMS configured")


def _gms_checks(config: GmsConfig) -> list[Check]:
    checks = [Check("DataHub", "configured", INFO, config.describe())]
    gms = GmsMetadata(config, read_only=True)
    try:
        checks.append(_reachable(gms))
        if checks[-1].status == OK:
            checks.append(_server_version(gms.server_info))
        if checks[-1].status in (OK, INFO):
            checks.append(_authenticated(gms))
        if checks[-1].status == OK:
            checks.extend(_endpoints(gms))
            checks.append(
                Check(
                    "DataHub",
                    "writes",
                    INFO,
                    "POST /aspects?action=ingestProposalBatch is not probed "
                    "(a probe would write); `kintsugi datahub push --dry-run` exercises the reads",
                )
            )
        else:
            checks.append(Check("DataHub", "endpoints", SKIP, "not checked until the checks above pass"))
    finally:
        gms.close()
    return checks


def _reachable(gms: GmsMetadata) -> Check:
    try:
        gms.probe("answer GET /config", "GET", "/config")
    except KintsugiError as exc:
        return Check("DataHub", "reachable", FAIL, str(exc))
    versions = _gms_version(gms.server_info)
    server = versions.get("version") or "version not reported"
    return Check(
        "DataHub",
        "reachable",
        OK,
        f"GMS {server} (commit {versions.get('commit') or '?'}) answers at "
        f"{gms.location}; client acryl-datahub {dist.version('acryl-datahub')}",
    )


def _gms_version(info: dict[str, Any]) -> dict[str, Any]:
    versions = info.get("versions")
    found = versions.get("acryldata/datahub") if isinstance(versions, dict) else None
    return found if isinstance(found, dict) else {}


def _server_version(info: dict[str, Any]) -> Check:
    """ingestProposalBatch (datahub-project/datahub#10706) and the OpenAPI v3 entity reads need GMS v0.14+."""
    text = str(_gms_version(info).get("version") or "")
    found = re.match(r"v?(\d+)\.(\d+)", text)
    if found is None:
        return Check(
            "DataHub",
            "server version",
            INFO,
            f"GMS reports no parsable version ({text or 'none'}); "
            f"the adapter needs v{_MIN_GMS[0]}.{_MIN_GMS[1]} or later",
        )
    if (int(found[1]), int(found[2])) < _MIN_GMS:
        return Check(
            "DataHub",
            "server version",
            FAIL,
            f"GMS {text} is older than v{_MIN_GMS[0]}.{_MIN_GMS[1]}, "
            "which lacks POST /aspects?action=ingestProposalBatch; upgrade GMS",
        )
    return Check("DataHub", "server version", OK, f"GMS {text} has the endpoints the adapter uses (v0.14 or later)")


def _authenticated(gms: GmsMetadata) -> Check:
    try:
        gms.probe(
            "list datasets (POST /entities?action=listUrns)",
            "POST",
            "/entities?action=listUrns",
            {"entity": "dataset", "start": 0, "count": 1},
        )
    except KintsugiError as exc:
        return Check("DataHub", "authenticated", FAIL, str(exc))
    how = "the token is accepted" if gms.config.token else "GMS answers without a token"
    return Check("DataHub", "authenticated", OK, f"{how} (POST /entities?action=listUrns)")


def _endpoints(gms: GmsMetadata) -> list[Check]:
    probe = quote(PROBE_URN, safe="")
    endpoints = [
        (
            "GET /aspects/{urn}?aspect=&version=",
            "GET",
            f"/aspects/{probe}?aspect=datasetProperties&version=0",
            None,
            "latest and versioned aspects",
        ),
        (
            "GET /openapi/v3/entity/{type}/{urn}/{aspect}",
            "GET",
            f"/openapi/v3/entity/dataset/{probe}/datasetProperties?version=0&systemMetadata=true",
            None,
            "aspects as of an instant",
        ),
        (
            "POST /aspects?action=getTimeseriesAspectValues",
            "POST",
            "/aspects?action=getTimeseriesAspectValues",
            {"urn": PROBE_URN, "entity": "dataset", "aspect": "datasetProfile", "limit": 1},
            "timeseries aspects",
        ),
    ]
    checks = []
    for shown, method, path, body, use in endpoints:
        try:
            status = gms.probe(f"answer {shown}", method, path, body)
        except KintsugiError as exc:
            checks.append(Check("DataHub", shown, FAIL, f"needed for {use}: {exc}"))
            continue
        checks.append(Check("DataHub", shown, OK, f"answers (HTTP {status}); used for {use}"))
    return checks


# -- MLflow ----------------------------------------------------------------------------


def _mlflow_checks(ws: Workspace) -> list[Check]:
    uri = ws.mlflow_uri
    if uri.startswith("sqlite:///"):
        path = Path(uri[len("sqlite:///") :])
        state = "exists" if path.exists() else "will be created by the first run"
        return [
            Check(
                "MLflow",
                "tracking store",
                OK,
                f"sqlite store {path} {state} (set MLFLOW_TRACKING_URI to use a tracking server)",
            )
        ]
    return [
        Check(
            "MLflow",
            "configured",
            INFO,
            f"tracking server {_display(uri)} (from MLFLOW_TRACKING_URI); {_mlflow_bound()}",
        ),
        _mlflow_probe(ws),
    ]


def _mlflow_probe(ws: Workspace) -> Check:
    from controlplane.models.modelstore import open_store, training_errors_mapped

    try:
        with _one_attempt(), training_errors_mapped():
            open_store(ws).aliases(_PROBE_MODEL)
    except KintsugiError as exc:
        return Check("MLflow", "reachable and authenticated", FAIL, str(exc))
    return Check(
        "MLflow",
        "reachable and authenticated",
        OK,
        f"the model registry answers at {_display(ws.mlflow_uri)} (mlflow client {dist.version('mlflow')})",
    )


def _mlflow_bound() -> str:
    retries = os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "7")
    timeout = os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", "120")
    return (
        f"runs retry each MLflow call {retries} time(s) with a {timeout} s timeout "
        "(MLFLOW_HTTP_REQUEST_MAX_RETRIES, MLFLOW_HTTP_REQUEST_TIMEOUT)"
    )


@contextmanager
def _one_attempt() -> Iterator[None]:
    """The doctor asks once, briefly: a dead server should be named in seconds, not after MLflow's retries."""
    saved = {k: os.environ.get(k) for k in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT")}
    os.environ.update({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "10"})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _display(uri: str) -> str:
    """The URI without a user:password part."""
    parts = urlsplit(uri)
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[-1])) if parts.netloc else uri


# -- Spark -----------------------------------------------------------------------------


def _spark_checks(ws: Workspace) -> list[Check]:
    """One line per Spark master the workspace's pipelines use (none without `engine: spark`)."""
    from controlplane.spec import list_specs, load_spec

    masters: dict[str, list[str]] = {}
    for name in list_specs(ws):
        try:
            spec = load_spec(ws, name)
        except KintsugiError:  # a spec that does not parse is `kintsugi run`'s to report, in one line
            continue
        if spec.engine == "spark" and spec.spark_master is not None:
            masters.setdefault(spec.spark_master, []).append(name)
    return [_spark_probe(master, names) for master, names in sorted(masters.items())]


def _spark_probe(master: str, pipelines: list[str]) -> Check:
    from controlplane.runs.engine import acquire_session, release_session
    from profiles.engines.spark import SparkEngineError, probe_spark

    label = f"{master} ({', '.join(pipelines)})"
    try:
        session = acquire_session(master)
    except KintsugiError as exc:
        return Check("Spark", label, FAIL, str(exc))
    try:
        found = probe_spark(session)
    except SparkEngineError as exc:
        return Check("Spark", label, FAIL, str(exc))
    finally:
        release_session(master)
    kind = "Spark Connect" if found["connect"] else "a local session"
    return Check("Spark", label, OK, f"Spark {found['version']} answers ({kind}); its executors run the guard")
