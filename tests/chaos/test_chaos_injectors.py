"""Each injector is deterministic and triggers its declared finding on the demo table, through the real guard.

The guard runs alone (read-only, `guard_pipeline`) against the shared demo workspace; metadata-side
scenarios write DataHub, so they run on a private copy. Scenarios the guard misses today are strict
xfails naming the weakness: when the guard learns them, the xfail turns into a failure to update here.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pandas as pd
import pytest

from chaos.drill.demo_tasks import inject
from chaos.failures.catalog import get_scenario
from chaos.failures.scenarios import DEMO_SCENARIOS
from controlplane.frontdoor.services import guard as guard_pipeline
from controlplane.spec import load_spec
from demo.seed import PIPELINE
from guard.findings import Verdict
from tests.chaos.helpers import GUARD_NOW_MS

TABLE = [s.name for s in DEMO_SCENARIOS if s.table is not None]
UPSTREAM = [s.name for s in DEMO_SCENARIOS if s.upstream_injector is not None]
GUARD_MISSES: dict[str, str] = {  # scenario -> the guard weakness that lets it through
    "gaussian_noise": "noise of 0.5 sd widens the spread by 12%: inside the natural variation of past batches "
    "in a day's batch, and a whole table of several batches is judged for named conversions only",
}
ONE_BATCH = {"scale_shift"}


def _bytes(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


@pytest.mark.parametrize("name", TABLE)
def test_same_seed_same_bytes(name, demo_clean, demo_contract):
    scenario = get_scenario(name)
    first = scenario.table(demo_clean, scenario.target(demo_contract, 3))
    second = scenario.table(demo_clean, scenario.target(demo_contract, 3))
    assert hashlib.sha256(_bytes(first.frame)).digest() == hashlib.sha256(_bytes(second.frame)).digest()
    assert first.corrupted_cells + first.rows_added + (0 if first.removed is None else int(first.removed.sum())) > 0
    assert _bytes(first.frame) != _bytes(demo_clean)


def test_another_seed_picks_other_rows(demo_clean, demo_contract):
    scenario = get_scenario("null_limit")
    one = scenario.table(demo_clean, scenario.target(demo_contract, 1)).cells["prep_time_min"]
    two = scenario.table(demo_clean, scenario.target(demo_contract, 2)).cells["prep_time_min"]
    assert one.sum() == two.sum() == round(0.1 * len(demo_clean)) and not np.array_equal(one, two)


def test_the_clean_demo_table_is_clean(demo_run, demo_clean, tmp_path):
    ws, _ = demo_run
    report = guard_pipeline(ws, PIPELINE, _written(demo_clean, tmp_path), GUARD_NOW_MS)
    assert report.findings == ()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=GUARD_MISSES[n], strict=True)) if n in GUARD_MISSES else n
        for n in TABLE
    ],
)
def test_table_injector_triggers_its_finding(name, demo_run, demo_clean, demo_contract, tmp_path):
    """Injected into the whole table, given to the guard as one batch (`guard --data`); a rescale no unit names is
    injected into the newest daily batch only: over several batches at once only named conversions block."""
    ws, _ = demo_run
    scenario = get_scenario(name)
    frame = demo_clean
    if name in ONE_BATCH:
        frame = demo_clean[demo_clean["event_ts"] > demo_clean["event_ts"].max() - pd.Timedelta(days=1)]
    injected = scenario.table(frame.reset_index(drop=True), scenario.target(demo_contract, 1))
    report = guard_pipeline(ws, PIPELINE, _written(injected.frame, tmp_path), GUARD_NOW_MS)
    said = [f"{f.kind.value} on {f.column}" for f in report.findings]
    assert any(scenario.localizes(f) for f in report.findings), f"expected {scenario.kind.value}, got {said}"


@pytest.mark.parametrize("name", UPSTREAM)
def test_upstream_injector_triggers_its_finding(name, demo_copy):
    ws, _ = demo_copy
    scenario = get_scenario(name)
    inject(ws, load_spec(ws, PIPELINE), scenario, 1, GUARD_NOW_MS - 300_000)
    report = guard_pipeline(ws, PIPELINE, None, GUARD_NOW_MS)
    assert report.verdict is Verdict.BLOCKED
    assert [f.kind for f in report.findings] == [scenario.kind]
    assert report.findings[0].params["upstream"] == scenario.upstream


def _written(frame: pd.DataFrame, tmp_path) -> str:
    path = tmp_path / "injected.parquet"
    frame.to_parquet(path, index=False)
    return path
