"""Statistics the checks share, computed from a batch's values and a reference's profile: one definition each.

- distances of a batch's values from a reference column's distribution (`ks_distance`, with its sampling
  noise `ks_noise`) and the share of values the reference held (`reference_share`);
- the highest null share a clean batch of a column reaches (`natural_null_share`): the share of rows a partial
  rename may leave empty; the reference's null rate of a column with the spread a clean batch's share has about it
  (`null_rate`): the nulls check's evidence; the chance that so many of a batch's rows hold what the reference's
  rows never held in those columns, a null or a zero (`never_seen_chance`): the evidence across columns; the chance
  that a value stands on so many rows in a row by chance (`run_chance`): a feed stuck, or a value merely repeated;
- what kind of column a profile is (`is_categorical`) and the form two spellings of a category share
  (`normalize_category`);
- the association of a feature with the label (`association`, `mapping_score`): how well one predicts the
  other out of sample;
- the hour-of-day relation between a timestamp and an hour column (`learned_offsets`, `hour_of_shift`).

A check reads these; no check imports another check (`guard.causes` alone settles which finding explains which).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binom, norm

from guard.policy import DEFAULT as POLICY
from guard.policy import Policy
from profiles.profile import ColumnProfile, DatasetProfile
from profiles.reference import Reference

__all__ = [
    "SortedValues",
    "ks_distance",
    "ks_noise",
    "numeric_values",
    "reference_share",
    "normalize_category",
    "is_categorical",
    "natural_null_share",
    "NullRate",
    "null_rate",
    "NeverSeen",
    "never_seen_chance",
    "run_chance",
    "association",
    "association_fit",
    "covered",
    "mapping_fit",
    "mapping_score",
    "is_number",
    "MAX_BINS",
    "HOURS",
    "learned_offsets",
    "on_one_hour",
    "learned_share",
    "hour_of_shift",
    "hour_of_shares",
    "signed",
]

_SEED = 0  # the shuffle that splits the sampled rows in two for the mapping score
_GRID = np.linspace(0.01, 0.99, 99)


def numeric_values(values: pd.Series) -> np.ndarray:
    """The finite numbers of a column, as float64."""
    floats = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return floats[np.isfinite(floats)]


class SortedValues:
    """A column's values sorted, and their percentiles when first asked: what `ks_distance` reads of them, taken
    once for a column compared with several references."""

    def __init__(self, values: np.ndarray) -> None:
        self.ordered = np.sort(values)

    @functools.cached_property
    def percentiles(self) -> np.ndarray:
        return np.quantile(self.ordered, _GRID)


def ks_distance(values: np.ndarray | SortedValues, reference: ColumnProfile) -> float | None:
    """The largest gap between the values' empirical CDF and the reference's (from its quantile sketch, or its
    profiled quantiles), over the reference's and the values' percentiles; None without either."""
    sample = values if isinstance(values, SortedValues) else SortedValues(values)
    if not len(sample.ordered):
        return None
    if reference.sketch is not None and reference.sketch.n:
        points = np.unique(
            np.concatenate([np.asarray(reference.sketch.quantiles(_GRID), dtype=np.float64), sample.percentiles])
        )
        expected = reference.sketch.ranks(points)
    elif reference.quantiles:
        points = np.array([v for _, v in reference.quantiles], float)
        expected = np.array([q for q, _ in reference.quantiles], float)
    else:
        return None
    seen = np.searchsorted(sample.ordered, points, side="right") / len(sample.ordered)
    return float(np.max(np.abs(seen - expected)))


def ks_noise(rows: int) -> float:
    """The two-sample KS distance clean data stays under at 99.9% (the batch's rows; the reference's many)."""
    return 1.95 / math.sqrt(rows) if rows else math.inf


def reference_share(reference: ColumnProfile, value: float) -> tuple[float, bool] | None:
    """(share of the reference's values equal to `value`, exact?): exactly 0 outside its range, exact for 0
    from the zero count, else the quantile sketch's mass (+-1.65%); None when the profile cannot say."""
    if (
        reference.minimum is not None
        and reference.maximum is not None
        and not (reference.minimum <= value <= reference.maximum)
    ):
        return 0.0, True
    if value == 0 and reference.zero_share is not None:
        return reference.zero_share, True
    sketch = reference.sketch
    if sketch is None or not sketch.n:
        return None
    inclusive, exclusive = sketch.ranks([value]), sketch.ranks([value], inclusive=False)
    return max(0.0, float(inclusive[0] - exclusive[0])), False


def natural_null_share(reference: Reference | DatasetProfile, name: str, rows: int) -> float:
    """The highest null share of column `name` a clean batch of `rows` rows reaches: the merged reference's share;
    against a batch `Reference`, at least the highest share a reference batch had, plus the largest step between
    consecutive batches (nulls that come and go by the batch), plus three binomial standard errors at `rows`."""
    profile = reference.profile if isinstance(reference, Reference) else reference
    column = profile.columns.get(name)
    merged = column.null_fraction if column is not None else 0.0
    shares = [summary.null_share for summary in reference.variation(name)] if isinstance(reference, Reference) else []
    if not shares:
        return merged
    step = max((abs(b - a) for a, b in zip(shares, shares[1:])), default=0.0)
    high = min(1.0, max(shares) + step)  # a share: a column null on every row of some batch reaches 1, no further
    return min(1.0, max(merged, high + 3.0 * math.sqrt(high * (1 - high) / max(rows, 1))))


@dataclass(frozen=True)
class NullRate:
    """What the reference says of a column's null share in the next batch of `rows` rows: the level it is at (the
    rate over the reference's rows, or the newest batch's share where the share has risen to it, plus the mean
    rise from batch to batch where it rises: a rate that trends, as figures not yet reported in the latest years;
    never under the rule of three's 3 / N for a column never null in N rows: an upper 95% bound after N rows
    without one) and the standard deviation a clean batch's share has about that level: the binomial sampling
    error at `rows`, the spread between the reference's batches beyond their own sampling error (nulls that come
    and go by the batch, a column null on every row of a stretch of batches), and the spread of its steps from one batch to
    the next."""

    rate: float
    spread: float

    def tail(self, share: float) -> float:
        """The chance a clean batch's share reaches `share` or more (one-sided, normal): 1 at or under the rate."""
        if share <= self.rate:
            return 1.0
        return float(norm.sf((share - self.rate) / self.spread)) if self.spread > 0 else 0.0


def null_rate(reference: Reference | DatasetProfile, name: str, rows: int, *, same_rows: bool = False) -> NullRate:
    """The reference's evidence on column `name`'s null share in a batch of `rows` rows (see `NullRate`). A bare
    profile, or the reference's own rows read again (`same_rows`), is not a sample: its share exactly, no spread."""
    if same_rows or not isinstance(reference, Reference):
        column = reference.columns.get(name)
        return NullRate(column.null_fraction if column is not None else 0.0, 0.0)
    column = reference.profile.columns.get(name)
    seen = column.row_count if column is not None else 0
    ordered = sorted(reference.batches, key=lambda b: b.end_ms if b.end_ms is not None else -1)
    batches = [(b.columns[name].null_share, b.rows) for b in ordered if name in b.columns and b.rows > 0]
    total = sum(n for _, n in batches)
    pooled = sum(share * n for share, n in batches) / total if total else (column.null_fraction if column else 0.0)
    steps = [later - earlier for (earlier, _), (later, _) in zip(batches, batches[1:])]
    rise = max(0.0, sum(steps) / len(steps)) if steps else 0.0
    level = max(pooled, batches[-1][0] + rise if batches else 0.0)
    rate = min(1.0, max(level, 3.0 / max(seen, 1)))
    between = 0.0
    if len(batches) >= 2:
        spread = sum(n * (share - pooled) ** 2 for share, n in batches) / total
        sampling = len(batches) * pooled * (1.0 - pooled) / total  # what binomial draws alone spread them by
        between = max(0.0, spread - sampling)
    stepping = sum((d - rise) ** 2 for d in steps) / len(steps) if len(steps) >= 2 else 0.0
    return NullRate(rate, math.sqrt(between + stepping + rate * (1.0 - rate) / max(rows, 1)))


@dataclass(frozen=True)
class NeverSeen:
    """Rows of a batch holding, in some column, what the reference's rows never held in it (a null, a zero):
    `rows` of `seen` (the rows looked at), against `rate`, the most such rows a clean batch holds by the
    reference's evidence (the rule of three's 3 / N after N rows without one: an upper 95% bound), and `chance`,
    the exact binomial chance that a clean batch holds `rows` or more of `seen` at that rate. Rows, not cells:
    what comes a whole row at a time counts once, so columns that fail together are not counted as evidence
    apart."""

    rows: int
    seen: int
    reference_rows: int  # the N of the rule of three
    rate: float
    chance: float

    @property
    def share(self) -> float:
        return self.rows / self.seen if self.seen else 0.0


def never_seen_chance(rows: int, seen: int, reference_rows: int) -> NeverSeen:
    """`rows` of `seen` rows hold what none of the reference's `reference_rows` rows did (see `NeverSeen`).
    Defined at every edge: no rows seen, none with a null, every one with a null, an empty reference (rate 1)."""
    if not 0 <= rows <= seen:
        raise ValueError(f"rows holding it must be between 0 and the {seen} rows seen, not {rows}")
    rate = min(1.0, 3.0 / reference_rows) if reference_rows > 0 else 1.0
    chance = float(binom.sf(rows - 1, seen, rate)) if rows > 0 else 1.0
    return NeverSeen(rows, seen, reference_rows, rate, min(1.0, chance))


def run_chance(run: int, rows: int, share: float) -> float:
    """The chance that a value each of `rows` rows holds with chance `share`, each row apart from the others, stands
    on `run` rows in a row somewhere among them: at most the places such a run can start times `share` ** `run` (the
    union bound). Defined at every edge: a run of one row, or none, is no evidence (1); a run longer than the rows
    cannot happen (0)."""
    if run <= 1:
        return 1.0
    if run > rows:
        return 0.0
    return min(1.0, (rows - run + 1) * min(1.0, max(0.0, share)) ** run)


def normalize_category(value: str) -> str:
    """The form two spellings of one category share: trimmed, single-spaced, case-folded."""
    return " ".join(value.split()).casefold()


def is_categorical(profile: ColumnProfile) -> bool:
    """Counted values that repeat: not an identifier or free text (at most one distinct value per two rows)."""
    if profile.value_counts is None:
        return False
    return 2 * len(profile.value_counts) <= profile.row_count - profile.null_count


MAX_BINS = 100  # numeric features with more distinct values are binned by quantile for the mapping score


def association(feature: pd.Series, label: pd.Series, *, seed: int = _SEED) -> dict[str, float]:
    """The leakage scores of feature -> label; undefined ones (a constant side) are left out."""
    scores, coverage = association_fit(feature, label, seed=seed)
    return covered(scores, coverage)


def association_fit(feature: pd.Series, label: pd.Series, *, seed: int = _SEED) -> tuple[dict[str, float], float]:
    """The leakage scores of feature -> label with the mapping scored whatever the share of rows its halves cover
    (undefined ones left out), and that share: `association` is `covered` of it."""
    mapping, coverage = mapping_fit(feature, label, seed=seed)
    scores = {"mapping": mapping}
    if is_number(feature) and is_number(label):
        x, y = feature.astype(float), label.astype(float)
        pearson, spearman = _pearson(x.to_numpy(), y.to_numpy()), _pearson(x.rank().to_numpy(), y.rank().to_numpy())
        scores["correlation"] = max(abs(pearson), abs(spearman))
    return {key: float(value) for key, value in scores.items() if not math.isnan(value)}, coverage


def covered(scores: dict[str, float], coverage: float) -> dict[str, float]:
    """The scores of `association_fit` as `association` gives them: the mapping 0 where its halves cover less than
    `policy.leakage_min_coverage` of the rows (an identifier has no mapping to learn)."""
    if coverage < POLICY.leakage_min_coverage:
        return {"mapping": 0.0, **{key: value for key, value in scores.items() if key != "mapping"}}
    return dict(scores)


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    dx, dy = x - x.mean(), y - y.mean()  # sums of products, not BLAS dot: no thread pool to wake up
    scale = math.sqrt(float((dx * dx).sum()) * float((dy * dy).sum()))
    return float((dx * dy).sum()) / scale if scale > 0 else math.nan


def mapping_score(feature: pd.Series, label: pd.Series, *, seed: int = _SEED) -> float:
    """Out-of-sample predictability of the label from the feature's value: ~0 unrelated, ~1 determined."""
    score, coverage = mapping_fit(feature, label, seed=seed)
    if coverage < POLICY.leakage_min_coverage:
        return 0.0  # most values are new to the other half (an identifier): no mapping to learn
    return score


def mapping_fit(feature: pd.Series, label: pd.Series, *, seed: int = _SEED) -> tuple[float, float]:
    """(the mapping score over the rows whose value the other half saw, whatever their share; that share): the
    score `mapping_score` gives where the share reaches `policy.leakage_min_coverage`."""
    keys = pd.Series(_categories(feature))
    half = np.random.default_rng(seed).permutation(len(keys)) % 2 == 0
    numeric = is_number(label)
    y = pd.Series(label.to_numpy(dtype=float, na_value=np.nan) if numeric else label.astype(str).to_numpy())
    guess = pd.concat([_predict(keys, y, half, numeric), _predict(keys, y, ~half, numeric)]).sort_index()
    seen = guess.notna().to_numpy()
    coverage = float(seen.mean()) if len(seen) else math.nan
    if len(seen) and not seen.any():
        return math.nan, coverage  # no value seen in both halves: nothing to score
    return _fitted(y[seen], guess[seen], numeric), coverage


def _fitted(y: pd.Series, guess: pd.Series, numeric: bool) -> float:
    """How much better the guesses are than no feature: sqrt(R²) for a number, the error removed over the mode."""
    if numeric:
        total = float(((y - y.mean()) ** 2).sum())
        return math.sqrt(max(0.0, 1.0 - float(((y - guess) ** 2).sum()) / total)) if total else math.nan
    base = float(y.value_counts(normalize=True).iloc[0])
    return max(0.0, (float((guess == y).mean()) - base) / (1.0 - base)) if base < 1.0 else math.nan


def _predict(keys: pd.Series, y: pd.Series, train: np.ndarray, numeric: bool) -> pd.Series:
    """Predict y outside `train` by the per-key mean (or mode) inside it; a key it never saw gets NaN."""
    known, target = keys[train], y[train]
    if numeric:
        table = target.groupby(known).mean()
    else:
        pairs = pd.DataFrame({"key": known, "y": target}).value_counts().reset_index()
        table = pairs.drop_duplicates("key").set_index("key")["y"]  # value_counts sorts most frequent first
    return keys[~train].map(table)


def _categories(feature: pd.Series) -> np.ndarray:
    """The feature's values as category codes; many-valued numbers cut into quantile bins first."""
    if is_number(feature) and feature.nunique() > MAX_BINS:
        return pd.qcut(feature.astype(float), MAX_BINS, labels=False, duplicates="drop").to_numpy()
    codes, _ = pd.factorize(feature.astype(str) if not is_number(feature) else feature)
    return codes


HOURS = 24


def on_one_hour(hours: tuple[int, ...] | None, *, policy: Policy = POLICY) -> bool:
    """The reference's rows all but fall on one hour of the day (`policy.hour_of_learned` of them: a daily, weekly or
    monthly table stamped at midnight). Each row of a batch is then a witness of its own: ten rows off that hour
    are as plain a move as twenty spread over the day; and no column can be an hour of that timestamp, since its
    hour never varies (a constant column would read as one)."""
    if not hours or not sum(hours):
        return False
    return max(hours) / sum(hours) >= policy.hour_of_learned


def learned_offsets(counts: tuple[int, ...], least: float | None = None) -> set[int] | None:
    """The offsets (H - hour(T)) mod 24 the reference holds: one, or two adjacent ones (DST); None if H is not
    an hour of T (`least`: the share of rows they must hold, `policy.hour_of_learned` unless given)."""
    found = _learned_pair(counts)
    if found is None or found[1] < (POLICY.hour_of_learned if least is None else least):
        return None
    pair, _ = found
    hours = np.asarray(counts[:HOURS], float)
    total = hours.sum()
    return {k for k in (pair, (pair + 1) % HOURS) if hours[k] / total >= 0.005}


def learned_share(counts: tuple[int, ...]) -> float | None:
    """The share of the reference's rows on its most held offset and the adjacent one it shares most with: what
    `learned_offsets` compares with `policy.hour_of_learned`; None where H cannot be an hour of T (a value off the
    hours, or fewer rows than hours)."""
    found = _learned_pair(counts)
    return None if found is None else found[1]


def _learned_pair(counts: tuple[int, ...]) -> tuple[int, float] | None:
    hours, outside = np.asarray(counts[:HOURS], float), counts[HOURS]
    total = hours.sum()
    if outside or total < HOURS:
        return None
    best = int(np.argmax(hours))
    pair = best if hours[(best - 1) % HOURS] < hours[(best + 1) % HOURS] else (best - 1) % HOURS
    return pair, float((hours[pair] + hours[(pair + 1) % HOURS]) / total)


def hour_of_shares(learned: set[int], batch: tuple[int, ...]) -> tuple[float, float, float] | None:
    """(the batch's rows, their share within an hour of the `learned` offsets, the largest share within an hour of
    those offsets moved by any k, 0 included): what `hour_of_shift` compares with `policy.shift_min_relation_rows`,
    `policy.hour_of_holds` and `policy.hour_of_moved`; None for a batch of no rows."""
    observed = np.asarray(batch[:HOURS], float)
    total = observed.sum() + batch[HOURS]
    if not total:
        return None
    tolerant = {(k + d) % HOURS for k in learned for d in (-1, 0, 1)}
    moved = max(observed[list({(k + m + d) % HOURS for k in learned for d in (-1, 0, 1)})].sum() for m in range(HOURS))
    return float(total), float(observed[list(tolerant)].sum() / total), float(moved / total)


def hour_of_shift(
    reference: tuple[int, ...], batch: tuple[int, ...], *, policy: Policy = POLICY
) -> tuple[int, bool] | None:
    """(how far (H - hour(T)) moved, in hours mod 24 as -11..12 (0: holds), pinned to the hour?); None when not
    a learned relation or the batch is too small or moved only in part.

    A local hour column moves by an hour at each daylight-saving change: a batch's offset may lawfully sit an
    hour from the reference's, so a move read from one offset is known within an hour only. It is pinned when
    the hour column is the UTC hour (offset 0: no daylight saving), or when the reference and the batch both
    hold the two offsets of both regimes (k, k + 1: the move maps one pair onto the other)."""
    learned = learned_offsets(reference, least=policy.hour_of_learned)
    observed = np.asarray(batch[:HOURS], float)
    total = observed.sum() + batch[HOURS]
    if learned is None or total < policy.shift_min_relation_rows:
        return None
    tolerant = {(k + d) % HOURS for k in learned for d in (-1, 0, 1)}
    if observed[list(tolerant)].sum() / total >= policy.hour_of_holds:
        return 0, True

    def share(move: int, reach: tuple[int, ...]) -> float:
        return observed[list({(k + move + d) % HOURS for k in learned for d in reach})].sum() / total

    tolerated = [share(move, (-1, 0, 1)) >= policy.hour_of_moved for move in range(HOURS)]  # DST moves an hour
    exact = [share(move, (0,)) if ok else -1.0 for move, ok in enumerate(tolerated)]
    move = int(np.argmax(exact))
    if not tolerated[move]:
        return None
    both_regimes = (
        len(learned) == 2
        and exact[move] >= policy.hour_of_moved
        and min(observed[(k + move) % HOURS] for k in learned) >= policy.dst_regime * total
    )
    return signed(move), bool(learned == {0} or both_regimes)


def is_number(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values.dtype)


def signed(k: int) -> int:
    """An offset modulo 24 as -11..12."""
    return (int(k) + 11) % HOURS - 11
