"""Every measured threshold of `guard/policy.py` chosen leaving each domain out, on one corpus bench output.

    python benchmarks/policy_lodo.py BENCH.json [--boards DIR] [--margin 1.25] [--json PATH]

BENCH.json is what `benchmarks/corpus_bench.py --json` wrote: its clean runs carry the guard's closest calls at
detect (`guard.findings.ClosestCall`: the statistic a check compared with a policy field, on every batch, and
whether crossing that field alone blocks it: `decides`) and the findings that blocked them there, by check (a clean
run whose block was healed still promotes). The injected failures' are in each table's drill scoreboard,
`DIR/TABLE/board/scoreboard.json` (DIR: the bench's `out`, by default), with the findings that blocked them.

The rule, one for every threshold: **on the clean batches of the other domains, the smallest value at which none
of them blocks (the largest deciding statistic for a limit a statistic crosses from below, the smallest for one it
crosses from above), moved outward by `--margin` (x1.25: a quarter again, on the field's own scale from zero) and
never nearer than Cantelli's bound on those statistics (mean + k sd, k = sqrt((1 - a) / a) at a = 0.01 chosen in
advance: a limit another table's clean batch crosses with a chance under 1%, whatever the distribution), then held
between the tightest value the field's meaning allows (`Measured.tightest`: a distance no nearer than
the band's edge, a factor no less than 1, a share no more than all rows) and the shipped value: never looser than
it.** Where the other domains give no deciding statistic (no clean batch of theirs put the threshold in play), or
the same value on every batch (a statistic that never moved there: a leakage score of 0 on tables with nothing to
leak), nothing chooses a value and the shipped one is kept.

For each threshold and held-out domain it reports that domain's clean batches the threshold blocks at the chosen
value and at the shipped one (one of their deciding calls crosses the limit), and its injected failures still
blocked at each. A batch is blocked at a limit when a blocking finding the threshold does not govern blocked it,
or a deciding call of the threshold crosses the limit, or a deciding call of another measured threshold crosses
the shipped one (the far-beyond drift a looser `far` leaves behind, say); a finding is governed by the threshold
when its check's deciding call on that column crossed the shipped value. At the shipped values this must give the
guard's own verdicts at detect; the disagreements are printed (`model_disagrees`). Each threshold is moved with
the others at their shipped values; the closing line moves them all at once, the corpus figure taken with the
policy chosen on the other domains, and names what blocked clean batches at detect that no measured threshold
governs. Approximations: `decides` is read at the shipped values of the other
thresholds; a named cause (a unit, a swap) and a finding on rows that passed earlier (the history check, whose
statistics the new batch's report does not carry) are taken as they came.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from guard.findings import ClosestCall  # noqa: E402
from guard.policy import DEFAULT  # noqa: E402

MARGIN = 1.25
# the chance, chosen in advance, that a clean batch crosses a limit chosen on other tables' statistics: one in a
# hundred deciding calls (Cantelli's inequality makes it hold whatever the statistic's distribution)
FALSE_ALARM = 0.01


@dataclass(frozen=True)
class Measured:
    """A policy field the guard records closest calls for: the tightest value its meaning allows, and the findings
    (check, kind) it decides."""

    field: str  # a policy field, or one end of a pair of them ("swap_gap_ratio[1]")
    tightest: float
    governs: frozenset[tuple[str, str]]

    @property
    def shipped(self) -> float:
        name, _, index = self.field.partition("[")
        value = getattr(DEFAULT, name)
        return float(value[int(index.rstrip("]"))] if index else value)


_LEAKAGE = frozenset({("leakage", "target_leakage")})
_DRIFT = frozenset({("drift", "drift")})
_UNITS = frozenset({("units", "unit_mismatch"), ("units", "scale_shift")})
_RELATIONS = frozenset({("relations", "relation_broken"), ("relations", "target_leakage")})
_SHIFT = frozenset({("timestamp_shift", "timestamp_shift")})
_SENTINEL = frozenset({("sentinels", "sentinel")})
_SWAP = frozenset({("columns_swapped", "columns_swapped"), ("columns_swapped", "scale_shift")})
_NAMES = frozenset[tuple[str, str]]()  # decides the name of a failure, never whether it blocks
MEASURED = (
    Measured("unexplained", DEFAULT.far, frozenset({("drift", "drift"), ("units", "drift")})),  # no nearer than `far`
    Measured("far", 1.0, frozenset({("units", "scale_shift")})),  # the band's edge
    # a partner the column follows more than not (|r| of a half)
    Measured("pair_scale_correlation", 0.5, frozenset({("units", "scale_shift")})),
    Measured("volume_min_row_fraction", 1.0, frozenset({("volume", "volume_drop")})),  # every expected row
    Measured("volume_spike_factor", 1.0, frozenset({("volume", "volume_spike")})),  # the expected rows
    Measured("volume_grid_slack_rows", 0.0, frozenset({("volume", "volume_drop")})),  # no row lacking
    Measured("null_spike_min_increase", 0.0, frozenset({("nulls", "null_spike")})),  # no rise at all
    Measured("duplicate_rate_limit", 0.0, frozenset({("duplicates", "duplicate_keys")})),  # no repeat at all
    Measured("one_per_instant", 0.5, frozenset({("duplicates", "duplicate_keys")})),  # two rows an instant read 0.5
    Measured("leakage_threshold", 0.0, _LEAKAGE),
    Measured("leakage_jump", 0.0, _LEAKAGE),
    Measured("leakage_jump_floor", 0.0, _LEAKAGE),
    Measured("leakage_jump_z", 0.0, _LEAKAGE),
    Measured("leakage_min_rows", 3.0, _LEAKAGE),  # a correlation needs three rows
    Measured("leakage_min_coverage", 0.0, _LEAKAGE),  # any row seen by both halves
    Measured("copy_threshold", 0.5, _LEAKAGE),  # equal on most rows
    Measured("copy_chance", 1.0, _LEAKAGE),  # any chance (from above)
    # drift: a CDF gap, its KS size term, a spread ratio; a snapshot judged as one batch
    Measured("drift_threshold", 0.0, _DRIFT),  # any mass moved
    Measured("ks_critical", 0.0, _DRIFT),
    Measured("stdev_ratio_limit", 1.0, _DRIFT),  # the spread itself
    Measured("multi_batch_cadences", math.inf, _DRIFT | _UNITS | {("units", "drift")}),  # every snapshot one batch
    # units: the decimal grid, and the fit against a bare profile
    Measured("min_grid_values", 2.0, _UNITS),  # a step needs two values
    Measured("grid_off", 0.0, _UNITS),
    Measured("grid_on", 0.5, _UNITS),  # most values back on the grid
    Measured("identity_scale_tolerance", 0.0, _UNITS),
    Measured("feature_scale_tolerance", 0.0, _UNITS),
    Measured("offset_tolerance", 0.0, _UNITS),
    Measured("feature_offset_tolerance", 0.0, _UNITS),
    # freshness: a clock ahead of now; times further than horizons from the reference's
    Measured("clock_skew_hours", 0.0, frozenset({("label_freshness", "timestamp_unparseable")})),  # none ahead
    Measured("plausible_horizons", 0.0, frozenset({("timestamp_range", "out_of_range")})),  # none beyond
    # relations: identities, bounds and orders, hour columns
    Measured("relation_held", 0.5, _RELATIONS),  # held on most rows
    Measured("relation_min_rows", 3.0, _RELATIONS),
    Measured("relation_min_broken", 1.0, _RELATIONS),  # one row broken
    Measured("relation_broken_share", 0.0, _RELATIONS),
    Measured("relation_departed_share", 0.0, _RELATIONS),
    Measured("monotone_labels", 2.0, _RELATIONS),  # an order needs two groups
    Measured("monotone_categories", 2.0, _RELATIONS),
    Measured("monotone_pairs", 1.0, _RELATIONS),
    Measured("hour_of_learned", 0.5, _RELATIONS | _SHIFT),  # most rows on those offsets
    Measured("hour_of_holds", 1.0, _RELATIONS | _SHIFT),  # every row (from above)
    Measured("hour_of_moved", 0.5, _RELATIONS | _SHIFT),  # most rows moved as one
    # timestamp shifts: the count and diurnal readings, and the relations between timestamps
    Measured("min_shift_hours", 1.0, _SHIFT),  # one hour
    Measured("shift_min_count_rows", 1.0, _SHIFT),
    Measured("shift_min_relation_rows", 1.0, _SHIFT),
    Measured("shift_count_match", 1.0, _SHIFT),  # any distance (from above)
    Measured("shift_count_gain", 0.0, _SHIFT),
    Measured("shift_min_diurnal_hours", 3.0, _SHIFT),  # a correlation needs three hours
    Measured("shift_min_signal_to_noise", 1.0, _SHIFT),  # a pattern as large as its noise
    Measured("shift_diurnal_match", 0.0, _SHIFT),
    Measured("shift_diurnal_gain", 0.0, _SHIFT),
    Measured("shift_corroborated_gain", 0.0, _SHIFT),
    # sentinels: point masses, new and grown placeholders, codes far outside, frozen feeds
    Measured("sentinel_min_rows", 1.0, _SENTINEL),
    Measured("sentinel_min_share", 0.0, _SENTINEL),
    Measured("sentinel_new_share", 0.0165, _SENTINEL),  # the sketch's error of a share (from above)
    Measured("sentinel_growth_factor", 1.0, _SENTINEL),
    Measured("sentinel_growth_margin", 0.0, _SENTINEL),
    Measured("sentinel_growth_base", 1.0, _SENTINEL),  # any share the reference held (from above)
    Measured("sentinel_adjacent", 0.0, _SENTINEL),
    Measured("sentinel_near_factor", 1.0, _SENTINEL),
    Measured("sentinel_near_margin", 0.0, _SENTINEL),
    Measured("sentinel_neighbours", 1.0, _SENTINEL),
    Measured("sentinel_neighbour_reach", 0.0, _SENTINEL),
    Measured("sentinel_one_code", 0.5, _SENTINEL),  # most of the values outside
    Measured("sentinel_rest_distance", 1.0, _SENTINEL),  # any distance (from above)
    Measured("frozen_share", 0.5, _SENTINEL),  # most rows
    Measured("frozen_rows", 1.0, _SENTINEL),
    Measured("frozen_run_share", 0.0, _SENTINEL),
    Measured("frozen_batch_high", 1.0, _SENTINEL),  # any column (from above)
    # swaps: distributions, ranges, correlation profiles, orders
    Measured("swap_min_rows", 3.0, _SWAP),
    Measured("swap_self_distance", 0.0, _SWAP),
    Measured("swap_cross_ratio", 1.0, _SWAP),  # nearer the other's than its own
    Measured("swap_range_out", 0.0, _SWAP),
    Measured("swap_range_back", 1.0, _SWAP),  # any share (from above)
    Measured("swap_profile_apart", 0.0, _SWAP),
    Measured("swap_profile_noise", 0.0, _SWAP),
    Measured("swap_min_pair_rows", 3.0, _SWAP),  # a correlation needs three rows
    Measured("swap_min_order_rows", 3.0, _SWAP),
    Measured("swap_order_held", 0.5, _SWAP),  # held on most rows
    Measured("swap_order_mostly", 0.5, _SWAP),
    Measured("swap_min_broken_rows", 1.0, _SWAP),
    Measured("whole_swap", 0.0, _SWAP),
    Measured("swap_gap_ratio[0]", 0.0, _SWAP),
    Measured("swap_gap_ratio[1]", math.inf, _SWAP),  # any break (from above)
    Measured("swap_continuity", 1.0, _SWAP),
    Measured("swap_full_cycle_ms", 0.0, _SWAP),
    # renames: they name a failure (a column gone blocks either way), except where a batch left a column empty
    Measured("rename_tolerance", math.inf, _NAMES),
    Measured("rename_sampling", math.inf, _NAMES),
    Measured("rename_min_period_rows", 1.0, _NAMES),
    Measured("rename_null_slack", 1.0, frozenset({("schema", "column_renamed")})),  # any share (from above)
)

# the policy fields that decide no block, or have no statistic of their own to compare: why each is not measured
UNMEASURED = {
    "null_false_alarm": "a chance chosen in advance, not fitted: the nulls check's evidence has its sampling error",
    "category_false_alarm": "a chance chosen in advance, not fitted: a closed set's evidence has its sampling error",
    "zero_false_alarm": "a chance chosen in advance, not fitted: the zeros' evidence has its sampling error",
    "frozen_run_chance": "a chance chosen in advance, not fitted: a run of one value has its chance at the "
    "value's share",
    "sentinel_zero_apart_steps": "which columns' zeros are weighed at all (0 no neighbour of the range), not "
    "whether a batch blocks: `zero_false_alarm` decides that",
    "spelling_min_length": "where a value is a code rather than a word: a floor of meaning, not a statistic's edge",
    "band_sigmas": "the unit `far` and `unexplained` are measured in (a band of this many standard deviations, and "
    "at least as wide as the farthest kept batch): measured through them",
    "sentinel_adjacent_window": "how wide the reference's share near an edge is read: measured through "
    "`sentinel_near_factor`'s call on that share",
    "unit_margin": "whether a named unit is healed, not whether the batch blocks (UNIT_MISMATCH blocks either way)",
    "match_scale_tolerance": "which unit a bare profile's fit names (a named unit or a SCALE_SHIFT: a block either way)",
    "dst_regime": "whether a timestamp's move is pinned to the hour (and healed), not whether it blocks",
    "relation_leak_rows": "whether a departed hour column is named leakage or a broken relation: a block either way",
    "relation_fit_rows": "which column of a broken order is named (and, for an order merely held, tested against the "
    "label): its call would be the label's, `monotone_*`",
    "domain_reference_margin": "it warns only",
    "volume_grid_batches": "how many kept batches must each be a full grid before its count binds: the evidence's "
    "size, which no clean batch's statistic sits near",
    "volume_grid_step_spread": "whether a table's slots are of one length at all (a calendar's edge): measured "
    "through `volume_grid_slack_rows`' call on the grids it lets be read",
}


@dataclass(frozen=True)
class Blocker:
    """A blocking finding of an injected failure, by the check that made it."""

    check: str
    kind: str
    column: str | None


@dataclass(frozen=True)
class Batch:
    """One guarded batch: a clean run of the corpus walk, or an injected failure of the drill."""

    table: str
    domain: str
    name: str
    clean: bool
    calls: tuple[ClosestCall, ...]
    blockers: tuple[Blocker, ...] = ()  # the findings that blocked it at detect
    blocked: bool = False  # at detect, as the run recorded it


@dataclass(frozen=True)
class HeldOut:
    """One threshold with one domain left out: the value chosen on the others and the domain's figures."""

    field: str
    domain: str
    rule_value: float | None  # before holding it between the tightest value and the shipped one (None: no evidence)
    chosen: float
    clean: int
    false_blocks_chosen: int
    false_blocks_shipped: int
    failures: int
    blocked_chosen: int
    blocked_shipped: int


