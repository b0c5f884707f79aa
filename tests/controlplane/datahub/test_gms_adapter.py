"""The GMS adapter against the stand-in: the same answers as the Lite adapter, and failures that fail closed."""

from __future__ import annotations

import time

import pytest
from datahub.emitter.mcp import MetadataChangeProposalWrapper as MCP
from datahub.metadata import schema_classes as s

from controlplane.datahub.config import GmsConfig, load_gms_config
from controlplane.datahub.connect import open_metadata
from controlplane.datahub.gms import GmsMetadata
from controlplane.datahub.lite import LiteMetadata
from controlplane.errors import MetadataError
from controlplane.workspace import Workspace
from tests.controlplane.datahub.conftest import TOKEN, configure, free_port
from tests.controlplane.datahub.standin import Fault

DATASET = "urn:li:dataset:(urn:li:dataPlatform:s3,weather-feed/hourly,PROD)"
INCIDENT = "urn:li:incident:kintsugi-test"


def _config(url: str, **overrides: object) -> GmsConfig:
    settings = {"server": url, "token": TOKEN, "timeout_sec": 1.0, "retries": 1, "backoff_sec": 0.01, **overrides}
    return GmsConfig(**settings)  # type: ignore[arg-type]


def _incident(state: str, message: str) -> s.IncidentInfoClass:
    stamp = s.AuditStampClass(time=0, actor="urn:li:corpuser:kintsugi")
    return s.IncidentInfoClass(
        type=s.IncidentTypeClass.FIELD,
        entities=[DATASET],
        created=stamp,
        status=s.IncidentStatusClass(state=state, message=message, lastUpdated=stamp),
    )


# (at_ms, aspects): an incident opened, seen again with the same content, resolved, reopened;
# a dataset's properties; run-event-like timeseries (profiles) at three instants.
WRITES = [
    (
        1000,
        [
            MCP(entityUrn=INCIDENT, aspect=_incident("ACTIVE", "raised")),
            MCP(entityUrn=DATASET, aspect=s.DatasetPropertiesClass(name="weather", customProperties={"a": "1"})),
            MCP(entityUrn=DATASET, aspect=s.DatasetProfileClass(timestampMillis=1000, rowCount=10)),
        ],
    ),
    (2000, [MCP(entityUrn=INCIDENT, aspect=_incident("ACTIVE", "raised"))]),
    (
        3000,
        [
            MCP(entityUrn=INCIDENT, aspect=_incident("RESOLVED", "healed")),
            MCP(entityUrn=DATASET, aspect=s.DatasetProfileClass(timestampMillis=3000, rowCount=30)),
        ],
    ),
    (
        4000,
        [
            MCP(entityUrn=INCIDENT, aspect=_incident("ACTIVE", "again")),
            MCP(entityUrn=DATASET, aspect=s.DatasetPropertiesClass(name="weather", customProperties={"a": "2"})),
            MCP(entityUrn=DATASET, aspect=s.DatasetProfileClass(timestampMillis=4000, rowCount=40)),
        ],
    ),
]


def _answers(port: object) -> dict[str, object]:
    def obj(value: object) -> object:
        return value.to_obj() if value is not None else None  # type: ignore[attr-defined]

    answers: dict[str, object] = {"urns": [port.urns(t) for t in ("dataset", "incident", "mlModel")]}  # type: ignore[attr-defined]
    for urn, cls in (
        (INCIDENT, s.IncidentInfoClass),
        (DATASET, s.DatasetPropertiesClass),
        (DATASET, s.DatasetProfileClass),
        (DATASET, s.SchemaMetadataClass),
    ):
        answers[f"{cls.ASPECT_NAME} latest"] = obj(port.aspect(urn, cls))  # type: ignore[attr-defined]
        answers[f"{cls.ASPECT_NAME} history"] = [obj(v) for v in port.history(urn, cls)]  # type: ignore[attr-defined]
        for at in (999, 1000, 1001, 2500, 3000, 3001, 4001):
            answers[f"{cls.ASPECT_NAME} as of {at}"] = obj(port.aspect(urn, cls, as_of_ms=at))  # type: ignore[attr-defined]
    return answers


def test_every_read_answers_as_the_lite_adapter_does(tmp_path, start_standin):
    gms_store = start_standin(tmp_path / "gms.db")
    lite, gms = LiteMetadata(tmp_path / "lite.db"), GmsMetadata(_config(gms_store.url))
    for at_ms, mcps in WRITES:
        lite.emit(mcps, at_ms)
        gms.emit(mcps, at_ms)
    expected, got = _answers(lite), _answers(gms)
    lite.close()
    gms.close()
    assert got == expected
    assert [i["status"]["state"] for i in got["incidentInfo history"]] == ["ACTIVE", "RESOLVED", "ACTIVE"]  # type: ignore[index]
    assert got["incidentInfo as of 3000"]["status"]["state"] == "ACTIVE"  # type: ignore[index]


