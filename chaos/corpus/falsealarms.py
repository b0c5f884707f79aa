"""The false-alarm walk: a real dataset's clean batches in time order against a rolling reference.

The reference is built from the first K batches; then every later batch, clean as published, is judged
against it and, when it passes, rolled into the reference window (the last N = K batches that passed).
A BLOCKED verdict on a clean batch is a false block. Then a few failures are injected, into the newest
batch only (judged against the reference of the batches before it) and into every row of the table
(judged as one snapshot against the same reference): a unit change, a 5-hour timezone shift of the event
timestamp, a renamed column, 25% nulls in the joined columns (a broken join), a copy of the label in a
new column. A `Judge` gives a verdict on (reference batches, candidate); the guard is one, peers are
others (`benchmarks/realdata_bench.py` adds pandera and evidently).

The guard reads each batch once: the table is written to one parquet file and split into batches in one
pass (`profiles.batches.split_batches`); the reference is merged from the stored batch profiles, never by
rereading rows. Injected candidates are written to their own file and read with `read_snapshot`.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, Sequence

import numpy as np
import pandas as pd

from chaos.corpus.realdata import RealDataset
from chaos.failures.injectors import rename, sentinel, swap_with, target_leakage, unit_change
from chaos.failures.registry import Target
from chaos.failures.selection import Selection
from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import Contract
from guard.findings import Finding, GuardReport
from guard.runner import run_guard
from guard.units import same_unit
from profiles.batches import split_batches
from profiles.reference import build_reference
from profiles.snapshot import Snapshot, read_snapshot
from remediations.sandbox import HealOutcome, heal_copy

__all__ = [
    "Batch",
    "Judge",
    "Outcome",
    "GuardJudge",
    "WalkResult",
    "Injection",
    "INJECTIONS",
    "walk",
    "load_batches",
    "inject",
    "partial_leak",
    "injected_outcomes",
    "true_cause",
    "true_unit",
    "named_right",
    "ROW_GROUP_ROWS",
]

ROW_GROUP_ROWS = 2_048  # small row groups, so windows straddle and skip them as in a large table
_SEED = 12


@dataclass(frozen=True)
class Batch:
    batch_id: str
    frame: pd.DataFrame
    snapshot: Snapshot  # the guard's view of the batch: read from the table file with the batch's window


@dataclass(frozen=True)
class Outcome:
    blocked: bool | None  # None: the tool could not give a verdict (an error)
    reasons: tuple[str, ...] = ()  # what blocked: "kind:column" for the guard, a check's name for peers
    heal: str | None = None  # the guard's heal of an injected failure (`GuardJudge.heal`); None: not tried


class Judge(Protocol):
    name: str

    def judge(self, reference: Sequence[Batch], candidate: Batch) -> Outcome: ...


@dataclass
class GuardJudge:
    """The guard: run_guard on the candidate against a Reference of the window's batches; blocked when a
    blocking finding (of a kind not in `ignore`) was raised."""

    contract: Contract
    name: str = "guard"
    reports: list[GuardReport] = field(default_factory=list)
    ignore: frozenset[str] = frozenset()  # finding kinds left out of the verdict (to measure the others alone)

    def judge(self, reference: Sequence[Batch], candidate: Batch) -> Outcome:
        built = build_reference([b.snapshot.batch for b in reference if b.snapshot.batch is not None])
        now_ms = int(candidate.snapshot.batch.end_ms or 0) if candidate.snapshot.batch else 0
        report = run_guard(
            with_repeats_counted(
                GuardContext(self.contract.dataset_urn, self.contract, candidate.snapshot, built, (), now_ms=now_ms)
            )
        )
        self.reports.append(report)
        reasons = tuple(sorted({_reason(f) for f in report.blocking if f.kind.value not in self.ignore}))
        return Outcome(bool(reasons), reasons)

    def heal(
        self,
        reference: Sequence[Batch],
        candidate: Batch,
        control: Outcome,
        workdir: Path,
        clean: pd.DataFrame | None = None,
    ) -> str:
        """The sandbox's heal of the candidate's last report, verified on the training view against the same
        reference: "healed" (exact corrections, nothing set aside), "quarantined N" (rows set aside, the
        cause left open), or why not. Only the findings the clean rows (`control`) do not raise are healed:
        those the injection caused (a check that blocks clean data blocks its heal as much, and is measured
        by the walk). Verified means the training view blocks on nothing the clean rows do not block on."""
        injected = tuple(
            f for f in self.reports[-1].blocking if f"{f.kind.value}:{f.column or '-'}" not in control.reasons
        )
        if not injected:
            return "-"
        built = build_reference([b.snapshot.batch for b in reference if b.snapshot.batch is not None])
        outcome = heal_copy(
            Path(candidate.snapshot.path), workdir / f"heal-{candidate.batch_id}", injected, self.contract, built
        )
        if not outcome.complete:
            why = [f"no playbook for {f.kind.value}" for f in outcome.unhealable] + [w for _, w in outcome.refused]
            return "not healed: " + "; ".join(why)[:120]
        view = read_snapshot(
            outcome.training_view,
            time_column=candidate.snapshot.batch.time_column if candidate.snapshot.batch else None,
        )
        now_ms = int(candidate.snapshot.batch.end_ms or 0) if candidate.snapshot.batch else 0
        verified = run_guard(
            with_repeats_counted(GuardContext(self.contract.dataset_urn, self.contract, view, built, (), now_ms=now_ms))
        )
        left = {f"{f.kind.value}:{f.column or '-'}" for f in verified.blocking} - set(control.reasons)
        if left:
            return "not verified: " + ", ".join(sorted(left))
        exact = "" if clean is None else f", {_differences(outcome, clean)}"
        if outcome.quarantine is not None:
            return f"quarantined {outcome.quarantine.rows} rows{exact}"
        return f"healed{exact}"


def _reason(finding: Finding) -> str:
    """kind:column, and the unit a unit mismatch names (kind:column:unit)."""
    reason = f"{finding.kind.value}:{finding.column or '-'}"
    unit = finding.params.get("actual_unit") if finding.kind.value == "unit_mismatch" else None
    return f"{reason}:{unit}" if unit else reason


@dataclass
class WalkResult:
    dataset: str
    tool: str
    batches: int  # clean batches judged (after the first K)
    false_blocks: list[tuple[str, tuple[str, ...]]]  # (batch id, reasons)
    errors: list[str]
    window: list[Batch]  # the reference window at the end of the walk

    @property
    def reasons(self) -> dict[str, int]:
        counted: dict[str, int] = {}
        for _, reasons in self.false_blocks:
            for reason in reasons:
                counted[reason] = counted.get(reason, 0) + 1
        return dict(sorted(counted.items(), key=lambda item: (-item[1], item[0])))


def load_batches(dataset: RealDataset, workdir: Path, cadence: str | None = None) -> list[Batch]:
    """The dataset's batches in time order, with the guard's snapshot of each (one pass over one file)."""
    chosen = cadence or dataset.cadence
    frames = dataset.batches(chosen)
    path = workdir / f"{dataset.name}.parquet"
    dataset.frame().to_parquet(path, index=False, row_group_size=ROW_GROUP_ROWS)
    snapshots = split_batches(path, time_column=dataset.time_column, cadence=chosen)
    ids = [s.batch.batch_id if s.batch else "" for s in snapshots]
    if ids != [batch_id for batch_id, _ in frames]:
        raise ValueError(f"{dataset.name}: split_batches cut {ids[:3]}..., the dataset {[b for b, _ in frames][:3]}...")
    return [Batch(batch_id, frame, snapshot) for (batch_id, frame), snapshot in zip(frames, snapshots)]


def walk(dataset: RealDataset, batches: Sequence[Batch], judge: Judge, *, limit: int | None = None) -> WalkResult:
    """Judge every clean batch after the first K; roll each one that passes into the last-N window."""
    k = dataset.reference_batches
    window = list(batches[:k])
    false_blocks, errors = [], []
    judged = list(batches[k:])[:limit]
    for batch in judged:
        outcome = judge.judge(window, batch)
        if outcome.blocked is None:
            errors.append(batch.batch_id)
        elif outcome.blocked:
            false_blocks.append((batch.batch_id, outcome.reasons))
        else:
            window = (window + [batch])[-k:]
    return WalkResult(dataset.name, judge.name, len(judged), false_blocks, errors, window)


# --- injected failures ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Injection:
    name: str
    apply: Callable[[pd.DataFrame, RealDataset], pd.DataFrame]
    expected: str  # the true cause, as a finding kind (what phase 2 must name)


def _target(dataset: RealDataset, column: str) -> Target:
    return Target(column, 1.0, 1.0, Selection(), dataset.contract(), np.random.default_rng(_SEED))


def _unit_at(slot: int) -> Callable[[pd.DataFrame, RealDataset], pd.DataFrame]:
    def apply(frame: pd.DataFrame, dataset: RealDataset) -> pd.DataFrame:
        column, to_unit = _UNIT_CHANGES[dataset.name][slot]
        return unit_change(to_unit)(frame, _target(dataset, column)).frame

    return apply


def _timezone(frame: pd.DataFrame, dataset: RealDataset) -> pd.DataFrame:
    """Local wall time (UTC-5) written as if it were UTC: every event time 5 hours early."""
    return frame.assign(**{dataset.time_column: frame[dataset.time_column] - pd.Timedelta(hours=5)})


def _rename(frame: pd.DataFrame, dataset: RealDataset) -> pd.DataFrame:
    column = _JOINED[dataset.name][0]
    return rename(f"{column}_v2")(frame, _target(dataset, column)).frame


def _broken_join(frame: pd.DataFrame, dataset: RealDataset) -> pd.DataFrame:
    """25% of rows lose every joined column (the same rows for all of them, as a join that missed)."""
    rows = np.random.default_rng(_SEED).random(len(frame)) < 0.25
    return frame.assign(**{column: frame[column].mask(rows) for column in _JOINED[dataset.name]})


def _label_copy(frame: pd.DataFrame, dataset: RealDataset) -> pd.DataFrame:
    label = dataset.label
    assert label is not None
    return frame.assign(**{f"{label}_observed": frame[label]})


# per dataset, the unit changes injected (column, the unit it is written in instead), in pint's spelling:
# offsets (degC <-> degF, kelvin), ratios (m/s -> km/h, hPa -> inHg), a zero-inflated column (precipitation
# mm -> inch) and a point-mass column (visibility m -> km, its 16,100 m moving to 16.1)
_UNIT_CHANGES = {
    "seattle_weather": (("temp_max", "degF"), ("wind", "km/h"), ("precipitation", "inch"), ("temp_min", "kelvin")),
    "pnw_temps": (("sf_temp", "degC"), ("seattle_temp", "degC"), ("sf_temp", "kelvin"), ("seattle_temp", "kelvin")),
    "greensboro_tmy": (("temp_air", "degF"), ("pressure", "inHg"), ("visibility", "km"), ("wind_speed", "mph")),
}
UNIT_SLOTS = 4
_JOINED = {
    "seattle_weather": ("temp_min", "wind", "precipitation"),
    "pnw_temps": ("sf_temp",),
    "greensboro_tmy": ("temp_air", "temp_dew", "relative_humidity", "wind_speed"),
}

INJECTIONS: tuple[Injection, ...] = (
    Injection("unit", _unit_at(0), "unit_mismatch"),
    Injection("unit #2", _unit_at(1), "unit_mismatch"),
    Injection("unit #3", _unit_at(2), "unit_mismatch"),
    Injection("unit #4", _unit_at(3), "unit_mismatch"),
    Injection("timezone+5h", _timezone, "timestamp_shift"),
    Injection("rename", _rename, "column_renamed"),
    Injection("join 25% nulls", _broken_join, "null_spike"),
    Injection("label copy", _label_copy, "target_leakage"),
)


# --- root-cause injections (branch guard-causes): a swap, a sentinel, leakage in part of the rows -----


def _swap(frame: pd.DataFrame, dataset: RealDataset) -> pd.DataFrame:
    """Two contracted columns written into each other's place, on every row."""
    a, b = _SWAPS[dataset.name]
    return swap_with(b)(frame, _target(dataset, a)).frame