# --- the rule ---------------------------------------------------------------------------------------------------


def chosen_limit(
    statistics: Iterable[float],
    above: bool,
    tightest: float,
    shipped: float,
    margin: float = MARGIN,
    false_alarm: float = FALSE_ALARM,
) -> tuple[float | None, float]:
    """(the rule's value, the value chosen): the smallest limit no statistic crosses (`above`: a statistic above
    the limit crosses it), moved outward by `margin`, and never nearer than Cantelli's bound on the statistics
    (`cantelli_bound`: a limit a clean batch of another table crosses with a chance under FALSE_ALARM, whatever
    the statistic's distribution), held between `tightest` and `shipped`; no statistic, or one value on every batch
    (a statistic that never moved says nothing of its spread): (None, `shipped`)."""
    values = [s for s in statistics if not math.isnan(s)]
    if not values or (len(values) > 1 and len(set(values)) == 1):
        return None, shipped  # none, or one value on every batch: the statistic never moved, nothing of its spread
    edge = max(values) if above else min(values)
    outward = edge * margin if (edge > 0) == above else edge / margin
    bound = cantelli_bound(values, above, false_alarm)
    outward = max(outward, bound) if above else min(outward, bound)
    if above:
        return outward, min(max(outward, tightest), shipped)
    return outward, max(min(outward, tightest), shipped)


