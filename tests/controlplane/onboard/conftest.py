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
def s3_bucket(s3_filesystem):
    """A fresh bucket, with the AWS environment pointing at the loopback server: (filesystem, bucket)."""
    bucket = f"onboard-weather-{next(_BUCKETS)}"
    s3_filesystem.create_dir(bucket)
    return s3_filesystem, bucket
