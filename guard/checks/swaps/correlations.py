"""Swapped columns told by their correlations (`guard.checks.swaps`): two columns of one declared unit whose
correlations with the other contracted numbers are exchanged, the correlation profile every line reads, and a
whole swap told from a rescaling by the steps each reading leaves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np
import pandas as pd

from guard.checks.swaps.finding import natural_swapped_back, swapped_on_every_row
from guard.context import GuardContext
from guard.findings import Finding
from guard.policy import DEFAULT as POLICY
from guard.policy import Policy
from guard.statistics import ks_noise, numeric_values
from profiles.profile import DatasetProfile
from profiles.reference import Reference
from profiles.relations import pair_key


def _paired_columns(reference: DatasetProfile, at: Mapping[str, int]) -> list[str]:
    """The columns among `at` that the reference holds pair moments of (a key is two names joined by '|', and a
    name may hold one: each cut of the key is tried)."""
    pairs = reference.relations.pairs if reference.relations is not None else {}
    paired: set[str] = set()
    for key in pairs:
        for cut in (i for i, char in enumerate(key) if char == "|"):
            first, second = key[:cut], key[cut + 1 :]
            if first in at and second in at:
                paired |= {first, second}
    return sorted(paired, key=at.__getitem__)


class CorrelationProfile:
    """Each column's correlations with the other contracted numbers: the reference's (merged pair moments) and
    the batch's (its sample)."""

    def __init__(
        self,
        reference: DatasetProfile,
        sample: pd.DataFrame,
        names: list[str],
        pair_rows: float = POLICY.swap_min_pair_rows,
    ) -> None:
        self.names = names
        self.pair_rows = pair_rows  # batch rows holding both of a pair, for their correlation
        self.pairs = reference.relations.pairs if reference.relations is not None else {}
        self.frame = pd.DataFrame({n: pd.to_numeric(sample[n], errors="coerce") for n in names}, dtype=float)
        # only columns the reference holds correlations of can be compared: the matrices are theirs alone
        self.compared = _paired_columns(reference, {name: i for i, name in enumerate(names)})
        compared = self.frame[self.compared]
        held = compared.notna().to_numpy(dtype=float)
        self._held = held.T @ held  # rows holding both of a pair
        # pairwise complete; NaN where undefined
        self._batch_matrix = compared.corr(min_periods=math.ceil(pair_rows)).to_numpy()
        self._at = {name: i for i, name in enumerate(self.compared)}
        self._reference_matrix: np.ndarray | None = None

    def _references(self) -> np.ndarray:
        """The reference's correlation of every pair of columns (NaN where it holds none), built once."""
        if self._reference_matrix is None:
            names = self.compared
            found = np.full((len(names), len(names)), np.nan)
            for i, a in enumerate(names):
                for j in range(i + 1, len(names)):
                    moments = self.pairs.get(pair_key(a, names[j]))
                    if moments is not None and moments.correlation is not None:
                        found[i, j] = found[j, i] = moments.correlation
            self._reference_matrix = found
        return self._reference_matrix

    def mean_ratio_moved(self, a: str, b: str) -> float | None:
        """The batch's mean of a over mean of b, against the reference's (rows holding both): the factor one of
        them was rescaled by (a's, or 1 / b's)."""
        moments = self.pairs.get(pair_key(a, b))
        both = self.frame[[a, b]].dropna()
        if moments is None or len(both) < self.pair_rows:
            return None
        mean_a, mean_b = (moments.mean_a, moments.mean_b) if a == min(a, b) else (moments.mean_b, moments.mean_a)
        seen_a, seen_b = float(both[a].mean()), float(both[b].mean())
        if min(abs(mean_a), abs(mean_b), abs(seen_a), abs(seen_b)) <= 0:
            return None
        return round((seen_a / seen_b) / (mean_a / mean_b), 6)

    def compare(self, a: str, b: str, policy: Policy = POLICY) -> _Comparison:
        """Sums of squares over the other columns c: how far apart the reference holds r(a, c) and r(b, c), and
        how far the batch's sit from the reference's as they came and exchanged (nothing to compare where the
        reference holds no correlations of a or b); judged by `policy`."""
        if a not in self._at or b not in self._at:
            return _Comparison(0.0, 0.0, 0.0, 0, 0, policy)
        i, j = self._at[a], self._at[b]
        reference, batch, held = self._references(), self._batch_matrix, self._held
        ra, rb, xa, xb = reference[i], reference[j], batch[i], batch[j]
        others = np.ones(len(self.compared), dtype=bool)
        others[[i, j]] = False
        used = others & ~(np.isnan(ra) | np.isnan(rb) | np.isnan(xa) | np.isnan(xb))
        ra, rb, xa, xb = ra[used], rb[used], xa[used], xb[used]
        apart = float(np.sum((ra - rb) ** 2))
        as_came = float(np.sum((xa - ra) ** 2 + (xb - rb) ** 2))
        exchanged = float(np.sum((xa - rb) ** 2 + (xb - ra) ** 2))
        rows = int(np.minimum(held[i], held[j])[used].min()) if used.any() else 0
        return _Comparison(apart, as_came, exchanged, int(used.sum()), rows, policy)

    def fewest_rows(self, a: str, b: str) -> float | None:
        """The fewest batch rows holding a, or b, and another compared column: what `policy.swap_min_pair_rows` asks
        of each correlation the two are compared by (None: the reference holds no correlations of a or b)."""
        if a not in self._at or b not in self._at or len(self.compared) < 3:
            return None
        i, j = self._at[a], self._at[b]
        others = np.ones(len(self.compared), dtype=bool)
        others[[i, j]] = False
        return float(np.minimum(self._held[i], self._held[j])[others].min())

    def says_swapped(self, a: str, b: str, policy: Policy = POLICY) -> bool | None:
        """True: the batch's correlations of a and b with the others fit the reference's swapped better than as
        they came; False: as they came (a swap would have exchanged them); None: the reference cannot tell."""
        found = self.compare(a, b, policy)
        return None if found.apart < policy.swap_profile_apart else found.exchanged < found.as_came


