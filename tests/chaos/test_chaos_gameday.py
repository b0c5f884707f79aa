"""`kintsugi chaos inject` and `chaos revert` on a real workspace: the exact bytes come back."""

from __future__ import annotations

import pyarrow.parquet as pq
from datahub.metadata import schema_classes as s

from controlplane.datahub.connect import metadata_session
from controlplane.frontdoor.services import guard as guard_pipeline
from demo.seed import PIPELINE, WEATHER
from guard.kinds import FindingKind
from remediations.sandbox import content_hash
from tests.chaos.helpers import GUARD_NOW_MS, kintsugi


def test_inject_then_revert_restores_the_exact_bytes(demo_copy):
    ws, _ = demo_copy
    data = ws.data / "eta_features.parquet"
    # as another producer writes it (zstd, small row groups): a re-serialized table would not match these bytes
    pq.write_table(pq.read_table(data), data, compression="zstd", row_group_size=4000)
    before = content_hash(data)
    code, out, _ = kintsugi(
        "chaos",
        "inject",
        "unit_km_to_mi",
        "--pipeline",
        PIPELINE,
        "--workspace",
        str(ws.root),
        "--magnitude",
        "0.5",
        "--rows",
        "window:event_ts",
        "--seed",
        "4",
    )
    assert code == 0, out
    assert out.splitlines()[0] == (
        "injected unit_km_to_mi (magnitude 0.5, rows window:event_ts, seed 4) into "
        f"delivery-eta: {len(_rows(ws)) // 2} cells corrupted"
    )
    assert content_hash(data) != before
    assert (ws.root / "chaos" / PIPELINE / "original.parquet").is_file()
    code, out, _ = kintsugi("chaos", "revert", "--pipeline", PIPELINE, "--workspace", str(ws.root))
    assert code == 0
    assert out.strip() == f"reverted unit_km_to_mi on delivery-eta: {data} is back to {before}"
    assert content_hash(data) == before
    assert not (ws.root / "chaos" / PIPELINE).exists()


def test_one_injection_at_a_time_and_nothing_to_revert(demo_copy):
    ws, _ = demo_copy
    args = ("--pipeline", PIPELINE, "--workspace", str(ws.root))
    assert kintsugi("chaos", "inject", "null_limit", *args)[0] == 0
    code, _, err = kintsugi("chaos", "inject", "duplicate_load", *args)
    assert (code, err) == (
        2,
        "error: chaos scenario 'null_limit' is already injected into pipeline 'delivery-eta'; "
        "revert it first with `kintsugi chaos revert --pipeline delivery-eta`\n",
    )
    assert kintsugi("chaos", "revert", *args)[0] == 0
    code, _, err = kintsugi("chaos", "revert", *args)
    assert (code, err) == (
        2,
        f"error: no chaos injection is active on pipeline 'delivery-eta' in {ws.root}; "
        "inject one with `kintsugi chaos inject SCENARIO --pipeline delivery-eta`\n",
    )


def test_a_failed_injection_leaves_no_trace(demo_copy):
    ws, _ = demo_copy
    data = ws.data / "eta_features.parquet"
    before = content_hash(data)
    code, _, err = kintsugi(
        "chaos",
        "inject",
        "null_limit",
        "--pipeline",
        PIPELINE,
        "--workspace",
        str(ws.root),
        "--rows",
        "window:no_such_column",
    )
    assert code == 2 and "row window over column 'no_such_column'" in err
    assert content_hash(data) == before and not (ws.root / "chaos" / PIPELINE).exists()


def test_unknown_scenario_exits_2_naming_the_known_ones(demo_copy):
    ws, _ = demo_copy
    code, _, err = kintsugi("chaos", "inject", "meteor", "--pipeline", PIPELINE, "--workspace", str(ws.root))
    assert code == 2 and err.startswith("error: unknown chaos scenario 'meteor'; use one of: ")


def test_metadata_injection_is_undone_by_revert(demo_copy):
    ws, _ = demo_copy
    args = ("--pipeline", PIPELINE, "--workspace", str(ws.root))
    assert kintsugi("chaos", "inject", "upstream_deprecated", *args)[0] == 0
    report = guard_pipeline(ws, PIPELINE, None, GUARD_NOW_MS)
    assert [(f.kind, f.params["upstream"]) for f in report.findings] == [(FindingKind.UPSTREAM_DEPRECATED, WEATHER)]
    code, out, _ = kintsugi("chaos", "revert", *args)
    assert code == 0 and out.strip().endswith("; 1 DataHub aspect(s) restored")
    with metadata_session(ws, read_only=True) as metadata:
        assert metadata.aspect(WEATHER, s.DeprecationClass).deprecated is False
    assert guard_pipeline(ws, PIPELINE, None, GUARD_NOW_MS).findings == ()


def _rows(ws):
    import pandas as pd

    return pd.read_parquet(ws.data / "eta_features.parquet", columns=["order_id"])