def cantelli_bound(values: Sequence[float], above: bool, false_alarm: float = FALSE_ALARM) -> float:
    """The mean plus (or, `above` False, minus) k standard deviations of `values`, k = sqrt((1 - a) / a): by
    Cantelli's inequality a statistic of the same distribution passes it with a chance under `a`, whatever that
    distribution (Auto-Validate-by-History's bound); one value has no spread, so it is its own bound."""
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    k = math.sqrt((1.0 - false_alarm) / false_alarm)
    return mean + k * spread if above else mean - k * spread


def crosses(call: ClosestCall, limit: float) -> bool:
    return call.statistic > limit if call.above else call.statistic < limit


def deciding(batch: Batch, field: str) -> list[ClosestCall]:
    return [c for c in batch.calls if c.threshold == field and c.decides]


def blocks_clean(batch: Batch, limits: Mapping[str, float]) -> bool:
    """A batch the measured thresholds at `limits` block (a deciding call across its limit)."""
    return any(crosses(c, limits[c.threshold]) for c in batch.calls if c.decides and c.threshold in limits)


def blocks_failure(batch: Batch, limits: Mapping[str, float]) -> bool:
    """A batch blocked at `limits` (the shipped value for any measured field not in it): by a finding no moved
    threshold governs, or a deciding call across its limit."""
    moved = [m for m in MEASURED if m.field in limits]
    for blocker in batch.blockers:
        if not any(_governed(blocker, m, batch) for m in moved):
            return True
    at = {m.field: m.shipped for m in MEASURED} | dict(limits)
    return any(crosses(c, at[c.threshold]) for c in batch.calls if c.decides and c.threshold in at)


