"""The drill's scenarios for any onboarded pipeline, chosen from its contract and spec.

Each is a `chaos.failures.registry.Scenario` (never registered: its columns are the pipeline's), built on the table
injectors of `chaos.failures.injectors`, and expects the finding its true cause is:

    unit_change      a feature with a declared unit, written in another unit of its dimension -> unit_mismatch, healed
    rescale          a measured feature x2.5 (another one where there is): no unit explains it -> scale_shift, blocked
    column_rename    a numeric feature arrives under another name                             -> column_renamed, healed
    columns_swapped  two numeric columns (of one unit where there are) in each other's place  -> columns_swapped, healed
    join_nulls       25% of rows lose up to three numeric features at once (a missed join)    -> null_limit (null_spike
                                                                                                 without a limit), quarantined
    sentinel         -9999 for 'unknown' on 20% of a numeric feature's rows                   -> sentinel, quarantined
    timezone_shift   the event time written 5 hours early (local time UTC-5 written as UTC)   -> timestamp_shift, healed
    timezone_late    the event time written 4 hours late (UTC read as local UTC-4, converted) -> timestamp_shift, healed
    duplicate_keys   2.5% of rows (a stretch of time) loaded twice                            -> duplicate_keys on the key
                                                                                                 (no key: the time), healed
    label_copy       the label copied into a new column                                       -> target_leakage, blocked

A scenario that does not apply to the pipeline (no feature with a unit, no key nor time, fewer than two numeric
columns) is not built: `Skipped` says why. Features with a declared unit (measurements: what a sensor or a
feed gets wrong) are corrupted before unitless ones (an hour of day, a count). The same contract and spec always
give the same scenarios, so a worker process rebuilds them by name (`chaos.failures.families.scenario_named`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

from chaos.failures import injectors as inj
from chaos.failures.registry import Injected, Scenario, TableInjector, Target
from chaos.failures.selection import Selection
from controlplane.spec import PipelineSpec
from guard.contract import Contract
from guard.findings import Finding
from guard.kinds import FindingKind as K
from guard.units import candidates_for, canonical, group_of, same_unit

__all__ = [
    "UnitScenario",
    "Skipped",
    "GENERIC_NAMES",
    "generic_scenarios",
    "unit_target",
    "SENTINEL_VALUE",
    "TIMEZONE_HOURS",
    "LATE_HOURS",
]

GENERIC_NAMES = (
    "unit_change",
    "rescale",
    "column_rename",
    "columns_swapped",
    "join_nulls",
    "sentinel",
    "timezone_shift",
    "timezone_late",
    "duplicate_keys",
    "label_copy",
)
SENTINEL_VALUE = -9999.0
TIMEZONE_HOURS = -5.0
LATE_HOURS = 4.0
_SHARE = "share of rows"
# the conversion a producer most plausibly slips into, where it is not the first of the unit's group
_PREFERRED = {
    "millimeter": "inch",
    "centimeter": "inch",
    "meter": "ft",
    "kilometer": "mile",
    "mile": "km",
    "hectopascal": "inHg",
    "kilopascal": "psi",
}


@dataclass(frozen=True)
class UnitScenario(Scenario):
    """A unit change: named right only with the unit the column was really written in (any spelling of it)."""

    unit: str = ""

    def localizes(self, finding: Finding) -> bool:
        actual = finding.params.get("actual_unit")
        return super().localizes(finding) and actual is not None and same_unit(str(actual), self.unit)


@dataclass(frozen=True)
class Skipped:
    name: str
    why: str


def generic_scenarios(contract: Contract, spec: PipelineSpec) -> tuple[tuple[Scenario, ...], tuple[Skipped, ...]]:
    """The scenarios that apply to this pipeline, in GENERIC_NAMES order, and those skipped with why."""
    built: list[Scenario] = []
    skipped: list[Skipped] = []
    for make in _MAKERS.values():
        made = make(contract, spec)
        if isinstance(made, Skipped):
            skipped.append(made)
        else:
            built.append(made)
    return tuple(built), tuple(skipped)


def unit_target(declared: str) -> str | None:
    """The unit a column declared in `declared` is most plausibly written in by mistake (None: none known)."""
    candidates = candidates_for(declared)
    if not candidates:
        return None
    preferred = _PREFERRED.get(canonical(declared))
    return next((c for c in candidates if preferred and same_unit(c, preferred)), candidates[0])


# --- the makers: contract + spec -> a scenario, or why it does not apply ------------------------------------


def _numeric(contract: Contract, spec: PipelineSpec) -> list[str]:
    return [c for c in spec.training.numeric_features if contract.column(c) is not None]


def _measured_first(contract: Contract, spec: PipelineSpec) -> list[str]:
    """The numeric features, those with a declared unit (a measurement: what a sensor or a feed gets wrong) first."""
    numeric = _numeric(contract, spec)
    return sorted(numeric, key=lambda c: contract.column(c).unit is None)  # type: ignore[union-attr]


def _unit_change(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    for physical in (True, False):
        for column in _numeric(contract, spec):
            declared = contract.column(column).unit  # type: ignore[union-attr]
            to_unit = unit_target(declared) if declared else None
            if to_unit is not None and (group_of(declared) not in ("ratio", "angle")) == physical:
                return UnitScenario(
                    "unit_change",
                    f"{column} written in {to_unit} instead of {declared}",
                    K.UNIT_MISMATCH,
                    (column,),
                    True,
                    1.0,
                    _SHARE,
                    table=inj.unit_change(to_unit),
                    magnitude_is_share=True,
                    unit=to_unit,
                )
    return Skipped("unit_change", "no numeric feature declares a unit another unit could be mistaken for")


def _rescale(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    numeric = _measured_first(contract, spec)
    if not numeric:
        return Skipped("rescale", "no numeric feature")
    unit = _unit_change(contract, spec)
    measured = [c for c in numeric if contract.column(c).unit is not None]  # type: ignore[union-attr]
    column = next((c for c in measured if isinstance(unit, Skipped) or c not in unit.columns), numeric[0])
    return Scenario(
        "rescale",
        f"{column} multiplied by 2.5, a factor no unit explains",
        K.SCALE_SHIFT,
        (column,),
        False,
        2.5,
        "factor",
        table=inj.rescale,
    )


def _rename(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    numeric = _measured_first(contract, spec)
    if not numeric:
        return Skipped("column_rename", "no numeric feature")
    column = numeric[-1]
    return Scenario(
        "column_rename",
        f"{column} arrives as '{column}_v2'",
        K.COLUMN_RENAMED,
        (column,),
        True,
        1.0,
        "unused",
        table=inj.rename(f"{column}_v2"),
    )


def _swap(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    pair = _swap_pair(contract, spec)
    if pair is None:
        return Skipped("columns_swapped", "fewer than two numeric columns")
    a, b = pair
    return Scenario(
        "columns_swapped",
        f"{a} and {b} written into each other's place",
        K.COLUMNS_SWAPPED,
        pair,
        True,
        1.0,
        _SHARE,
        table=inj.swap_with(b),
        magnitude_is_share=True,
    )


def _swap_pair(contract: Contract, spec: PipelineSpec) -> tuple[str, str] | None:
    """Two numeric features in one unit; else a feature in the label's unit and the label; else two features."""
    numeric = _numeric(contract, spec)
    unit: dict[str, str] = {}
    for name in numeric:
        column = contract.column(name)
        if column is not None and column.unit:
            unit[name] = column.unit
    for i, a in enumerate(numeric):
        for b in numeric[i + 1 :]:
            if a in unit and b in unit and same_unit(unit[a], unit[b]):
                return a, b
    label = contract.column(spec.training.target)
    if label is not None and label.unit and label.logical_type in ("number", "integer"):
        label_unit = label.unit
        same = next((c for c in numeric if c in unit and same_unit(unit[c], label_unit)), None)
        if same is not None:
            return same, label.name
    return (numeric[0], numeric[1]) if len(numeric) >= 2 else None