@dataclass(frozen=True)
class _Comparison:
    apart: float
    as_came: float
    exchanged: float
    terms: int  # other columns compared
    rows: int  # the fewest batch rows behind one of the batch's correlations
    policy: Policy = POLICY

    @property
    def support(self) -> float:
        """How far the batch moved towards the exchanged profiles, in units of how far apart they are (-2: as
        the reference, +2: exchanged); 0 where the reference cannot tell."""
        return (self.as_came - self.exchanged) / self.apart if self.telling else 0.0

    @property
    def telling(self) -> bool:
        """The reference holds the two profiles further apart than the batch's correlations are noisy: each
        has a variance of about 1 / rows, and a sum of 2 * terms of their squared errors is compared."""
        return self.rows > 0 and self.apart >= max(self.policy.swap_profile_apart, self.noise)

    @property
    def noise(self) -> float:
        """The bound of a clean batch's misfit: twice the expected sum of the 2 * terms squared sampling errors of
        correlations on `rows` rows (each about 1 / rows)."""
        return self.policy.swap_profile_noise * self.terms / self.rows if self.rows > 0 else math.inf

    @property
    def left_its_noise(self) -> bool:
        """The batch's correlations as they came sit beyond their noise from the reference's."""
        return self.as_came > self.noise

    @property
    def swapped(self) -> bool:
        """The batch moved at least three quarters of the way from the profiles as they were to the profiles
        exchanged (a whole swap moves as_came - exchanged from -2 * apart to +2 * apart)."""
        return self.telling and self.as_came - self.exchanged >= self.apart