def _sentinel(frame: pd.DataFrame, dataset: RealDataset) -> pd.DataFrame:
    """A placeholder for 'unknown' written on 20% of rows."""
    column, value = _SENTINELS[dataset.name]
    target = Target(column, 1.0, 0.2, Selection(), dataset.contract(), np.random.default_rng(_SEED))
    return sentinel(value)(frame, target).frame


def partial_leak(frame: pd.DataFrame, dataset: RealDataset, share: float = 0.5) -> pd.DataFrame:
    """A feature recomputed from the outcome on a seeded share of the rows, half by default (its values re-dealt
    in the label's order)."""
    contract = dataset.contract()
    roles = Contract(
        contract.dataset_urn,
        contract.columns,
        contract.label_column,
        label_timestamp_column=dataset.time_column,
        event_timestamp_column=dataset.time_column,
    )
    target = Target(_LEAKS[dataset.name], 1.0, share, Selection(), roles, np.random.default_rng(_SEED))
    return target_leakage(frame, target).frame


_SWAPS = {
    "seattle_weather": ("temp_max", "temp_min"),
    "pnw_temps": ("sf_temp", "seattle_temp"),
    "greensboro_tmy": ("temp_air", "temp_dew"),
}
_SENTINELS = {
    "seattle_weather": ("wind", -1.0),
    "pnw_temps": ("sf_temp", 9999.0),
    "greensboro_tmy": ("temp_air", -9999.0),
}
_LEAKS = {"seattle_weather": "temp_max", "pnw_temps": "hour_local", "greensboro_tmy": "temp_air"}
CAUSE_INJECTIONS: tuple[Injection, ...] = (
    Injection("column swap", _swap, "columns_swapped"),
    Injection("sentinel 20%", _sentinel, "sentinel"),
    Injection("leak 50% rows", partial_leak, "target_leakage"),
)
INJECTIONS = (*INJECTIONS, *CAUSE_INJECTIONS)


