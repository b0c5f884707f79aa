"""Seed the delivery estate into a workspace: data, pipeline spec, contract, and DataHub metadata."""
from __future__ import annotations

import shutil
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path

from controlplane.datahub.estate import contract_mcps, dataset_mcps, profile_mcps
from controlplane.datahub.lite import LiteMetadata
from controlplane.odcs import parse_odcs
from controlplane.workspace import Workspace
from demo.generate import generate_eta_features
from guard.snapshot import read_snapshot

__all__ = ["seed_estate", "write_feature_table", "FEATURE_TABLE", "UPSTREAMS", "PIPELINE", "INITIAL_DAYS"]

PIPELINE = "delivery-eta"
FEATURE_TABLE = "urn:li:dataset:(urn:li:dataPlatform:file,delivery.eta_features,PROD)"
ORDERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,delivery.public.orders,PROD)"
COURIERS = "urn:li:dataset:(urn:li:dataPlatform:postgres,delivery.public.couriers,PROD)"
WEATHER = "urn:li:dataset:(urn:li:dataPlatform:s3,weather-feed/hourly,PROD)"
UPSTREAMS = (ORDERS, COURIERS, WEATHER)
INITIAL_DAYS = 30
_OWNER = "urn:li:corpGroup:delivery-data"
_UPSTREAM_SCHEMAS = {
    ORDERS: ("orders", "Orders as placed, with pickup/drop-off distance and restaurant prep time",
             [("order_id", "string"), ("created_at", "timestamp"), ("distance_km", "number"),
              ("prep_time_min", "number"), ("delivered_at", "timestamp")]),
    COURIERS: ("couriers", "Courier fleet: vehicle and current load",
               [("courier_id", "string"), ("vehicle_type", "string"), ("current_load", "integer")]),
    WEATHER: ("weather_hourly", "Hourly rainfall per delivery zone",
              [("hour_ts", "timestamp"), ("zone", "string"), ("rain_mm", "number")]),
}


def write_feature_table(path: Path, *, days: int, seed: int, anchor: datetime) -> None:
    frame = generate_eta_features(days=days, seed=seed, anchor=anchor)
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(path, index=False, row_group_size=100_000)


def seed_estate(ws: Workspace, *, seed: int, anchor: datetime, days: int = INITIAL_DAYS) -> None:
    """A clean estate: `days` days of deliveries ending at `anchor`, registered and profiled in DataHub."""
    ws.ensure()
    anchor_ms = int(anchor.astimezone(timezone.utc).timestamp() * 1000)
    for name in ("delivery-eta.yaml",):
        shutil.copyfile(_packaged("pipelines", name), ws.pipelines / name)
    contract_text = _packaged("contracts", "eta_features.odcs.yaml").read_text()
    (ws.contracts / "eta_features.odcs.yaml").write_text(contract_text)
    data = ws.data / "eta_features.parquet"
    write_feature_table(data, days=days, seed=seed, anchor=anchor)
    contract = parse_odcs(contract_text, "demo contract")
    metadata = LiteMetadata(ws.datahub_db)
    try:
        for urn, (name, description, columns) in _UPSTREAM_SCHEMAS.items():
            metadata.emit(dataset_mcps(urn, name=name, description=description, columns=columns, upstreams=[],
                                       owner=_OWNER, last_modified_ms=anchor_ms, freshness_hours=24.0), anchor_ms)
        columns = [(c.name, c.logical_type) for c in contract.columns]
        metadata.emit(dataset_mcps(FEATURE_TABLE, name="eta_features", columns=columns, upstreams=list(UPSTREAMS),
                                   description="Delivery ETA features and label, one row per delivered order",
                                   owner=_OWNER, last_modified_ms=anchor_ms), anchor_ms)
        metadata.emit(contract_mcps(contract, contract_text), anchor_ms)
        metadata.emit(profile_mcps(FEATURE_TABLE, read_snapshot(data).profile, anchor_ms), anchor_ms)
    finally:
        metadata.close()


def _packaged(folder: str, name: str) -> Path:
    return Path(str(resources.files("demo").joinpath(folder, name)))
