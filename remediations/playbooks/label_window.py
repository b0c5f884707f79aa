"""Label window: train only on rows whose label has arrived; the rows without one are set aside, never dropped.

Heals LABEL_IMMATURE as a quarantine (`remediations.registry`): a row whose label (``contract.label_column``)
is null stays in the published table exactly as it came (its label may yet arrive, or the join that lost it be
mended upstream), is listed in the quarantine beside it and is left out of the training view; nothing is
imputed, and no row is deleted from the team's table, so a batch that passed earlier keeps every row it had. The
incident stays open while the rows are set aside. For the heal notes it also counts how many of those rows have
an event time (the finding's ``params["event_column"]``) after the label watermark (``params["watermark_ms"]``),
i.e. are immature by construction, and how many are at or before it.

Limit: refuses when it would set aside more than ``MAX_SET_ASIDE_FRACTION`` (30%) of the rows the finding
concerns. Applied to its own output it sets the same rows aside.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from guard.kinds import FindingKind
from remediations.registry import HealInput, HealStep, PlaybookRefused, register
from remediations.rows import describe_rows, selected_rows

__all__ = ["label_window", "MAX_SET_ASIDE_FRACTION"]

MAX_SET_ASIDE_FRACTION = 0.3


@register(
    "label_window",
    {FindingKind.LABEL_IMMATURE},
    max_fraction_touched=MAX_SET_ASIDE_FRACTION,
    quarantines=True,
    description="set aside rows whose label has not arrived: kept as they are in the table, listed in the "
    "quarantine, left out of training; refuses over 30% of rows",
    plan=("event_column",),
)
def label_window(heal: HealInput) -> tuple[np.ndarray, HealStep]:
    """The rows with a null label (within the finding's rows), counting which of them lie after the watermark."""
    finding, table = heal.finding, heal.table
    label = heal.contract.label_column
    if label is None or label not in table.columns:
        raise PlaybookRefused(
            f"label_window needs the contract's label column {label!r} in the table; declare it in the contract"
        )
    concerned = selected_rows(table, finding)
    unlabelled = table[label].isna().to_numpy() & concerned
    count, of = int(unlabelled.sum()), int(concerned.sum())
    if of and count / of > MAX_SET_ASIDE_FRACTION:
        raise PlaybookRefused(
            f"label_window would set aside {count} of {of} rows ({count / of:.1%}) with no {label!r} yet, over its "
            f"limit of {MAX_SET_ASIDE_FRACTION:.0%} of rows (max_fraction_touched); wait for the labels to arrive "
            "or shorten the training window"
        )
    params: dict[str, Any] = {
        "column": label,
        "null": True,
        "rows": describe_rows(finding),
        "watermark_ms": finding.params.get("watermark_ms"),
        "event_column": finding.params.get("event_column"),
        **_split_at_watermark(table, unlabelled, finding.params),
    }
    return unlabelled, HealStep(
        "label_window", finding.kind.value, label, params, rows_touched=0, rows_quarantined=count
    )


def _split_at_watermark(table: pd.DataFrame, unlabelled: np.ndarray, params: dict[str, Any]) -> dict[str, int]:
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
    after = (events > cut).to_numpy(dtype=bool)
    return {
        "set_aside_after_watermark": int((unlabelled & after).sum()),
        "set_aside_at_or_before_watermark": int((unlabelled & ~after & events.notna().to_numpy()).sum()),
    }