def _governed(blocker: Blocker, measured: Measured, batch: Batch) -> bool:
    """The threshold decided this finding: its kind is one it governs, and the check's deciding call on that column
    crossed the shipped value (else the finding came from elsewhere: the history check, a contract's own limit)."""
    if (blocker.check, blocker.kind) not in measured.governs:
        return False
    return any(
        c.check == blocker.check and c.column in (blocker.column, None) and crosses(c, measured.shipped)
        for c in deciding(batch, measured.field)
    )


# --- reading one bench output -----------------------------------------------------------------------------------


def read_bench(bench: Path, boards: Path | None) -> list[Batch]:
    data = json.loads(bench.read_text())
    folder = boards or Path(data.get("out") or bench.parent)
    batches: list[Batch] = []
    for row in data["tables"]:
        table, domain = row["table"], row["domain"]
        for run in row.get("runs", []):
            if run.get("status") != "error" and run.get("closest_calls"):
                blockers = _blockers(run.get("detect_blocked_by", []))
                batches.append(
                    Batch(table, domain, run["batch"], True, _calls(run["closest_calls"]), blockers, bool(blockers))
                )
        board = folder / table / "board" / "scoreboard.json"
        if board.exists():
            batches += list(_failures(table, domain, json.loads(board.read_text())))
    return batches


