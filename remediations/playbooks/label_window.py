"""Label window: train only on rows whose label has arrived.

Heals LABEL_IMMATURE. The rule is the simplest honest one: drop every row whose label
(``contract.label_column``) is null, and keep every labelled row; nothing is imputed. For the
heal notes it also counts how many of the dropped rows have an event time (the finding's
``params["event_column"]``) after the label watermark (``params["watermark_ms"]``), i.e. are
immature by construction, and how many are at or before it.

Limit: refuses when it would drop more than ``MAX_DROP_FRACTION`` (30%) of the rows. Applied to
its own output it drops nothing.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from guard.kinds import FindingKind
from remediations.registry import HealInput, HealStep, PlaybookRefused, register

__all__ = ["label_window", "MAX_DROP_FRACTION"]

MAX_DROP_FRACTION = 0.3


@register(
    "label_window",
    {FindingKind.LABEL_IMMATURE},
    max_fraction_touched=MAX_DROP_FRACTION,
    description="drop rows whose label has not arrived; refuses over 30% of rows",
    plan=("event_column",),
)
def label_window(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    """Drop the rows with a null label, counting which of them lie after the label watermark."""
    finding, table = heal.finding, heal.table
    label = heal.contract.label_column
    if label is None or label not in table.columns:
        raise PlaybookRefused(
            f"label_window needs the contract's label column {label!r} in the table; declare it in the contract"
        )
    unlabelled = table[label].isna()
    dropped = int(unlabelled.sum())
    if table.shape[0] and dropped / len(table) > MAX_DROP_FRACTION:
        raise PlaybookRefused(
            f"label_window would drop {dropped} of {len(table)} rows ({dropped / len(table):.1%}) with no "
            f"{label!r} yet, over its limit of {MAX_DROP_FRACTION:.0%} of rows (max_fraction_touched); "
            "wait for the labels to arrive or shorten the training window"
        )
    params: dict[str, Any] = {
        "label_column": label,
        "rows_before": len(table),
        "rows_dropped": dropped,
        "watermark_ms": finding.params.get("watermark_ms"),
        "event_column": finding.params.get("event_column"),
        **_split_at_watermark(table, unlabelled, finding.params),
    }
    healed = table.loc[~unlabelled].reset_index(drop=True)
    return healed, HealStep("label_window", finding.kind.value, label, params, rows_touched=0, rows_dropped=dropped)


def _split_at_watermark(table: pd.DataFrame, unlabelled: pd.Series, params: dict[str, Any]) -> dict[str, int]:
    """Unlabelled rows with an event time after the watermark, and at or before it (rows without one: neither)."""
    column, watermark = params.get("event_column"), params.get("watermark_ms")
    if not column or column not in table.columns or watermark is None:
        return {}
    events = table[column]
    if not pd.api.types.is_datetime64_any_dtype(events.dtype):
        return {}
    if getattr(events.dtype, "tz", None) is None:
        events = events.dt.tz_localize("UTC")
    cut = pd.Timestamp(int(watermark), unit="ms", tz="UTC")
    return {
        "dropped_after_watermark": int((unlabelled & (events > cut)).sum()),
        "dropped_at_or_before_watermark": int((unlabelled & (events <= cut)).sum()),
    }