def _cause_columns(dataset: RealDataset) -> dict[str, tuple[str, ...]]:
    return {
        "column swap": _SWAPS[dataset.name],
        "sentinel 20%": (_SENTINELS[dataset.name][0],),
        "leak 50% rows": (_LEAKS[dataset.name],),
    }


def true_cause(dataset: RealDataset, injection: str) -> tuple[str, tuple[str, ...]]:
    """(finding kind, the columns it may name) that an injection's true cause is."""
    label = dataset.label or ""
    columns = {
        "timezone+5h": (dataset.time_column,),
        "rename": (_JOINED[dataset.name][0],),
        "join 25% nulls": _JOINED[dataset.name],
        "label copy": (f"{label}_observed",),
        **_cause_columns(dataset),
    }
    columns.update({name: (column,) for name, (column, _) in zip(_UNIT_NAMES, _UNIT_CHANGES[dataset.name])})
    kind = next(i.expected for i in INJECTIONS if i.name == injection)
    return kind, columns[injection]


def true_unit(dataset: RealDataset, injection: str) -> str | None:
    """The unit a unit-change injection wrote its column in (None for other injections)."""
    changes = dict(zip(_UNIT_NAMES, _UNIT_CHANGES[dataset.name]))
    return changes[injection][1] if injection in changes else None


