"""The demo estate's scenarios: each injector bound to an `eta_features` column (or upstream), its default
magnitude, its sweep, and the finding the guard should raise. Importing this module registers them.

The expected finding is the true cause of the failure, never merely what some check happens to report:
a swap is `columns_swapped` (not the scale shift the units check sees), a placeholder is `sentinel` (not
the quantile distortion it causes), noise is `drift`, local time written as UTC is `timestamp_shift` (not
the label watermark in the future). Rows that cannot be corrected (nulls, sentinels) are quarantined: the
incident stays open (`Scenario.quarantines`).

Unit changes use the conversions that fit the table's columns (distance_km km->m and km->mi,
prep_time_min min->s and min->h, rain_mm mm_rain->in_rain); `chaos.injectors.unit_change` takes any pair
of units `guard.units` names (s->ms, C->F, usd->usd_cents, fraction->percent...).
"""
from __future__ import annotations

from chaos import injectors as inj
from chaos import upstream as up
from chaos.registry import Scenario, register
from chaos.selection import Selection
from demo.seed import COURIERS, ORDERS, WEATHER
from guard.kinds import FindingKind as K

__all__ = ["DEMO_SCENARIOS", "SHARE"]

SHARE = "share of rows"
_ROW_SWEEP = (0.005, 0.02, 0.05, 0.1, 0.25)
_UNIT_SWEEP = (0.05, 0.1, 0.25, 0.5, 1.0)
_SINCE_A_RELEASE = Selection("window", "event_ts")  # a partial unit change covers a stretch of time


def _unit(name: str, column: str, to_unit: str, summary: str) -> Scenario:
    return Scenario(name, summary, K.UNIT_MISMATCH, (column,), True, 1.0, SHARE, _UNIT_SWEEP,
                    table=inj.unit_change(to_unit), selection=_SINCE_A_RELEASE, magnitude_is_share=True)


