"""Deterministic food-delivery data: orders, couriers and weather folded into `eta_features`.

ETA is mostly travel time (distance / speed), plus prep time, courier load, rain and rush hours,
and the city slowly gets more congested — the reason a model retrained on fresh data wins.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pandas as pd

__all__ = ["generate_eta_features", "generate_cancel_features", "VEHICLE_SPEED_KMH", "ROWS_PER_DAY"]

VEHICLE_SPEED_KMH = {"bike": 14.0, "scooter": 22.0, "car": 27.0}
ROWS_PER_DAY = 400
_CONGESTION_PER_DAY = 0.006


def generate_eta_features(*, days: int, seed: int, anchor: datetime, rows_per_day: int = ROWS_PER_DAY) -> pd.DataFrame:
    """`days` days of deliveries ending at `anchor`; day d's rows depend only on (seed, d)."""
    frames = [_one_day(day, days, seed, anchor, rows_per_day) for day in range(days)]
    return pd.concat(frames, ignore_index=True)


def _one_day(day: int, days: int, seed: int, anchor: datetime, rows: int) -> pd.DataFrame:
    rng = np.random.default_rng([seed, day])
    start = anchor.astimezone(timezone.utc) - timedelta(days=days - day)
    offsets = np.sort(rng.uniform(0, 86_400, rows))
    event_ts = pd.to_datetime(start) + pd.to_timedelta(offsets, unit="s")
    hour = event_ts.hour.to_numpy()
    distance = np.clip(rng.lognormal(mean=1.1, sigma=0.55, size=rows), 0.3, 25.0)
    prep = np.clip(rng.normal(12.0, 4.0, rows), 2.0, 45.0)
    load = rng.poisson(1.5, rows)
    vehicle = rng.choice(list(VEHICLE_SPEED_KMH), size=rows, p=[0.35, 0.45, 0.20])
    rain = np.where(rng.random(rows) < 0.25, rng.exponential(2.5, rows), 0.0)
    eta = _eta_minutes(distance, prep, load, vehicle, rain, hour, day, rng)
    frame = pd.DataFrame(
        {
            "order_id": [f"o-{seed}-{day:04d}-{i:05d}" for i in range(rows)],
            "event_ts": event_ts,
            "distance_km": distance.round(3),
            "prep_time_min": prep.round(2),
            "courier_load": load.astype("int64"),
            "vehicle_type": vehicle,
            "rain_mm": rain.round(2),
            "hour_of_day": hour.astype("int64"),
            "eta_minutes": eta.round(2),
        }
    )
    frame["label_ts"] = frame["event_ts"] + pd.to_timedelta(frame["eta_minutes"], unit="min")
    return frame


def _eta_minutes(distance, prep, load, vehicle, rain, hour, day, rng) -> np.ndarray:
    speed = np.array([VEHICLE_SPEED_KMH[v] for v in vehicle])
    speed = speed * (1.0 - _CONGESTION_PER_DAY * day) * (1.0 - 0.03 * np.minimum(rain, 10.0))
    rush = np.isin(hour, [11, 12, 13, 18, 19, 20])
    speed = np.where(rush, speed * 0.8, speed)
    travel = distance / speed * 60.0
    return prep * 0.6 + travel + 2.0 * load + 3.0 + rng.normal(0.0, 2.0, len(distance))


def generate_cancel_features(
    *, days: int, seed: int, anchor: datetime, rows_per_day: int = ROWS_PER_DAY
) -> pd.DataFrame:
    """Order cancellations over the same orders: long prep, long trips, rain and busy couriers drive them.

    The outcome is known 45 minutes after the order (`label_ts`)."""
    orders = generate_eta_features(days=days, seed=seed, anchor=anchor, rows_per_day=rows_per_day)
    rng = np.random.default_rng([seed, 1_000_003])
    logit = (
        -4.2
        + 0.09 * orders["prep_time_min"]
        + 0.12 * orders["distance_km"]
        + 0.25 * orders["rain_mm"].clip(upper=8)
        + 0.35 * orders["courier_load"]
        + 0.4 * orders["hour_of_day"].isin([12, 19])
    )
    cancelled = rng.random(len(orders)) < 1.0 / (1.0 + np.exp(-logit.to_numpy()))
    frame = orders.drop(columns=["eta_minutes", "label_ts"])
    frame["cancelled"] = cancelled.astype("int64")
    frame["label_ts"] = frame["event_ts"] + pd.Timedelta(minutes=45)
    return frame