_UNIT_NAMES = ("unit", "unit #2", "unit #3", "unit #4")


def inject(frame: pd.DataFrame, dataset: RealDataset, injection: Injection, workdir: Path, name: str) -> Batch:
    """The corrupted rows as a batch: the frame, and the guard's snapshot of it written to its own file."""
    corrupted = injection.apply(frame, dataset).reset_index(drop=True)
    path = workdir / f"{dataset.name}-{name}.parquet"
    corrupted.to_parquet(path, index=False, row_group_size=ROW_GROUP_ROWS)
    return Batch(name, corrupted, read_snapshot(path, time_column=dataset.time_column, batch_id=name))


def _differences(outcome: HealOutcome, clean: pd.DataFrame) -> str:
    """How the published table compares with the clean rows, cell by cell, outside the quarantined rows: numbers
    to a relative 1e-9 (a conversion and its inverse round in binary: 5 degC -> 41 degF -> 5.000000000000001)."""
    published = pd.read_parquet(outcome.healed_path)
    if len(published) != len(clean):
        return f"{len(published)} rows published of {len(clean)}"
    keep = np.ones(len(clean), dtype=bool)
    if outcome.quarantine is not None:
        keep[pd.read_parquet(outcome.quarantine.path)["row"].to_numpy()] = False
    differ = 0
    for column in clean.columns:
        if column not in published.columns:
            return f"{column!r} not published"
        a, b = published[column][keep].reset_index(drop=True), clean[column][keep].reset_index(drop=True)
        same = (a == b) | (a.isna() & b.isna())
        if pd.api.types.is_float_dtype(a) and pd.api.types.is_float_dtype(b):
            same |= pd.Series(np.isclose(a.to_numpy(), b.to_numpy(), rtol=1e-9, atol=0.0))
        differ += int((~same).sum())
    return "every other cell restored" if differ == 0 else f"{differ} cells differ from the clean rows"