def by_correlations(
    ctx: GuardContext,
    a: str,
    b: str,
    profile: CorrelationProfile,
    own: dict[str, float | None],
    natural: Callable[[str], float | None],
) -> Finding | None:
    """Two columns of one declared unit whose correlations with every other column were exchanged, while at least
    one of them sits outside its natural variation (against a bare profile, a batch that passed earlier judged
    against itself: beyond the KS noise of its rows from it), or, where both stay inside it (two columns of like
    values), the correlations as they came sit beyond their noise from the reference's and read as each other's
    the two columns are still inside their natural variation: swapped, even where their values overlap in this
    stretch. The correlations are the batch's statistics that left their history, and exchanging brings them back."""
    assert ctx.contract is not None and ctx.snapshot is not None
    if not _same_unit(ctx, a, b):
        return None
    found = profile.compare(a, b, ctx.policy)
    if not found.swapped:
        return None
    batches = isinstance(ctx.reference, Reference)
    far = {name: natural(name) for name in (a, b)} if batches else {}
    if batches and not _left_natural_variation(far):
        if not (found.left_its_noise and natural_swapped_back(ctx, a, b)):
            return None
    if not batches:  # moved beyond the KS noise of its rows from what it was
        noise = ks_noise(found.rows)
        far = {name: None if own[name] is None else own[name] / noise for name in (a, b)}  # type: ignore[operator]
        if not _left_natural_variation(far):
            return None
    medians = {n: float(np.nanmedian(profile.frame[n])) for n in (a, b)}
    evidence = {
        "correlations_apart": round(found.apart, 4),
        "misfit_as_came": round(found.as_came, 4),
        "misfit_exchanged": round(found.exchanged, 4),
        "columns_compared": found.terms,
        "natural_distance": {n: None if d is None else round(d, 3) for n, d in far.items()},
    }
    return swapped_on_every_row(
        ctx,
        a,
        b,
        evidence,
        medians,
        f"{a!r} and {b!r} correlate with the {found.terms} other columns as the other did in the reference (misfit "
        f"{found.exchanged:.2f} exchanged, {found.as_came:.2f} as they came, beyond its noise {found.noise:.2f})"
        + (", and they left their natural variation" if _left_natural_variation(far) else "")
        + ": written into each other's place",
    )


def by_steps(
    ctx: GuardContext,
    a: str,
    b: str,
    measured: Callable[[str], tuple[float | None, float] | None],
    profile: CorrelationProfile,
) -> Finding | None:
    """Both columns left their natural variation, one by a step from the newest reference batch beyond `policy.far`
    of the steps the reference batches took (a discontinuity: a slow cycle moves by ordinary steps), and read as each
    other's both are back inside it with ordinary steps: written into each other's place. The bands carry each
    batch's own sampling error, so a short batch (twelve monthly rows) is judged as any other."""
    came = [measured(a), measured(b)]
    if any(m is None or m[0] is None or m[0] <= 1 for m in came):
        return None
    if max(m[1] for m in came if m is not None) <= ctx.policy.far:
        return None
    back = [ctx.natural_measure(a, values_of=b), ctx.natural_measure(b, values_of=a)]
    if any(m is None or m[0] is None or m[0] > 1 or m[1] > 1 for m in back):
        return None
    if profile.says_swapped(a, b, ctx.policy) is False:
        return None  # each still correlates with the others as it did: each moved on its own
    assert ctx.snapshot is not None
    sample = ctx.snapshot.sample
    medians = {n: float(np.nanmedian(numeric_values(sample[n]))) for n in (a, b)}
    evidence = {
        "as_came": {n: _distance_and_step(m) for n, m in zip((a, b), came) if m},
        "swapped_back": {n: _distance_and_step(m) for n, m in zip((a, b), back) if m},
    }
    return swapped_on_every_row(
        ctx,
        a,
        b,
        evidence,
        medians,
        f"{a!r} and {b!r} both left their natural variation, one by a step beyond {ctx.policy.far:g}x the steps past "
        "batches took, and read as each other's both are back inside it with ordinary steps: written into each "
        "other's place",
    )


def _distance_and_step(measured: tuple[float | None, float]) -> dict[str, float | None]:
    distance, step = measured
    return {"distance": None if distance is None else round(distance, 3), "step": round(step, 3)}


def _left_natural_variation(far: Mapping[str, float | None]) -> bool:
    return any(d is not None and d > 1 for d in far.values())


def _same_unit(ctx: GuardContext, a: str, b: str) -> bool:
    assert ctx.contract is not None
    return ctx.contract.column(a).unit == ctx.contract.column(b).unit  # type: ignore[union-attr]
