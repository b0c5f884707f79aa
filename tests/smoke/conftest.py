"""The headline paths, whole, through the installed `kintsugi` command: run by `make smoke` (KINTSUGI_SMOKE=1),
skipped by `make test`, which covers their pieces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SMOKE = os.environ.get("KINTSUGI_SMOKE") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if SMOKE:
        return
    skip = pytest.mark.skip(reason="a headline path run whole by `make smoke` (KINTSUGI_SMOKE=1)")
    for item in items:
        if Path(str(item.fspath)).parent == Path(__file__).parent:
            item.add_marker(skip)
