"""A kept batch's outline: what a history check reads of it, held for every kept batch at once.

A batch's whole profile (sketches, quantiles, value counts, calendars, relations) is read by a reference's merge, one
batch at a time (`profiles.reference.reference_of`). The history check and the shift pinning read, of every kept
batch at once, its identity, window and rows and per column the counts and bounds its fingerprint is made of
(`profiles.fingerprints.fingerprint_of_profile`): about a tenth of the whole profile's memory. `outline` cuts it from
a profile; `outline_from_json` reads it from a batch's JSON without decoding a sketch. Both give the same outline,
marked (`BatchProfile.outlined`) so that it is never stored or merged as a profile.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Mapping

from profiles.profile import (
    BATCH_FORMAT,
    PROFILE_FORMAT,
    BatchProfile,
    ColumnProfile,
    DatasetProfile,
    TimeWindow,
    check_hash_format,
    expect_format,
)

__all__ = ["outline", "outline_from_json"]


def outline(batch: BatchProfile) -> BatchProfile:
    """The batch with only its columns' counts, bounds, mean and spread: no sketch, quantile, count or relation."""
    columns = {
        name: replace(
            c, quantiles=(), value_counts=None, moments=None, sketch=None, distinct=None, hours=None, weekdays=None
        )
        for name, c in batch.profile.columns.items()
    }
    return replace(batch, profile=DatasetProfile(batch.profile.row_count, columns), outlined=True)


def outline_from_json(text: str) -> BatchProfile:
    """`outline` of the batch a `BatchProfile.to_json` text holds, read without its sketches."""
    data = json.loads(text)
    expect_format(data, BATCH_FORMAT)
    profile = data["profile"]
    expect_format(profile, PROFILE_FORMAT)
    check_hash_format(profile.get("hash_format", 1))
    window = data.get("window")
    return BatchProfile(
        batch_id=data["batch_id"],
        files=tuple(data["files"]),
        profile=DatasetProfile(
            int(profile["row_count"]), {name: _column(name, c) for name, c in profile["columns"].items()}
        ),
        time_column=data.get("time_column"),
        window=TimeWindow.from_dict(window) if window else None,
        start_ms=data.get("start_ms"),
        end_ms=data.get("end_ms"),
        outlined=True,
    )


# what an outline holds of a column: its counts and bounds, no sketch, quantile or value count
_OUTLINE_KEYS = ("logical_type", "rows", "nulls", "min", "max", "mean", "stdev", "nans", "zeros")


def _column(name: str, d: Mapping[str, Any]) -> ColumnProfile:
    return ColumnProfile.from_dict(name, {k: d[k] for k in _OUTLINE_KEYS if k in d})
