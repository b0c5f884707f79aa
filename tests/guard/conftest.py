"""Batches shared by the guard's tests: real ones (`real_cases`), each built once per session, and the hourly readings
of `readings_support` split into weeks, once per module."""

from __future__ import annotations

import pandas as pd
import pytest

from profiles.batches import split_batches

from readings_support import weather
from real_cases import RealCase, real_case, whole_table_case


@pytest.fixture(scope="session")
def hourly_week(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    return real_case("greensboro_tmy", tmp_path_factory.mktemp("greensboro"), slice(8, 20), 20)


@pytest.fixture(scope="session")
def daily_newest_month(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    return real_case("seattle_weather", tmp_path_factory.mktemp("seattle"), slice(-14, -1), -1)


@pytest.fixture(scope="session")
def daily_newest_month_half_year(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    """Seattle's last December against the six months before it: a reference that saw no winter."""
    return real_case("seattle_weather", tmp_path_factory.mktemp("seattle-half"), slice(-7, -1), -1)


@pytest.fixture(scope="session")
def hourly_last_week(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    """The year's last week, overcast (direct irradiance of a few W/m2), against the 12 weeks before."""
    return real_case("greensboro_tmy", tmp_path_factory.mktemp("greensboro-last"), slice(-13, -1), -1)


@pytest.fixture(scope="session")
def stations_newest_week(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    """San Francisco's and Seattle's hourly temperatures: a December week against the year's months through
    December, as `kintsugi init` keeps them (over a year the two cities hold no order: summer reverses it)."""
    return real_case("pnw_temps", tmp_path_factory.mktemp("pnw"), slice(0, 12), -3, reference_cadence="month")


@pytest.fixture(scope="session")
def hourly_landed_week(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    """Greensboro's last (partial) week against the year's months, as `kintsugi init` keeps them before it lands."""
    return real_case("greensboro_tmy", tmp_path_factory.mktemp("greensboro-landed"), slice(0, 12), -1, "month")


@pytest.fixture(scope="session")
def stations_whole_table(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    """San Francisco's and Seattle's whole year as one batch, against the 7 weeks before the last."""
    return whole_table_case("pnw_temps", tmp_path_factory.mktemp("pnw-table"), slice(-8, -1))


@pytest.fixture(scope="session")
def hourly_whole_table(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    """Greensboro's whole year as one batch, against the 8 weeks before the last."""
    return whole_table_case("greensboro_tmy", tmp_path_factory.mktemp("greensboro-table"), slice(-9, -1))


@pytest.fixture(scope="session")
def daily_whole_table(tmp_path_factory: pytest.TempPathFactory) -> RealCase:
    """Seattle's four years as one batch, against the six months before the last: a reference that saw no winter."""
    return whole_table_case("seattle_weather", tmp_path_factory.mktemp("seattle-table"), slice(-7, -1))


@pytest.fixture(scope="module")
def table(tmp_path_factory) -> tuple[pd.DataFrame, list]:
    frame = weather()
    path = tmp_path_factory.mktemp("robust") / "weather.parquet"
    frame.to_parquet(path, index=False, row_group_size=500)
    return frame, split_batches(path, time_column="time", cadence="week")