def _failures(table: str, domain: str, board: Mapping[str, Any]) -> Iterable[Batch]:
    for scenario in board.get("scenarios", []):
        for run in scenario.get("runs", []):
            if run.get("status") in ("error", "failed") or "closest_calls" not in run:
                continue
            calls = _calls(run["closest_calls"])
            yield Batch(
                table,
                domain,
                scenario["name"],
                False,
                calls,
                _blockers(run.get("blocked_by", [])),
                bool(run["detected"]),
            )


def _blockers(rows: Sequence[Mapping[str, Any]]) -> tuple[Blocker, ...]:
    return tuple(Blocker(b["check"], b["kind"], b.get("column")) for b in rows)


def _calls(rows: Sequence[Mapping[str, Any]]) -> tuple[ClosestCall, ...]:
    return tuple(ClosestCall.from_dict(r) for r in rows)


# --- leaving each domain out ------------------------------------------------------------------------------------


def leave_one_out(
    batches: Sequence[Batch], measured: Measured, margin: float = MARGIN, false_alarm: float = FALSE_ALARM
) -> list[HeldOut]:
    domains = sorted({b.domain for b in batches})
    rows = []
    for domain in domains:
        trained = [c for b in batches if b.clean and b.domain != domain for c in deciding(b, measured.field)]
        above = trained[0].above if trained else _direction(batches, measured.field)
        statistics = (c.statistic for c in trained)
        rule, chosen = chosen_limit(statistics, above, measured.tightest, measured.shipped, margin, false_alarm)
        held = [b for b in batches if b.domain == domain]
        clean, failures = [b for b in held if b.clean], [b for b in held if not b.clean]
        at_chosen, at_shipped = {measured.field: chosen}, {measured.field: measured.shipped}
        rows.append(
            HeldOut(
                measured.field,
                domain,
                rule,
                chosen,
                len(clean),
                sum(blocks_clean(b, at_chosen) for b in clean),
                sum(blocks_clean(b, at_shipped) for b in clean),
                len(failures),
                sum(blocks_failure(b, at_chosen) for b in failures),
                sum(blocks_failure(b, at_shipped) for b in failures),
            )
        )
    return rows


