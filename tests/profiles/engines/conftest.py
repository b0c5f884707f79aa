"""The run's real local Spark session, for every Spark test: started on first use, and started again when a test
stopped it (the Spark Connect tests must, since the client refuses to start beside a classic session)."""

from __future__ import annotations

import pytest


@pytest.fixture
def spark():
    from profiles.engines.spark import spark_session

    return spark_session("local[2]", app_name="kintsugi-tests")  # the running session, or a new one
