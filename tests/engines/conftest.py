"""One real local Spark session for every Spark test of the run (started on first use, stopped at the end)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from guard.engines.spark import spark_session

    session = spark_session("local[2]", app_name="kintsugi-tests")
    yield session
    session.stop()