def _direction(batches: Sequence[Batch], field: str) -> bool:
    return next((c.above for b in batches for c in b.calls if c.threshold == field), True)


def joint(batches: Sequence[Batch], held: Sequence[HeldOut]) -> dict[str, int]:
    """Every measured threshold at once at the value chosen without the batch's domain, against all at shipped."""
    chosen = {(h.domain, h.field): h.chosen for h in held}
    shipped = {m.field: m.shipped for m in MEASURED}
    figures = dict.fromkeys(("clean", "clean_blocked_chosen", "clean_blocked_shipped", "clean_blocked_recorded"), 0)
    figures |= dict.fromkeys(("failures", "blocked_chosen", "blocked_shipped", "blocked_recorded"), 0)
    figures["model_disagrees"] = 0
    for batch in batches:
        limits = {m.field: chosen[(batch.domain, m.field)] for m in MEASURED}
        side = "clean_blocked" if batch.clean else "blocked"
        figures["clean" if batch.clean else "failures"] += 1
        figures[f"{side}_chosen"] += blocks_failure(batch, limits)
        figures[f"{side}_shipped"] += blocks_failure(batch, shipped)
        figures[f"{side}_recorded"] += batch.blocked
        figures["model_disagrees"] += blocks_failure(batch, shipped) != batch.blocked
    return figures


def unmeasured(batches: Sequence[Batch]) -> dict[str, int]:
    """KIND:COLUMN (check) of the blocking findings on clean batches at detect that no measured threshold governs."""
    found: dict[str, int] = {}
    for batch in batches:
        if batch.clean:
            for blocker in batch.blockers:
                if not any(_governed(blocker, m, batch) for m in MEASURED):
                    label = f"{blocker.kind}:{blocker.column or '-'} ({blocker.check}, {batch.table})"
                    found[label] = found.get(label, 0) + 1
    return found


# --- the report -------------------------------------------------------------------------------------------------