def test_a_transient_500_is_retried_and_the_read_succeeds(tmp_path, start_standin):
    standin = start_standin(tmp_path / "gms.db")
    gms = GmsMetadata(_config(standin.url))
    gms.emit([MCP(entityUrn=DATASET, aspect=s.DatasetPropertiesClass(name="weather"))], 1000)
    standin.fault = Fault(status=500, times=1)
    assert gms.aspect(DATASET, s.DatasetPropertiesClass).name == "weather"
    assert [status for _, path, status in standin.requests if path.startswith("/aspects/")] == [500, 200]


@pytest.mark.parametrize(
    "fault, words",
    [
        (Fault(status=500), ["answered HTTP 500 after 2 attempt(s)", "check the health and logs of GMS"]),
        (Fault(status=503), ["answered HTTP 503 after 2 attempt(s)"]),
        (Fault(delay=1.5), ["did not answer within 1 s (2 attempt(s))", "raise timeout_sec"]),
        (Fault(status=403), ["HTTP 403, not authorized", "grant that user the privileges"]),
    ],
)
def test_a_failing_server_fails_closed_naming_server_operation_and_fix(tmp_path, start_standin, fault, words):
    standin = start_standin(tmp_path / "gms.db")
    config = _config(standin.url)
    gms = GmsMetadata(config)
    gms.urns("incident")  # connected
    standin.fault = fault
    started = time.monotonic()
    with pytest.raises(MetadataError) as raised:
        gms.aspect(INCIDENT, s.IncidentInfoClass)
    assert time.monotonic() - started <= config.worst_case_sec
    message = str(raised.value)
    assert message.startswith(f"DataHub GMS at {standin.url} could not read incidentInfo of {INCIDENT}: it ")
    assert all(word in message for word in words), message


def test_a_bad_token_and_a_dead_server_are_named_differently(tmp_path, start_standin):
    standin = start_standin(tmp_path / "gms.db")
    with pytest.raises(
        MetadataError,
        match=r"refused the token given with HTTP 401, not authenticated.*"
        r"set DATAHUB_GMS_TOKEN",
    ):
        GmsMetadata(_config(standin.url, token="wrong")).urns("dataset")
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(
        MetadataError,
        match=r"could not connect \(GET /config\): it is unreachable \(connection "
        r"refused, 2 attempt\(s\)\); check DATAHUB_GMS_URL",
    ):
        GmsMetadata(_config(dead)).urns("dataset")


def test_a_write_is_retried_after_a_500_and_lands_once(tmp_path, start_standin):
    standin = start_standin(tmp_path / "gms.db")
    gms = GmsMetadata(_config(standin.url))
    standin.fault = Fault(status=500, times=1, when=lambda r: "ingestProposal" in r.path)
    gms.emit([MCP(entityUrn=INCIDENT, aspect=_incident("ACTIVE", "raised"))], 1000)
    assert standin.count("ingestProposal") == 2
    assert len(gms.history(INCIDENT, s.IncidentInfoClass)) == 1


def test_read_only_refuses_writes_without_calling_the_server(tmp_path, start_standin):
    standin = start_standin(tmp_path / "gms.db")
    gms = GmsMetadata(_config(standin.url), read_only=True)
    with pytest.raises(MetadataError, match="opened read-only"):
        gms.emit([MCP(entityUrn=DATASET, aspect=s.StatusClass(removed=False))], 1)
    assert standin.requests == []


def test_open_metadata_chooses_gms_from_the_environment_or_the_file_and_lite_otherwise(tmp_path, monkeypatch):
    monkeypatch.delenv("DATAHUB_GMS_URL", raising=False)
    monkeypatch.delenv("DATAHUB_GMS_TOKEN", raising=False)
    ws = Workspace(tmp_path / "ws")
    assert isinstance(open_metadata(ws), LiteMetadata)
    configure(ws, "http://gms.example:8080", token="from-file")
    assert isinstance(open_metadata(ws), GmsMetadata)
    monkeypatch.setenv("DATAHUB_GMS_URL", "https://env.example/gms/")
    monkeypatch.setenv("DATAHUB_GMS_TOKEN", "from-env")
    config = load_gms_config(ws)
    assert (config.server, config.token, config.source) == ("https://env.example/gms", "from-env", "DATAHUB_GMS_URL")
    assert config.timeout_sec == 1.0  # the rest still from the file
    (ws.root / "kintsugi.toml").write_text('[datahub]\nserver = "http://x:8080"\nretries = -1\n')
    with pytest.raises(
        MetadataError, match=r"retries = -1 .* out of range; set retries to an integer between 0 and 10"
    ):
        open_metadata(ws)
    (ws.root / "kintsugi.toml").write_text('[datahub]\nserver = "gms:8080"\n')
    monkeypatch.delenv("DATAHUB_GMS_URL")
    with pytest.raises(MetadataError, match="is not an http"):
        open_metadata(ws)
