"""Failures nobody here wrote: the generators of `badgers` (pip install badgers) as pipeline drill scenarios.

Each generator runs at the library's own default parameters (severity `realistic`) and at half of them (`mild`),
on the columns it fits, in the newest batch, drawing from the scenario's seeded generator. Nothing here is tuned
to what the guard catches: a scenario names the generator, its parameters and the findings that would name the
failure right, and the drill scores what the loop made of it.

    generator (badgers)                   columns                    realistic     named right by
    MissingCompletelyAtRandom             every numeric feature      10% of each   null_spike / null_limit on it
    DummyMissingAtRandom                  every numeric feature      10% of each   null_spike / null_limit on it
    DummyMissingNotAtRandom               every numeric feature      10% of each   null_spike / null_limit on it
    ZScoreSamplingGenerator               every numeric feature      10 rows       out_of_range on it
    HypersphereSamplingGenerator          every numeric feature      10 rows       out_of_range on it
    RandomZerosGenerator                  every numeric feature      10 cells      sentinel on it
    SwapLettersGenerator                  every text feature         10% of rows   new_category / category_casing
    LeetSpeakGenerator                    every text feature         10% of rows   new_category / category_casing
    SwapCaseGenerator                     every text feature         10% of letters  category_casing / new_category
    RandomRepeatGenerator                 whole rows                 10 rows, 1-9x duplicate_keys (on the key; no key:
                                                                                   the time)
    RandomDropGenerator                   whole rows                 10 rows       volume_drop

How a generator's output meets a table: missingness, zeros and typos change cells in place; the outlier
generators append rows of generated feature values, which here take the place of as many of the batch's rows,
drawn at random (their key, time and label stay); the transmission errors run on the rows' positions, so the
rows they repeat or drop are whole rows of the batch; a cell already null reaches a generator as its column's
median and stays null. `mild` halves each share and count (at least one); every other parameter (how far an
outlier lies, how long a repeat runs) stays at the library's default.

A generator that refuses a batch (MAR and MNAR weigh rows by values, and a column of a few distinct values
leaves too few rows to draw from), or changes nothing in it (letters are swapped only in words of four letters or
more), raises `InjectionError`: the drill records the case as `inapplicable`, not as a failure of the loop.

Left out, and why: the drift generators (a population moving, which the guard warns of and does not block by
design); the in-distribution outliers (uniform instance-attribute and low-density sampling: values each column
already holds, a failure only of the joint distribution); the imbalance, causal and time-series shape generators
(trends, seasons, change points, patterns: the world changing, not the data breaking).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

from chaos.errors import InjectionError
from chaos.failures.generic import Skipped
from chaos.failures.registry import Injected, Scenario, TableInjector, Target
from controlplane.spec import PipelineSpec
from guard.contract import Contract
from guard.findings import Finding
from guard.kinds import FindingKind as K

__all__ = ["SEVERITIES", "BADGERS_NAMES", "ThirdPartyScenario", "badgers_scenarios", "installed"]

SEVERITIES = {"realistic": 1.0, "mild": 0.5}  # the library's defaults, and half of them
_NULLS = frozenset({K.NULL_SPIKE, K.NULL_LIMIT})
_SPELLINGS = frozenset({K.NEW_CATEGORY, K.CATEGORY_CASING})


@dataclass(frozen=True)
class ThirdPartyScenario(Scenario):
    """A failure a third-party generator made: named right by any of `kinds` on any of its columns (`columns`:
    () for a failure of the whole batch). `generator` and `parameters` say exactly what ran."""

    kinds: frozenset[K] = frozenset()
    generator: str = ""
    parameters: tuple[tuple[str, Any], ...] = ()

    def localizes(self, finding: Finding) -> bool:
        if finding.kind not in self.kinds:
            return False
        if finding.column is None and finding.params.get("key_columns"):
            return bool(set(finding.params["key_columns"]) & set(self.columns))
        return finding.column in self.columns if self.columns else True

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "kinds": sorted(k.value for k in self.kinds),
            "generator": self.generator,
            "parameters": dict(self.parameters),
        }


@dataclass(frozen=True)
class _Generator:
    short: str
    module: str
    name: str
    parameters: dict[str, float]  # the library's defaults (scaled by the severity)
    fits: str  # numeric | text | rows
    kinds: frozenset[K]
    quarantines: bool
    apply: Callable[[Any, pd.DataFrame, tuple[str, ...], dict[str, Any], np.random.Generator], Injected]


# the parameters that say how much a generator corrupts: a share of cells or rows, or a count of them (the others,
# such as how far an outlier lies or how long a repeat runs, stay at the library's defaults in both severities)
_AMOUNTS = frozenset(
    {"percentage_missing", "n_outliers", "swap_proba", "replacement_proba", "swapcase_proba", "n_repeats", "n_drops"}
)


def _scaled(defaults: dict[str, float], factor: float) -> dict[str, Any]:
    """Each amount times `factor` (a count at least one); every other parameter as the library sets it."""
    scaled = {k: (max(1, int(round(v * factor))) if isinstance(v, int) else v * factor) for k, v in defaults.items()}
    return {k: scaled[k] if k in _AMOUNTS else v for k, v in defaults.items()}


def _numbers(frame: pd.DataFrame, columns: tuple[str, ...]) -> np.ndarray:
    return frame[list(columns)].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _write_cells(frame: pd.DataFrame, columns: tuple[str, ...], before: np.ndarray, after: np.ndarray) -> Injected:
    """`frame` with the cells the generator changed written back, nulls as nulls, each column's dtype kept."""
    out, cells = frame.copy(), {}
    for j, column in enumerate(columns):
        changed = ~((before[:, j] == after[:, j]) | (np.isnan(before[:, j]) & np.isnan(after[:, j])))
        if not changed.any():
            continue
        values = out[column]
        if pd.api.types.is_integer_dtype(values.dtype):
            values = values.astype("Int64") if np.isnan(after[changed, j]).any() else values
            rounded = np.where(np.isnan(after[:, j]), np.nan, np.round(after[:, j]))
            out[column] = values.mask(changed, pd.array(rounded, dtype="Float64").astype("Int64"))
        else:
            out[column] = values.mask(changed, after[:, j])
        cells[column] = changed
    return Injected(out, cells)