DEMO_SCENARIOS: tuple[Scenario, ...] = (
    _unit("unit_km_to_m", "distance_km", "m", "distance written in metres instead of kilometres"),
    _unit("unit_km_to_mi", "distance_km", "mi", "distance written in miles instead of kilometres"),
    _unit("unit_min_to_s", "prep_time_min", "s", "prep time written in seconds instead of minutes"),
    _unit("unit_min_to_h", "prep_time_min", "h", "prep time written in hours instead of minutes"),
    _unit("unit_mm_to_in", "rain_mm", "in_rain", "rainfall written in inches instead of millimetres"),
    Scenario("scale_shift", "distance multiplied by a factor no unit explains", K.SCALE_SHIFT, ("distance_km",),
             False, 2.5, "factor", (1.05, 1.1, 1.2, 1.5, 2.5), table=inj.rescale),
    Scenario("column_rename", "distance_km arrives as 'distance'", K.COLUMN_RENAMED, ("distance_km",), True,
             1.0, "unused", table=inj.rename("distance")),
    Scenario("columns_swapped", "distance_km and prep_time_min written into each other's place (swapped back)",
             K.COLUMNS_SWAPPED, ("distance_km", "prep_time_min"), True, 1.0, SHARE, (0.05, 0.1, 0.25, 0.5, 1.0),
             table=inj.swap_with("prep_time_min"), magnitude_is_share=True),
    Scenario("type_drift", "prep time arrives as text; a share of it in a locale format that does not parse",
             K.TYPE_CHANGED, ("prep_time_min",), True, 0.0, "share of values unparseable", (0.0, 0.02, 0.1),
             table=inj.as_strings, magnitude_is_share=True),
    Scenario("null_limit", "prep time missing on a share of rows (over the contract's 1% limit): quarantined",
             K.NULL_LIMIT, ("prep_time_min",), False, 0.1, SHARE, _ROW_SWEEP, table=inj.nulls,
             magnitude_is_share=True, quarantines=True),
    Scenario("null_spike", "hour of day missing on a share of rows (no contract limit: a spike): quarantined",
             K.NULL_SPIKE, ("hour_of_day",), False, 0.1, SHARE, _ROW_SWEEP, table=inj.nulls, magnitude_is_share=True,
             quarantines=True),
    Scenario("sentinel_negative", "courier load written as -1 for 'unknown': quarantined", K.SENTINEL,
             ("courier_load",), False, 0.1, SHARE, _ROW_SWEEP, table=inj.sentinel(-1), magnitude_is_share=True,
             quarantines=True),
    Scenario("sentinel_zero", "distance written as 0 for 'unknown': quarantined", K.SENTINEL, ("distance_km",),
             False, 0.1, SHARE, _ROW_SWEEP, table=inj.sentinel(0), magnitude_is_share=True, quarantines=True),
    Scenario("label_lag", "labels of the newest hours have not arrived", K.LABEL_STALE, ("label_ts",), False,
             36.0, "hours", (6.0, 12.0, 23.0, 30.0, 36.0), table=inj.label_lag),
    Scenario("label_missing", "a share of rows lost their label", K.LABEL_IMMATURE, ("eta_minutes",), True, 0.15,
             SHARE, (0.02, 0.05, 0.08, 0.15), table=inj.label_missing, magnitude_is_share=True),
    Scenario("duplicate_load", "a share of rows loaded twice (one day's partition)", K.DUPLICATE_KEYS,
             ("order_id",), True, 0.025, SHARE, (0.0005, 0.002, 0.01, 0.025, 0.1), table=inj.duplicate_rows,
             selection=Selection("window", "event_ts"), magnitude_is_share=True),
    Scenario("volume_drop", "a partial load: a share of rows never arrives", K.VOLUME_DROP, (), False, 0.7, SHARE,
             (0.1, 0.3, 0.5, 0.6, 0.7), table=inj.drop_rows, magnitude_is_share=True),
    Scenario("category_casing", "vehicle type spelled in capitals on a share of rows", K.CATEGORY_CASING,
             ("vehicle_type",), True, 0.3, SHARE, _ROW_SWEEP, table=inj.recase("upper"), magnitude_is_share=True),
    Scenario("new_category", "a vehicle type the contract does not allow ('ebike')", K.NEW_CATEGORY,
             ("vehicle_type",), False, 0.1, SHARE, _ROW_SWEEP, table=inj.new_category("ebike"),
             magnitude_is_share=True),
    Scenario("broken_characters", "vehicle type with a broken character (U+FFFD) on a share of rows",
             K.NEW_CATEGORY, ("vehicle_type",), False, 0.1, SHARE, _ROW_SWEEP, table=inj.broken_characters,
             magnitude_is_share=True),
    Scenario("gaussian_noise", "distance reported with Gaussian noise, sd = magnitude x the column's: no unit, no "
             "scale, a noisier distribution (drift)", K.DRIFT, ("distance_km",), False, 0.5, "noise sd / column sd",
             (0.1, 0.25, 0.5, 1.0), table=inj.gaussian_noise),
    Scenario("count_noise", "courier load reported with Gaussian noise, sd = magnitude x the column's (rounded)",
             K.DRIFT, ("courier_load",), False, 1.0, "noise sd / column sd", (0.25, 0.5, 1.0, 2.0),
             table=inj.gaussian_noise),
    Scenario("distribution_shift", "courier load shifted up (magnitude x sd)", K.DRIFT, ("courier_load",), False,
             1.0, "column sds", (0.1, 0.25, 0.5, 1.0), table=inj.shift),
    Scenario("timestamp_shift", "event and label times written hours early", K.LABEL_STALE, ("label_ts",), False,
             36.0, "hours", (2.0, 12.0, 23.0, 30.0, 36.0), table=inj.timestamp_shift),
    Scenario("timezone_shift", "local time (UTC+9) written as UTC: timestamps and hour_of_day move together; "
             "deliveries come at every hour, so only the hour-of-day profile of the outcome places the offset, "
             "within an hour: named and blocked for a person to confirm", K.TIMESTAMP_SHIFT,
             ("event_ts", "label_ts", "hour_of_day"), False, 9.0, "hours", (1.0, 3.0, 9.0),
             table=inj.timezone_shift("hour_of_day")),
    Scenario("target_leakage", "prep time recomputed from the outcome (same distribution, ranks the label)",
             K.TARGET_LEAKAGE, ("prep_time_min",), False, 1.0, SHARE, (0.25, 0.5, 0.75, 0.9, 1.0),
             table=inj.target_leakage, magnitude_is_share=True),
    Scenario("upstream_incident", "the orders table has an ACTIVE incident in DataHub", K.UPSTREAM_INCIDENT, (),
             False, 1.0, "unused", upstream_injector=up.upstream_incident, upstream=ORDERS),
    Scenario("upstream_stale", "the couriers table stopped loading (hours behind)", K.UPSTREAM_STALE, (), False,
             48.0, "hours", (6.0, 12.0, 23.0, 30.0, 48.0), upstream_injector=up.upstream_stale, upstream=COURIERS),
    Scenario("upstream_deprecated", "the weather feed is deprecated in DataHub", K.UPSTREAM_DEPRECATED, (), False,
             1.0, "unused", upstream_injector=up.upstream_deprecated, upstream=WEATHER),
)

for _scenario in DEMO_SCENARIOS:
    register(_scenario)
