"""Fixtures for table locations: a real S3-compatible server (moto, server mode) on loopback, a fresh bucket per
test, and a local workspace folder."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from locations_support import LocalBackend, S3Backend

_BUCKETS = itertools.count()


@pytest.fixture
def s3_backend(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> S3Backend:
    """A fresh bucket, with the AWS environment pointing at the loopback server."""
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
    host = s3_endpoint.split("://", 1)[1]
    filesystem = pafs.S3FileSystem(
        endpoint_override=host, scheme="http", region="us-east-1", allow_bucket_creation=True
    )
    bucket = f"kintsugi-test-{next(_BUCKETS)}"
    filesystem.create_dir(bucket)
    return S3Backend(filesystem, bucket)


@pytest.fixture
def local_backend(tmp_path: Path) -> LocalBackend:
    base = tmp_path / "ws"
    base.mkdir()
    return LocalBackend(base)