def _in_place(
    generator: Any, frame: pd.DataFrame, columns: tuple[str, ...], params: dict[str, Any], _: Any
) -> Injected:
    """The generator changes cells where they are. Cells already null reach it as their column's median (some
    generators weigh rows by their values and cannot weigh a null) and stay null."""
    before = _numbers(frame, columns)
    medians = np.nan_to_num(np.nanmedian(np.where(np.isnan(before).all(axis=0), 0.0, before), axis=0))
    filled = np.where(np.isnan(before), medians, before)
    after, _y = generator.generate(filled, None, **params)
    return _write_cells(frame, columns, before, np.where(np.isnan(before), np.nan, np.asarray(after, dtype=float)))


def _appended(generator: Any, frame: pd.DataFrame, columns: tuple[str, ...], params: dict[str, Any], rng) -> Injected:
    """The generated rows' values take the place of as many of the batch's rows (complete ones), drawn at random."""
    before = _numbers(frame, columns)
    complete = ~np.isnan(before).any(axis=1)
    n = min(int(params["n_outliers"]), int(complete.sum()) // 2)
    if n < 1:
        return Injected(frame.copy(), {})
    after, _y = generator.generate(before[complete].copy(), None, **{**params, "n_outliers": n})
    outliers = np.asarray(after, dtype=float)[-n:]
    rows = rng.choice(np.flatnonzero(complete), size=n, replace=False)
    changed = before.copy()
    changed[rows] = outliers
    return _write_cells(frame, columns, before, changed)


def _typos(generator: Any, frame: pd.DataFrame, columns: tuple[str, ...], params: dict[str, Any], _: Any) -> Injected:
    out, cells = frame.copy(), {}
    for column in columns:
        present = out[column].notna().to_numpy()
        words = out[column][present].astype(str).tolist()
        typed, _y = generator.generate(list(words), None, **params)
        values = out[column].astype(object).to_numpy(copy=True)
        values[present] = typed
        changed = np.zeros(len(out), dtype=bool)
        changed[present] = np.asarray(typed, dtype=object) != np.asarray(words, dtype=object)
        kept = frame[column].dtype
        out[column] = pd.Series(
            values, index=out.index, dtype=object if isinstance(kept, pd.CategoricalDtype) else kept
        )
        cells[column] = changed
    return Injected(out, cells)


def _rows(generator: Any, frame: pd.DataFrame, columns: tuple[str, ...], params: dict[str, Any], _: Any) -> Injected:
    """The generator runs on the rows' positions: the rows it repeats or drops are whole rows of the batch."""
    positions, _y = generator.generate(np.arange(len(frame), dtype=float).reshape(-1, 1), None, **params)
    kept = np.asarray(positions, dtype=float).ravel().astype(int)
    out = frame.iloc[kept].reset_index(drop=True)
    removed = ~np.isin(np.arange(len(frame)), kept)
    return Injected(out, {}, rows_added=max(0, len(kept) - (len(frame) - int(removed.sum()))), removed=removed)


_MISSING = "badgers.generators.tabular_data.missingness.missingness"
_OUTLIERS = "badgers.generators.tabular_data.outliers.distribution_sampling"
_TEXT = "badgers.generators.text.typos"
_SERIES = "badgers.generators.time_series.transmission_errors"
_ZEROS = "badgers.generators.time_series.outliers"


def _outliers(short: str, name: str) -> _Generator:
    """An outlier generator of the library: rows of generated feature values, each far out on some feature."""
    return _Generator(
        short,
        _OUTLIERS,
        name,
        {"n_outliers": 10, "scale": 1.0},
        "numeric",
        frozenset({K.OUT_OF_RANGE}),
        True,
        _appended,
    )


_GENERATORS = (
    _Generator(
        "mcar", _MISSING, "MissingCompletelyAtRandom", {"percentage_missing": 0.1}, "numeric", _NULLS, True, _in_place
    ),
    _Generator(
        "mar", _MISSING, "DummyMissingAtRandom", {"percentage_missing": 0.1}, "numeric", _NULLS, True, _in_place
    ),
    # no default in the library: the share its two sibling generators default to
    _Generator(
        "mnar", _MISSING, "DummyMissingNotAtRandom", {"percentage_missing": 0.1}, "numeric", _NULLS, True, _in_place
    ),
    _outliers("zscore", "ZScoreSamplingGenerator"),
    _outliers("hypersphere", "HypersphereSamplingGenerator"),
    _Generator(
        "zeros", _ZEROS, "RandomZerosGenerator", {"n_outliers": 10}, "numeric", frozenset({K.SENTINEL}), True, _in_place
    ),
    _Generator("swap_letters", _TEXT, "SwapLettersGenerator", {"swap_proba": 0.1}, "text", _SPELLINGS, True, _typos),
    _Generator("leetspeak", _TEXT, "LeetSpeakGenerator", {"replacement_proba": 0.1}, "text", _SPELLINGS, True, _typos),
    _Generator("swap_case", _TEXT, "SwapCaseGenerator", {"swapcase_proba": 0.1}, "text", _SPELLINGS, True, _typos),
    _Generator(
        "repeat",
        _SERIES,
        "RandomRepeatGenerator",
        {"n_repeats": 10, "min_nb_repeats": 1, "max_nb_repeats": 10},
        "rows",
        frozenset({K.DUPLICATE_KEYS}),
        False,
        _rows,
    ),
    _Generator(
        "drop", _SERIES, "RandomDropGenerator", {"n_drops": 10}, "rows", frozenset({K.VOLUME_DROP}), False, _rows
    ),
)
BADGERS_NAMES = tuple(f"badgers_{g.short}_{severity}" for g in _GENERATORS for severity in SEVERITIES)


def installed() -> bool:
    try:
        import badgers  # noqa: F401
    except ImportError:
        return False
    return True


def badgers_scenarios(contract: Contract, spec: PipelineSpec) -> tuple[tuple[Scenario, ...], tuple[Skipped, ...]]:
    """Every generator at every severity on the columns of this pipeline it fits, and those that fit none."""
    if not installed():
        return (), tuple(Skipped(n, "badgers is not installed: pip install badgers") for n in BADGERS_NAMES)
    built: list[Scenario] = []
    skipped: list[Skipped] = []
    for generator in _GENERATORS:
        columns = _columns(generator.fits, contract, spec)
        for severity, factor in SEVERITIES.items():
            name = f"badgers_{generator.short}_{severity}"
            if columns is None:
                skipped.append(Skipped(name, f"no {generator.fits} feature for {generator.name}"))
            else:
                built.append(_scenario(name, generator, columns, _scaled(generator.parameters, factor)))
    return tuple(built), tuple(skipped)


def _columns(fits: str, contract: Contract, spec: PipelineSpec) -> tuple[str, ...] | None:
    if fits == "rows":
        keys = contract.key_columns or ((spec.training.time_column,) if spec.training.time_column else ())
        return tuple(keys)
    if fits == "numeric":
        found = [c for c in spec.training.numeric_features if contract.column(c) is not None]
    else:
        found = [c for c in spec.training.categorical_features if contract.column(c) is not None]
    return tuple(found) or None


def _scenario(name: str, generator: _Generator, columns: tuple[str, ...], params: dict[str, Any]) -> Scenario:
    said = ", ".join(f"{k}={v:g}" for k, v in params.items())
    where = "whole rows" if generator.fits == "rows" else ", ".join(columns)
    kind = sorted(generator.kinds, key=lambda k: k.value)[0]
    return ThirdPartyScenario(
        name,
        f"badgers {generator.name}({said}) on {where}",
        kind,
        () if kind is K.VOLUME_DROP else columns,
        False,
        1.0,
        "the library's parameters",
        table=_injector(generator, () if generator.fits == "rows" else columns, params),
        quarantines=generator.quarantines,
        kinds=generator.kinds,
        generator=generator.name,
        parameters=tuple(params.items()),
    )


def _injector(generator: _Generator, columns: tuple[str, ...], params: dict[str, Any]) -> TableInjector:
    def inject(frame: pd.DataFrame, t: Target) -> Injected:
        module = __import__(generator.module, fromlist=[generator.name])
        made = getattr(module, generator.name)(random_generator=t.rng)
        try:
            injected = generator.apply(made, frame, columns, params, t.rng)
        except ValueError as exc:  # the library's own refusal: too few rows or values of the kind it draws
            raise InjectionError(
                f"badgers {generator.name} cannot corrupt this batch of {len(frame)} rows ({exc})",
                "it fits columns with more rows and distinct values than these",
            ) from exc
        removed = 0 if injected.removed is None else int(injected.removed.sum())
        if not injected.corrupted_cells and not injected.rows_added and not removed:
            raise InjectionError(  # its own rules found nothing here: no word longer than three letters, say
                f"badgers {generator.name} changed nothing in this batch of {len(frame)} rows",
                "it fits columns with values of the kind it corrupts",
            )
        return injected

    return inject
