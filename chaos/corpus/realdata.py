"""Real public datasets that ship inside pip packages: the fixtures that keep the guard honest.

Each `RealDataset` loads offline (no network, well under a second), as a tidy frame in time order with
a UTC timestamp column, and proposes a contract as plain data: per column its logical type, its
physical unit (pint spellings: `degC`, `mm`, `m/s`, `W/m**2`...) and its role (label, event timestamp,
key), and physical plausibility bounds where physics gives them (a depth is >= 0, a humidity <= 100),
never bounds inferred from the data. `batches(cadence)` cuts the frame into calendar batches (UTC)
in time order, with the same windows as `profiles.batches.split_batches`.

- `seattle_weather` (vega_datasets, seattle-weather.csv): daily weather at Seattle, 2012-2015, 1,461
  rows: precipitation in mm (57% exact zeros), max/min temperature in degC, wind in m/s, and the
  day's weather as a label (sun, fog, rain, drizzle, snow). Monthly batches: 48.
- `pnw_temps` (vega_datasets, seattle-temps.csv + sf-temps.csv): hourly air temperature at Seattle
  and San Francisco through 2010 in degF, 8,759 hours, recorded in local time (Pacific, with DST: the
  spring-forward hour is missing), converted to UTC here; the hour of day (local) is a feature, as
  a pipeline would derive it. Weekly batches: 53.
- `greensboro_tmy` (pvlib, data/723170TYA.CSV): NREL TMY3 typical meteorological year for Greensboro,
  NC, hourly, 8,760 rows, in local standard time (UTC-5), its year set to 2010: irradiance in W/m**2
  (the global horizontal one, GHI, is the label: zero at night, 47% of hours), air and dew-point
  temperature in degC, relative humidity in percent, pressure in hPa (mbar), wind speed in m/s and
  direction in degrees, visibility in m (a point mass at 16,100 m), ceiling height in m (77,777 means
  unlimited: a sentinel, half the hours), cloud cover in tenths, precipitation in mm (96% zeros), and
  precipitable water in cm. Each month of a TMY comes from a different historical year, stitched;
  time order within the year is real. Read with pandas from the file pvlib ships (pvlib is not imported). Weekly batches: 53.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from guard.contract import ColumnContract, Contract
from profiles.batches import cadence_windows, period_starts

__all__ = ["ColumnSpec", "RealDataset", "DATASETS", "get_dataset", "GUARD_UNITS"]

# the guard reads pint's spellings (guard.units): every unit the specs write goes into the contract as is
GUARD_UNITS = {
    "degC": "degC",
    "degF": "degF",
    "kelvin": "kelvin",
    "mm": "mm",
    "m": "m",
    "km": "km",
    "cm": "cm",
    "mile": "mile",
    "percent": "percent",
    "m/s": "m/s",
    "hPa": "hPa",
    "W/m**2": "W/m**2",
    "degree": "degree",
    "dimensionless": "dimensionless",
}


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    logical_type: str
    unit: str | None = None  # pint spelling
    role: str | None = None  # "label", "event_timestamp" or "key" (a key may also be the event timestamp)
    minimum: float | None = None  # physical plausibility, not the data's range
    maximum: float | None = None
    description: str = ""
    at_least: str | None = None  # a column this one is never below by definition (a day's maximum, its minimum)


@dataclass(frozen=True)
class RealDataset:
    name: str
    package: str
    description: str
    load: Callable[[], pd.DataFrame] = field(repr=False)
    columns: tuple[ColumnSpec, ...]
    time_column: str
    cadence: str  # the batch cadence this dataset is walked at by default
    reference_batches: int  # K: batches the first reference is built from (and N, the rolling window)

    def frame(self) -> pd.DataFrame:
        frame = self.load()
        expected = [c.name for c in self.columns]
        if list(frame.columns) != expected:
            raise ValueError(f"{self.name} loaded columns {list(frame.columns)}, its spec says {expected}")
        return frame

    @property
    def label(self) -> str | None:
        return next((c.name for c in self.columns if c.role == "label"), None)

    def contract(self, dataset_urn: str | None = None) -> Contract:
        """The proposed contract as the guard reads it (every unit in pint's spelling)."""
        urn = dataset_urn or f"urn:li:dataset:(urn:li:dataPlatform:file,realdata.{self.name},PROD)"
        columns = tuple(
            ColumnContract(
                c.name,
                c.logical_type,
                unit=GUARD_UNITS.get(c.unit or ""),
                minimum=c.minimum,
                maximum=c.maximum,
                primary_key=c.role == "key" or (c.role == "event_timestamp" and self._time_is_key),
                required=c.role == "key" or c.role == "event_timestamp",
                at_least=c.at_least,
            )
            for c in self.columns
        )
        return Contract(urn, columns, label_column=self.label, event_timestamp_column=self.time_column)

    @property
    def _time_is_key(self) -> bool:
        return not any(c.role == "key" for c in self.columns)

    def batches(self, cadence: str | None = None) -> list[tuple[str, pd.DataFrame]]:
        """(batch id, rows) for each non-empty calendar period, oldest first."""
        frame = self.frame()
        chosen = cadence or self.cadence
        stamps = frame[self.time_column].to_numpy(dtype="datetime64[ms]").astype(np.int64)
        starts = period_starts(chosen, stamps)
        ordered = sorted(set(starts.tolist()))
        ids = dict(zip(ordered, (batch_id for batch_id, _ in cadence_windows(self.time_column, chosen, ordered))))
        return [(ids[s], frame.loc[starts == s].reset_index(drop=True)) for s in ordered]


def _utc(local: pd.Series, zone: str) -> pd.Series:
    return local.dt.tz_localize(zone, ambiguous=True, nonexistent="shift_forward").dt.tz_convert("UTC")


def _seattle_weather() -> pd.DataFrame:
    from vega_datasets import local_data

    raw = local_data.seattle_weather()
    return pd.DataFrame(
        {
            "date": pd.to_datetime(raw["date"]).dt.tz_localize("UTC").astype("datetime64[ms, UTC]"),
            "precipitation": raw["precipitation"].astype(float),
            "temp_max": raw["temp_max"].astype(float),
            "temp_min": raw["temp_min"].astype(float),
            "wind": raw["wind"].astype(float),
            "weather": raw["weather"].astype(str).astype(object),
        }
    )


def _pnw_temps() -> pd.DataFrame:
    from vega_datasets import local_data

    seattle, sf = local_data.seattle_temps(), local_data.sf_temps()
    if not (seattle["date"].to_numpy() == sf["date"].to_numpy()).all():
        raise ValueError("seattle-temps and sf-temps no longer share their hours: check vega_datasets")
    local = pd.to_datetime(seattle["date"])
    return pd.DataFrame(
        {
            "time": _utc(local, "America/Los_Angeles").astype("datetime64[ms, UTC]"),
            "hour_local": local.dt.hour.astype(np.int64),
            "sf_temp": sf["temp"].astype(float),
            "seattle_temp": seattle["temp"].astype(float),
        }
    )


_TMY_COLUMNS = {  # the TMY3 file's header -> ours
    "GHI (W/m^2)": "ghi",
    "DNI (W/m^2)": "dni",
    "DHI (W/m^2)": "dhi",
    "Dry-bulb (C)": "temp_air",
    "Dew-point (C)": "temp_dew",
    "RHum (%)": "relative_humidity",
    "Pressure (mbar)": "pressure",
    "Wspd (m/s)": "wind_speed",
    "Wdir (degrees)": "wind_direction",
    "Hvis (m)": "visibility",
    "CeilHgt (m)": "ceiling_height",
    "TotCld (tenths)": "total_cloud",
    "Lprecip depth (mm)": "precipitation",
    "Pwat (cm)": "precipitable_water",
}


def _package_file(package: str, *parts: str) -> Path:
    """A data file inside an installed package, found without importing the package (pvlib imports scipy)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {package!r} is not installed: `pip install -e '.[dev]'`")
    return Path(next(iter(spec.submodule_search_locations)), *parts)


def _greensboro_tmy() -> pd.DataFrame:
    path = _package_file("pvlib", "data", "723170TYA.CSV")
    offset_hours = float(path.read_text().splitlines()[0].split(",")[3])  # the station's standard time, -5.0
    raw = pd.read_csv(path, skiprows=1, usecols=["Date (MM/DD/YYYY)", "Time (HH:MM)", *_TMY_COLUMNS])
    day = pd.to_datetime(raw["Date (MM/DD/YYYY)"].str[:6] + "2010", format="%m/%d/%Y")  # one typical year
    hour = raw["Time (HH:MM)"].str[:2].astype(int)  # the hour's end, 01..24, local standard time
    local = day + pd.to_timedelta(hour, unit="h")
    frame = pd.DataFrame({"time": (local - pd.Timedelta(hours=offset_hours)).dt.tz_localize("UTC")})
    frame["time"] = frame["time"].astype("datetime64[ms, UTC]")
    for source, name in _TMY_COLUMNS.items():
        frame[name] = raw[source].to_numpy(dtype=float)
    return frame.sort_values("time", kind="stable").reset_index(drop=True)


DATASETS: dict[str, RealDataset] = {
    d.name: d
    for d in (
        RealDataset(
            "seattle_weather",
            "vega_datasets",
            "daily weather at Seattle, 2012-2015",
            _seattle_weather,
            (
                ColumnSpec("date", "timestamp", role="event_timestamp", description="the day (00:00 UTC)"),
                ColumnSpec(
                    "precipitation", "number", "mm", minimum=0, description="rain and snow water, zero-inflated"
                ),
                ColumnSpec("temp_max", "number", "degC", minimum=-90, maximum=60, at_least="temp_min"),
                ColumnSpec("temp_min", "number", "degC", minimum=-90, maximum=60),
                ColumnSpec("wind", "number", "m/s", minimum=0, maximum=120),
                ColumnSpec("weather", "string", role="label", description="sun, fog, rain, drizzle or snow"),
            ),
            time_column="date",
            cadence="month",
            reference_batches=6,
        ),
        RealDataset(
            "pnw_temps",
            "vega_datasets",
            "hourly temperature at Seattle and San Francisco, 2010",
            _pnw_temps,
            (
                ColumnSpec("time", "timestamp", role="event_timestamp", description="the hour, UTC"),
                ColumnSpec("hour_local", "integer", minimum=0, maximum=23, description="hour of day, Pacific time"),
                ColumnSpec("sf_temp", "number", "degF", minimum=-130, maximum=140),
                ColumnSpec("seattle_temp", "number", "degF", role="label", minimum=-130, maximum=140),
            ),
            time_column="time",
            cadence="week",
            reference_batches=8,
        ),
        RealDataset(
            "greensboro_tmy",
            "pvlib",
            "NREL TMY3 hourly typical year, Greensboro NC",
            _greensboro_tmy,
            (
                ColumnSpec("time", "timestamp", role="event_timestamp", description="the hour, UTC"),
                ColumnSpec(
                    "ghi",
                    "number",
                    "W/m**2",
                    role="label",
                    minimum=0,
                    maximum=1500,
                    description="global horizontal irradiance: zero at night",
                ),
                ColumnSpec("dni", "number", "W/m**2", minimum=0, maximum=1500),
                ColumnSpec("dhi", "number", "W/m**2", minimum=0, maximum=1500),
                ColumnSpec("temp_air", "number", "degC", minimum=-90, maximum=60, at_least="temp_dew"),
                ColumnSpec("temp_dew", "number", "degC", minimum=-90, maximum=60),
                ColumnSpec("relative_humidity", "number", "percent", minimum=0, maximum=100),
                ColumnSpec("pressure", "number", "hPa", minimum=800, maximum=1100),
                ColumnSpec("wind_speed", "number", "m/s", minimum=0, maximum=120),
                ColumnSpec("wind_direction", "number", "degree", minimum=0, maximum=360),
                ColumnSpec("visibility", "number", "m", minimum=0, description="a point mass at 16,100 m"),
                ColumnSpec("ceiling_height", "number", "m", minimum=0, description="77,777 = unlimited (a sentinel)"),
                ColumnSpec(
                    "total_cloud", "number", "dimensionless", minimum=0, maximum=10, description="tenths of sky"
                ),
                ColumnSpec(
                    "precipitation", "number", "mm", minimum=0, description="liquid precipitation, zero-inflated"
                ),
                ColumnSpec("precipitable_water", "number", "cm", minimum=0),
            ),
            time_column="time",
            cadence="week",
            reference_batches=8,
        ),
    )
}


def get_dataset(name: str) -> RealDataset:
    if name not in DATASETS:
        raise KeyError(f"no real dataset {name!r}: choose one of {', '.join(DATASETS)}")
    return DATASETS[name]
