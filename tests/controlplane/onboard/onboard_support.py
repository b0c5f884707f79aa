"""Helpers for the onboarding tests: Seattle's weather (vega_datasets ships it), the CLI in-process without pytest's
function fixtures (so session fixtures can use it), and what the stores say."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from controlplane.runs.identity import rebase_if_moved
from controlplane.workspace import Workspace
from tests.support import whole_cli

__all__ = ["weather", "cli", "copy_ws", "NAME", "UPSTREAM", "INIT_AT", "RUN_AT", "init_args"]

NAME = "seattle-weather"
UPSTREAM = "urn:li:dataset:(urn:li:dataPlatform:noaa,ghcn-daily.USW00024233,PROD)"
INIT_AT = "2013-01-01T06:00:00+00:00"
RUN_AT = "2013-01-01T07:00:00+00:00"


def weather(start: str = "2012-01-01", end: str = "2013-01-01") -> pd.DataFrame:
    """Seattle's daily weather (2012-2015), the days in [start, end)."""
    from vega_datasets import data

    frame = data.seattle_weather()
    frame["date"] = frame["date"].astype("datetime64[us]")
    chosen = frame[(frame["date"] >= start) & (frame["date"] < end)].reset_index(drop=True)
    chosen["weather"] = chosen["weather"].astype(object)
    return chosen


def cli(*args: str, workspace: Path | None = None) -> tuple[int, str, str]:
    """`kintsugi ARGS [--workspace WORKSPACE]` in this process: (exit code, stdout, stderr)."""
    return whole_cli(*args, *(["--workspace", str(workspace)] if workspace is not None else []))


def init_args(data: str, *extra: str) -> list[str]:
    return [
        "init",
        NAME,
        "--data",
        data,
        "--target",
        "temp_max",
        "--time-column",
        "date",
        "--upstream",
        f"{UPSTREAM}=48",
        "--now",
        INIT_AT,
        "--yes",
        *extra,
    ]


def copy_ws(source: Workspace, target: Path) -> Workspace:
    shutil.copytree(source.root, target)
    copied = Workspace(target)
    rebase_if_moved(copied)
    return copied
