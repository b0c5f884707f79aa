"""One onboarded workspace for the tests that only read it (init --yes, then a first run), and a loopback S3."""

from __future__ import annotations

import itertools

import pytest

from onboard_support import NAME, RUN_AT, cli, init_args, weather

_BUCKETS = itertools.count()


@pytest.fixture(scope="session")
def onboarded(tmp_path_factory: pytest.TempPathFactory):
    """From an empty workspace and one parquet file: `kintsugi init ... --yes`, then `kintsugi run`. Read only."""
    from controlplane.workspace import Workspace

    ws = Workspace(tmp_path_factory.mktemp("onboarded") / "ws")
    (ws.root / "data").mkdir(parents=True)
    weather().to_parquet(ws.root / "data" / "seattle-weather.parquet", index=False)
    init = cli(*init_args(str(ws.root / "data" / "seattle-weather.parquet")), workspace=ws.root)
    run = cli("run", NAME, "--now", RUN_AT, workspace=ws.root)
    return ws, init, run


@pytest.fixture
def s3_bucket(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch):
    """A fresh bucket, with the AWS environment pointing at the loopback server: (filesystem, bucket)."""
    from pyarrow import fs as pafs

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    filesystem = pafs.S3FileSystem(
        endpoint_override=s3_endpoint.split("://", 1)[1], scheme="http", region="us-east-1", allow_bucket_creation=True
    )
    bucket = f"onboard-weather-{next(_BUCKETS)}"
    filesystem.create_dir(bucket)
    return filesystem, bucket
