"""Column lineage a person declares (`kintsugi init | land --column-lineage COLUMN=URN:COLUMN`): written as DataHub's
fineGrainedLineages, read by the gate's governance scan — a feature made from the label's own source column blocks
as `lineage_leakage` — and refused, with nothing written, when it names an upstream or a column it cannot."""

from __future__ import annotations

from datahub.metadata import schema_classes as s

from controlplane.datahub.column_lineage import ColumnEdge, ColumnRef, read_column_lineage
from controlplane.datahub.lite import LiteMetadata
from controlplane.workspace import Workspace
from tests.support import champion

from onboard_support import NAME, RUN_AT, UPSTREAM, cli, copy_ws, init_args, weather

AT = "2013-02-01T06:00:00+00:00"


def _table(ws: Workspace) -> str:
    return f"urn:li:dataset:(urn:li:dataPlatform:file,{ws.rel(ws.root / 'data' / f'{NAME}.parquet')},PROD)"


def _edges(ws: Workspace, urn: str) -> tuple[ColumnEdge, ...]:
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        return read_column_lineage(store, urn)
    finally:
        store.close()


def test_a_feature_declared_from_the_labels_source_column_blocks_as_lineage_leakage(tmp_path):
    ws = Workspace(tmp_path / "ws")
    (ws.root / "data").mkdir(parents=True)
    data = ws.root / "data" / f"{NAME}.parquet"
    weather().to_parquet(data, index=False)
    shared = f"{UPSTREAM}:TMAX"
    code, _, err = cli(
        *init_args(str(data), "--column-lineage", f"temp_min={shared}", "--column-lineage", f"temp_max={shared}"),
        workspace=ws.root,
    )
    assert code == 0, err
    table = _table(ws)
    assert _edges(ws, table) == (
        ColumnEdge("temp_max", ColumnRef(UPSTREAM, "TMAX")),
        ColumnEdge("temp_min", ColumnRef(UPSTREAM, "TMAX")),
    )
    code, out, _ = cli("run", NAME, "--now", RUN_AT, workspace=ws.root)
    assert code == 1, out
    assert (
        "governance: feature temp_min is made from the same column as the label temp_max: "
        f"TMAX of {UPSTREAM} (DataHub's column lineage)"
    ) in out
    assert champion(ws, NAME) is None


def test_column_lineage_naming_an_upstream_that_is_not_declared_is_refused_before_anything_is_written(tmp_path):
    ws = Workspace(tmp_path / "ws")
    (ws.root / "data").mkdir(parents=True)
    data = ws.root / "data" / f"{NAME}.parquet"
    weather().to_parquet(data, index=False)
    other = "urn:li:dataset:(urn:li:dataPlatform:postgres,db.other,PROD)"
    code, _, err = cli(*init_args(str(data), "--column-lineage", f"wind={other}:speed"), workspace=ws.root)
    assert code == 2 and "names an upstream that is not an --upstream" in err, err
    assert f"name {other} with --upstream too" in err
    assert not ws.datahub_db.exists() and not (ws.pipelines / f"{NAME}.yaml").exists()


def test_land_records_column_lineage_for_the_columns_it_names_and_keeps_the_rest(onboarded, tmp_path):
    ws = copy_ws(onboarded[0], tmp_path / "ws")
    table = _table(ws)
    batch = tmp_path / "batch.parquet"
    weather("2013-01-01", "2013-01-08").to_parquet(batch, index=False)
    for column, source in (("precipitation", "PRCP"), ("wind", "AWND")):
        code, _, err = cli(
            "land",
            NAME,
            str(batch),
            "--now",
            AT,
            "--column-lineage",
            f"{column}={UPSTREAM}:{source}",
            workspace=ws.root,
        )
        assert code == 0, err
    assert _edges(ws, table) == (
        ColumnEdge("precipitation", ColumnRef(UPSTREAM, "PRCP")),
        ColumnEdge("wind", ColumnRef(UPSTREAM, "AWND")),
    )
    store = LiteMetadata(ws.datahub_db, read_only=True)
    try:
        lineage = store.aspect(table, s.UpstreamLineageClass)
    finally:
        store.close()
    assert [u.dataset for u in lineage.upstreams] == [UPSTREAM]  # the dataset-level upstream kept, once
    code, _, err = cli("land", NAME, str(batch), "--column-lineage", "nope=" + UPSTREAM + ":X", workspace=ws.root)
    assert code == 2 and "'nope', not a column of" in err, err
