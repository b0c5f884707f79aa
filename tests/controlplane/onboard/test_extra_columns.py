"""A batch arriving with columns its contract does not name trains on the contract's own columns: the extra columns
are a warning (named in the findings and the passport), never a block, and never reach the model."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq

from controlplane.runs.journal import list_runs
from tests.support import champion
from training.registry import ModelStore

from onboard_support import NAME, UPSTREAM, cli, copy_ws, weather

LAND_AT, RUN_AT = "2013-02-01T06:00:00+00:00", "2013-02-01T07:00:00+00:00"
EXTRA = [f"extra_{i:02d}" for i in range(50)]


def test_fifty_columns_the_contract_does_not_name_warn_and_the_run_trains_on_the_contract(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    batch = weather("2013-01-01", "2013-02-01")
    rng = np.random.default_rng(0)
    wide = batch.assign(**{name: rng.normal(size=len(batch)) for name in EXTRA})
    path = tmp_path / "january.parquet"
    wide.to_parquet(path, index=False)
    code, _, err = cli("land", NAME, str(path), "--now", LAND_AT, "--upstream", UPSTREAM, workspace=ws.root)
    assert code == 0, err
    code, out, err = cli("run", NAME, "--now", RUN_AT, "--json", workspace=ws.root)
    assert code == 0 and "Traceback" not in err, out + err
    (run,) = [r for r in list_runs(ws) if r.kind == "run" and r.now_ms > 1359600000000]
    assert run.status.value not in ("blocked", "failed"), run.outcome
    assert champion(ws, NAME) == 2  # trained, and promoted: a warning on columns never read asks for no person
    code, shown, err = cli("passport", "show", NAME, "2", workspace=ws.root)
    assert code == 0, err
    body = json.loads(shown)["body"]
    unexpected = [f for f in body["guard_at_detect"]["findings"] if f["kind"] == "column_unexpected"]
    assert [(f["severity"], f["observed"]["count"]) for f in unexpected] == [("warn", 50)]  # one grouped finding
    assert set(unexpected[0]["observed"]["columns"]) <= set(EXTRA) and unexpected[0]["observed"]["columns"]
    assert body["verdict"]["verdict"] == "APPROVED"
    assert any("column_unexpected" in reason for reason in body["verdict"]["reasons"])  # said, not silenced
    assert set(EXTRA) <= set(pq.read_schema(ws.path("data/seattle-weather.parquet")).names)  # the table holds them
    model = ModelStore(ws.mlflow_uri, ws.artifacts).load_model(NAME, 2)
    assert set(model.feature_names_in_) == {"precipitation", "temp_min", "wind", "weather"}  # the model does not