def summary(batches: Sequence[Batch], held: Sequence[HeldOut]) -> list[str]:
    """Per threshold: the shipped value, the spread of the values chosen without each domain (and of the rule's
    own before they were held to the shipped one), the clean batches where it decided, and the held-out figures
    summed over the domains (each table is held out once): clean batches blocked (FB), failures blocked (blk)."""
    head = (
        f"{'threshold':<24} {'shipped':>8} {'LODO min':>9} {'LODO max':>9} {'rule max':>9} {'clean':>6} "
        f"{'decide':>6} {'FB lodo':>7} {'FB ship':>7} {'fail':>5} {'blk lodo':>8} {'blk ship':>8}"
    )
    lines = [head]
    for measured in MEASURED:
        rows = [h for h in held if h.field == measured.field]
        values = [h.chosen for h in rows]
        rules = [h.rule_value for h in rows if h.rule_value is not None]
        loosest = (max(rules) if measured.tightest <= measured.shipped else min(rules)) if rules else None
        decide = sum(1 for b in batches if b.clean and deciding(b, measured.field))
        lines.append(
            f"{measured.field:<24} {measured.shipped:>8.4g} {min(values):>9.4g} {max(values):>9.4g} "
            f"{'-' if loosest is None else f'{loosest:.4g}':>9} "
            f"{sum(h.clean for h in rows):>6} {decide:>6} {sum(h.false_blocks_chosen for h in rows):>7} "
            f"{sum(h.false_blocks_shipped for h in rows):>7} {sum(h.failures for h in rows):>5} "
            f"{sum(h.blocked_chosen for h in rows):>8} {sum(h.blocked_shipped for h in rows):>8}"
        )
    return lines


def by_domain(held: Sequence[HeldOut]) -> list[str]:
    domains = sorted({h.domain for h in held})
    lines = [f"{'chosen without':<24} " + " ".join(f"{d[:11]:>11}" for d in domains)]
    for measured in MEASURED:
        cells = {h.domain: h for h in held if h.field == measured.field}
        lines.append(f"{measured.field:<24} " + " ".join(f"{_cell(cells[d]):>11}" for d in domains))
    return lines


def _cell(row: HeldOut) -> str:
    """The chosen value, marked `*` where the rule wanted it looser than shipped, `!` where the held-out domain's
    clean batches block at it."""
    marks = ("*" if row.rule_value is not None and row.chosen != row.rule_value and _looser(row) else "") + (
        "!" if row.false_blocks_chosen else ""
    )
    return f"{row.chosen:.4g}{marks}"


def _looser(row: HeldOut) -> bool:
    measured = next(m for m in MEASURED if m.field == row.field)
    assert row.rule_value is not None
    return (row.rule_value > measured.shipped) == (measured.tightest <= measured.shipped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("bench", type=Path, help="the JSON `benchmarks/corpus_bench.py --json` wrote")
    parser.add_argument("--boards", type=Path, default=None, help="the bench's out folder (default: its `out`)")
    parser.add_argument("--margin", type=float, default=MARGIN, help="outward move of the clean edge (x1.25)")
    parser.add_argument("--json", type=Path, default=None, help="write every held-out row and the totals here")
    args = parser.parse_args()
    batches = read_bench(args.bench, args.boards)
    held = [row for measured in MEASURED for row in leave_one_out(batches, measured, args.margin)]
    clean = [b for b in batches if b.clean]
    print(
        f"policy LODO: {len(clean)} clean batches and {len(batches) - len(clean)} injected failures of "
        f"{len({b.table for b in batches})} tables, {len({b.domain for b in batches})} domains; margin x{args.margin:g}"
    )
    print("\n".join(summary(batches, held)))
    print("\n" + "\n".join(by_domain(held)))
    together = joint(batches, held)
    print(
        f"\nall at once, each domain's tables at the policy chosen on the others: {together['clean_blocked_chosen']} "
        f"of {together['clean']} clean batches blocked at detect (shipped: {together['clean_blocked_shipped']}, "
        f"recorded {together['clean_blocked_recorded']}), {together['blocked_chosen']} of {together['failures']} "
        f"failures blocked (shipped: {together['blocked_shipped']}, recorded {together['blocked_recorded']}); the "
        f"model disagrees with the records on {together['model_disagrees']}"
    )
    others = unmeasured(batches)
    if others:
        listed = ", ".join(f"{label} x{count}" for label, count in sorted(others.items()))
        print(f"clean batches blocked at detect by what no measured threshold governs: {listed}")
    if args.json:
        payload = {
            "margin": args.margin,
            "shipped": {m.field: m.shipped for m in MEASURED},
            "held_out": [dataclasses.asdict(h) for h in held],
            "joint": together,
            "unmeasured_clean_blocks": unmeasured(batches),
        }
        args.json.write_text(json.dumps(payload, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
