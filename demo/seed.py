"""Seed the delivery estate into a workspace: data, pipeline spec, contract, and DataHub metadata.

One field of an upstream carries a glossary term that marks it PII (`PII_FIELD`): the couriers' id, which no model
trains on, so the governance scan notes it and the trust score shows the deduction."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Callable

import pandas as pd

from controlplane.datahub.classifications import field_marker_mcps
from controlplane.datahub.connect import metadata_session
from controlplane.datahub.contracts import contract_mcps
from controlplane.datahub.datasets import SchemaColumn, dataset_mcps, profile_mcps
from controlplane.datahub.port import AspectWrite
from controlplane.documents.odcs import parse_odcs
from controlplane.models.modelstore import open_store
from controlplane.runs.identity import establish_identity
from controlplane.spec import load_spec
from controlplane.stages.kept_reference import establish
from controlplane.stages.pin import pin_table
from controlplane.workspace import Workspace
from demo.feature_tables import data_text, platform_of, write_table
from demo.generate import generate_cancel_features, generate_eta_features

__all__ = [
    "seed_estate",
    "write_feature_table",
    "FEATURE_TABLE",
    "UPSTREAMS",
    "PIPELINE",
    "INITIAL_DAYS",
    "CANCEL_PIPELINE",
    "CANCEL_TABLE",
    "TABLES",
    "PII_FIELD",
]

PIPELINE = "delivery-eta"
FEATURE_TABLE = "urn:li:dataset:(urn:li:dataPlatform:file,delivery.eta_features,PROD)"
CANCEL_PIPELINE = "cancel-risk"
CANCEL_TABLE = "urn:li:dataset:(urn:li:dataPlatform:file,delivery.cancel_features,PROD)"
ORDERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,delivery.public.orders,PROD)"
COURIERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,delivery.public.couriers,PROD)"
WEATHER = "urn:li:dataset:(urn:li:dataPlatform:s3,weather-feed/hourly,PROD)"
UPSTREAMS = (ORDERS, COURIERS, WEATHER)
PII_FIELD = (COURIERS, "courier_id", "urn:li:glossaryTerm:Classification.PII")  # dataset, field, term
INITIAL_DAYS = 30
_OWNER = "urn:li:corpGroup:delivery-data"
_UPSTREAM_SCHEMAS = {
    ORDERS: (
        "orders",
        "Orders as placed, with pickup/drop-off distance and restaurant prep time",
        [
            ("order_id", "string"),
            ("created_at", "timestamp"),
            ("distance_km", "number"),
            ("prep_time_min", "number"),
            ("delivered_at", "timestamp"),
        ],
    ),
    COURIERS: (
        "couriers",
        "Courier fleet: vehicle and current load",
        [("courier_id", "string"), ("vehicle_type", "string"), ("current_load", "integer")],
    ),
    WEATHER: (
        "weather_hourly",
        "Hourly rainfall per delivery zone",
        [("hour_ts", "timestamp"), ("zone", "string"), ("rain_mm", "number")],
    ),
}


@dataclass(frozen=True)
class DemoTable:
    pipeline: str
    urn: str
    name: str
    description: str
    generate: Callable[..., pd.DataFrame]

    @property
    def contract_file(self) -> str:
        return f"{self.name}.odcs.yaml"


TABLES = (
    DemoTable(
        PIPELINE,
        FEATURE_TABLE,
        "eta_features",
        "Delivery ETA features and label, one row per delivered order",
        generate_eta_features,
    ),
    DemoTable(
        CANCEL_PIPELINE,
        CANCEL_TABLE,
        "cancel_features",
        "Order cancellation features and outcome",
        generate_cancel_features,
    ),
)


def write_feature_table(path: Path, frame: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False, row_group_size=100_000)


def seed_estate(
    ws: Workspace, *, seed: int, anchor: datetime, days: int = INITIAL_DAYS, table_format: str = "parquet"
) -> None:
    """A clean estate: `days` days of orders ending at `anchor`, both feature tables registered and profiled, kept
    as `table_format` (`demo.feature_tables.FORMATS`)."""
    ws.ensure()
    anchor_ms = int(anchor.astimezone(timezone.utc).timestamp() * 1000)
    with metadata_session(ws) as metadata:
        establish_identity(ws, metadata, anchor_ms)
        open_store(ws)  # the MLflow store created and marked now, as `kintsugi init` does
        for urn, (name, description, columns) in _UPSTREAM_SCHEMAS.items():
            metadata.emit(
                dataset_mcps(
                    urn,
                    name=name,
                    description=description,
                    columns=[SchemaColumn(c, kind) for c, kind in columns],
                    upstreams=[],
                    owner=_OWNER,
                    last_modified_ms=anchor_ms,
                    freshness_hours=24.0,
                ),
                anchor_ms,
            )
        metadata.emit(field_marker_mcps(metadata, *PII_FIELD, anchor_ms), anchor_ms)
        for table in TABLES:
            write_table(ws, data_text(table.name, table_format), table.generate(days=days, seed=seed, anchor=anchor))
            metadata.emit(_table_mcps(ws, table, table_format, anchor_ms), anchor_ms)


def _table_mcps(ws: Workspace, table: DemoTable, table_format: str, anchor_ms: int) -> list[AspectWrite]:
    """The table registered, its contract applied, and its days kept as the reference's batches. A table kept in
    another format is named by its own platform in DataHub, and its spec's `data:` is its folder."""
    urn = table.urn.replace("dataPlatform:file,", f"dataPlatform:{platform_of(table_format)},")
    spec_text = _packaged("pipelines", f"{table.pipeline}.yaml").read_text().replace(table.urn, urn)
    spec_text = spec_text.replace(f"data/{table.name}.parquet", data_text(table.name, table_format))
    (ws.pipelines / f"{table.pipeline}.yaml").write_text(spec_text)
    contract_text = _packaged("contracts", table.contract_file).read_text().replace(table.urn, urn)
    (ws.contracts / table.contract_file).write_text(contract_text)
    contract = parse_odcs(contract_text, f"demo contract {table.contract_file}")
    columns = [SchemaColumn(c.name, c.logical_type) for c in contract.columns]
    spec = load_spec(ws, table.pipeline)
    with tempfile.TemporaryDirectory(prefix=".seed-", dir=ws.runs) as scratch:  # the table as a run reads it
        reference = establish(ws, spec, pin_table(ws, spec, Path(scratch) / "pin").path(ws), cadence="day")
    return [
        *dataset_mcps(
            urn,
            name=table.name,
            columns=columns,
            upstreams=list(UPSTREAMS),
            description=table.description,
            owner=_OWNER,
            last_modified_ms=anchor_ms,
        ),
        *contract_mcps(contract, contract_text),
        *profile_mcps(urn, reference.profile, anchor_ms),
    ]


def _packaged(folder: str, name: str) -> Path:
    return Path(str(resources.files("demo").joinpath(folder, name)))