def _control(
    judge: GuardJudge,
    window: Sequence[Batch],
    controls: dict[tuple[str, str], Outcome],
    scope: str,
    table: pd.DataFrame,
    dataset: RealDataset,
    directory: Path,
) -> Outcome:
    """What the guard blocks on the clean rows of a scope (the clean newest batch, or the clean table)."""
    key = (judge.name, scope)
    if key not in controls:
        clean = Injection("clean", lambda frame, _: frame, "")
        reports = list(judge.reports)
        controls[key] = judge.judge(window, inject(table, dataset, clean, directory, f"clean-{scope}"))
        judge.reports[:] = reports  # the candidate's report stays the last one
    return controls[key]


def injected_outcomes(
    dataset: RealDataset,
    batches: Sequence[Batch],
    judges: Sequence[Judge],
    windows: dict[str, list[Batch]],
    workdir: Path | None = None,
) -> list[tuple[str, str, str, Outcome]]:
    """(injection, scope, tool, outcome) for each injection into the newest batch and into all rows, after
    ("clean", "batch", tool, outcome): the clean newest batch, the control.

    The newest batch is judged against each tool's reference window before it; the whole table against
    each tool's window at the end of its walk.
    """
    owned = tempfile.TemporaryDirectory(prefix="realdata-") if workdir is None else None
    directory = Path(owned.name) if owned else Path(workdir)  # type: ignore[arg-type]
    newest = batches[-1]
    table = pd.concat([b.frame for b in batches], ignore_index=True)
    results = []
    try:
        controls = {}
        for judge in judges:  # the control: the clean newest batch (a tool that blocks it detects nothing)
            window = [b for b in windows[judge.name] if b.batch_id != newest.batch_id]
            results.append(("clean", "batch", judge.name, judge.judge(window, newest)))
            controls[(judge.name, "batch")] = results[-1][3]
        for injection in INJECTIONS:
            for scope, rows in (("batch", newest.frame), ("table", table)):
                candidate = inject(rows, dataset, injection, directory, f"{injection.name}-{scope}".replace(" ", "_"))
                for judge in judges:
                    window = [b for b in windows[judge.name] if b.batch_id != newest.batch_id]
                    outcome = judge.judge(window, candidate)
                    if isinstance(judge, GuardJudge) and outcome.blocked:
                        control = _control(judge, window, controls, scope, table, dataset, directory)
                        outcome = Outcome(
                            outcome.blocked, outcome.reasons, judge.heal(window, candidate, control, directory, rows)
                        )
                    results.append((injection.name, scope, judge.name, outcome))
    finally:
        if owned:
            owned.cleanup()
    return results


def named_right(reasons: Sequence[str], dataset: RealDataset, injection: str) -> bool:
    """A blocking reason names the true cause: its kind, on (one of) the corrupted column(s), and for a unit
    change the unit the column was really written in (any spelling of it)."""
    kind, columns = true_cause(dataset, injection)
    unit = true_unit(dataset, injection)
    for reason in reasons:
        parts = reason.split(":")
        if (
            parts[0] == kind
            and parts[1] in columns
            and (unit is None or (len(parts) > 2 and same_unit(parts[2], unit)))
        ):
            return True
    return False