def _join_nulls(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    columns = tuple(_measured_first(contract, spec)[:3])
    if not columns:
        return Skipped("join_nulls", "no numeric feature")
    limited = all(contract.column(c).max_null_fraction is not None for c in columns)  # type: ignore[union-attr]
    kind = K.NULL_LIMIT if limited else K.NULL_SPIKE
    return Scenario(
        "join_nulls",
        f"25% of rows lose {', '.join(columns)} at once (a join that missed): quarantined",
        kind,
        columns,
        False,
        0.25,
        _SHARE,
        table=_nulls_together(columns),
        magnitude_is_share=True,
        quarantines=True,
    )


def _sentinel(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    numeric = _measured_first(contract, spec)
    if not numeric:
        return Skipped("sentinel", "no numeric feature")
    return Scenario(
        "sentinel",
        f"{numeric[0]} written as {SENTINEL_VALUE:g} for 'unknown' on 20% of rows: quarantined",
        K.SENTINEL,
        (numeric[0],),
        False,
        0.2,
        _SHARE,
        table=inj.sentinel(SENTINEL_VALUE),
        magnitude_is_share=True,
        quarantines=True,
    )


def _timezone(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    return _moved_clock(
        "timezone_shift", TIMEZONE_HOURS, f"local time UTC{TIMEZONE_HOURS:+g} written as UTC", contract, spec
    )


def _timezone_late(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    return _moved_clock(
        "timezone_late", LATE_HOURS, f"UTC read as local time UTC{-LATE_HOURS:+g} and converted again", contract, spec
    )


def _moved_clock(name: str, hours: float, why: str, contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    column = spec.training.time_column
    if contract.column(column) is None:
        return Skipped(name, f"the contract does not declare the time column {column!r}")
    return Scenario(
        name,
        f"{column} written {abs(hours):g} hours {'early' if hours < 0 else 'late'} ({why})",
        K.TIMESTAMP_SHIFT,
        (column,),
        True,
        hours,
        "hours",
        table=_moved_time,
    )


def _duplicates(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    time = spec.training.time_column
    keys = contract.key_columns or ((time,) if contract.column(time) is not None else ())
    if not keys:
        return Skipped("duplicate_keys", "the contract declares no key column and no time column")
    return Scenario(
        "duplicate_keys",
        f"2.5% of rows (a stretch of {spec.training.time_column}) loaded twice",
        K.DUPLICATE_KEYS,
        keys,
        True,
        0.025,
        _SHARE,
        table=inj.duplicate_rows,
        selection=Selection("window", spec.training.time_column),
        magnitude_is_share=True,
    )


def _label_copy(contract: Contract, spec: PipelineSpec) -> Scenario | Skipped:
    label = spec.training.target
    return Scenario(
        "label_copy",
        f"the label {label} copied into a new column '{label}_observed'",
        K.TARGET_LEAKAGE,
        (f"{label}_observed",),
        False,
        1.0,
        "unused",
        table=_copied_label(label),
    )


_MAKERS: dict[str, Callable[[Contract, PipelineSpec], Scenario | Skipped]] = dict(
    zip(
        GENERIC_NAMES,
        (
            _unit_change,
            _rescale,
            _rename,
            _swap,
            _join_nulls,
            _sentinel,
            _timezone,
            _timezone_late,
            _duplicates,
            _label_copy,
        ),
    )
)


# --- injectors the demo's catalogue has no generic form of -----------------------------------------------


def _nulls_together(columns: tuple[str, ...]) -> TableInjector:
    """The same selected rows lose every one of `columns` (as a join that missed leaves them)."""

    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        rows = t.rows(frame)
        out, cells = frame.copy(), {}
        for column in columns:
            values = out[column].astype("Int64") if pd.api.types.is_integer_dtype(out[column].dtype) else out[column]
            out[column] = values.mask(rows)
            cells[column] = rows & frame[column].notna().to_numpy()
        return Injected(out, cells)

    return inject


def _moved_time(frame: pd.DataFrame, t: Target) -> Injected:
    """The time column moved by `magnitude` hours on every row."""
    column = str(t.column)
    out = frame.copy()
    out[column] = frame[column] + pd.Timedelta(hours=t.magnitude)
    return Injected(out, {column: frame[column].notna().to_numpy()})


def _copied_label(label: str) -> TableInjector:
    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        return Injected(frame.assign(**{f"{label}_observed": frame[label]}), {})

    return inject
