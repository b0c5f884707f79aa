"""Category casing: map variant spellings of a category back to its canonical value.

Heals CATEGORY_CASING, whose finding carries ``params["mapping"] = {seen_value: canonical_value}``.
Every value equal to a seen value becomes its canonical value; ``rows_touched`` counts them.

Limits: it only fixes spelling, never meaning. It refuses a mapping entry whose two sides differ by
more than letter case and surrounding whitespace, a canonical value outside the contract's
``allowed_values`` (when the contract lists them), and a mapping that sends a value to another
seen value (a chain or cycle would not be idempotent). There is no row limit: a producer that
changed its casing changes every row. Applied to its own output it touches nothing.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from guard.kinds import FindingKind
from remediations.registry import HealInput, HealStep, PlaybookRefused, register, table_column

__all__ = ["category_casing"]


@register(
    "category_casing",
    {FindingKind.CATEGORY_CASING},
    description="map case/whitespace variants to the canonical category; refuses any other mapping",
    plan=("mapping",),
)
def category_casing(heal: HealInput) -> tuple[pd.DataFrame, HealStep]:
    """Replace each seen variant in the finding's column by its canonical value."""
    finding, table = heal.finding, heal.table
    column = table_column(table.columns, finding.column, "category_casing")
    mapping = _checked_mapping(heal)
    values = table[column]
    hits = values.isin(list(mapping))
    touched = int(hits.sum())
    counts = {seen: int((values == seen).sum()) for seen in sorted(mapping)} if touched else {}
    params: dict[str, Any] = {"mapping": mapping, "rows_per_value": counts}
    healed = table.copy()
    if touched:
        healed[column] = _mapped(values, hits, mapping)
    return healed, HealStep("category_casing", finding.kind.value, column, params, rows_touched=touched)


def _checked_mapping(heal: HealInput) -> dict[str, str]:
    given = {str(k): str(v) for k, v in (heal.finding.params.get("mapping") or {}).items()}
    if not given:
        raise PlaybookRefused("category_casing needs params['mapping'] = {seen: canonical}; re-run the guard")
    mapping = {seen: canonical for seen, canonical in given.items() if seen != canonical}
    for seen, canonical in sorted(mapping.items()):
        if seen.strip().casefold() != canonical.strip().casefold():
            raise PlaybookRefused(
                f"category_casing only fixes case and whitespace; {seen!r} -> {canonical!r} "
                "changes the value itself: heal by hand"
            )
        if canonical in mapping:
            raise PlaybookRefused(
                f"category_casing mapping sends {seen!r} to {canonical!r}, which it also "
                "remaps; give each variant its final canonical value"
            )
    allowed = _allowed(heal)
    stray = sorted(set(mapping.values()) - set(allowed)) if allowed is not None else []
    if stray:
        raise PlaybookRefused(
            f"category_casing canonical value(s) {stray} are not among the contract's "
            f"allowed values {list(allowed or ())}; fix the mapping or the contract"
        )
    return mapping


def _allowed(heal: HealInput) -> tuple[str, ...] | None:
    contracted = heal.contract.column(heal.finding.column or "")
    return contracted.allowed_values if contracted is not None else None


def _mapped(values: pd.Series, hits: pd.Series, mapping: dict[str, str]) -> pd.Series:
    if isinstance(values.dtype, pd.CategoricalDtype):
        plain = values.astype(values.cat.categories.dtype)
        return plain.where(~hits, plain.map(mapping)).astype("category")
    return values.where(~hits, values.map(mapping))
