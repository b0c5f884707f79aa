"""Fixtures for table locations: a real S3-compatible server (moto, server mode) on loopback, a fresh bucket per
test, and a local workspace folder."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from locations_support import LocalBackend, S3Backend

_BUCKETS = itertools.count()


@pytest.fixture
def s3_backend(s3_filesystem) -> S3Backend:
    """A fresh bucket, with the AWS environment pointing at the loopback server."""
    bucket = f"kintsugi-test-{next(_BUCKETS)}"
    s3_filesystem.create_dir(bucket)
    return S3Backend(s3_filesystem, bucket)


@pytest.fixture
def local_backend(tmp_path: Path) -> LocalBackend:
    base = tmp_path / "ws"
    base.mkdir()
    return LocalBackend(base)
