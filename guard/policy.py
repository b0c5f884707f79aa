"""Policy as data: every threshold the guard's verdicts compare against, in one place.

Each field carries, on the comment above it, what it is and what it was measured on (how often it fires on
clean batches where that is known). A field without a measurement says so: `provenance: not measured`, with the
module it was carried over from. No new field without a measurement on tables from several domains
(`../shared/DESIGN.md`, "Policy as data"). Pure implementation constants (seeds, buffer sizes, reader counts,
rounding, conversion factors, the sampling error of a statistic) are mathematics, not policy, and stay where
they are used.

The checks read `ctx.policy` (a `GuardContext` carries `DEFAULT` unless given another) or, in helpers without
a context, `DEFAULT`.

"LODO" below: measured leaving each domain out (`make bench-policy-lodo`, `benchmarks/policy_lodo.py`) on the
development corpus (`chaos/corpus/tables.py`: 103 clean batches of 14 tables, 10 domains, and the drill's 242 injected
failures), from the closest calls the checks record on every batch (`guard.findings.ClosestCall`). The value chosen
without a domain is the other domains' clean edge (the largest deciding statistic) x1.25, held between the tightest
value the field's meaning allows and the shipped one; "decided on N" counts the clean batches where crossing the
field alone would have blocked; figures are for the held-out domains, each table held out once. Measured at the
verdicts of 2ca1004.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Policy", "DEFAULT"]


@dataclass(frozen=True)
class Policy:
    """The guard's decision thresholds; `Policy()` is the guard as it ships."""

    # --- statistics and their error -------------------------------------------------------------------------
    # KS critical value, sqrt(-ln(alpha / 2) / 2) at alpha = 0.001, times the two samples' size term: the
    # sampling noise of a KS distance; provenance: not measured (carried over from guard.checks.drift)
    ks_critical: float = 1.95

    # --- the natural-variation band (guard.variation, guard.checks.units) -------------------------------------
    # standard deviations of natural variation (between-batch plus sampling) a batch may sit from the reference
    # batches' mean (0.3% two-sided for a normal statistic); provenance: not measured (carried over from
    # guard.variation)
    band_sigmas: float = 3.0
    # band widths beyond which a moved column is a failure candidate (SCALE_SHIFT, or a blocking DRIFT when its
    # shape changed): twice as far from the centre as the band's edge, where the band already spans every
    # reference batch; carried over from guard.checks.units. LODO: decided (a column with a unit, its shape
    # kept, no unit named) on 19 of 103 clean batches, of 4 tables, at most 0.42 (a deciding distance): chosen at
    # the band's edge (1) without every domain; neither 1 nor 2 blocks a held-out clean batch; failures blocked
    # 234 of 242 at both
    far: float = 2.0
    # the margin, in band widths, by which the named unit must fit nearer natural variation than the runner-up
    # of its group when both fit (DESIGN: a cause is named by a margin over the next-best plan; lengths in m
    # and yd are 9% apart). Measured on the delivery table's batches in metres (the demo's), in slices of
    # 100, 400, 1,600 and 4,000 rows: yd came nearer than m by at most 0.28 (100 rows), m nearer by 0.30 to
    # 0.56 at 1,600 rows and more; at 0.3 no slice names yd. On the corpus (14 tables, 10 domains): every
    # injected unit change named as before (217 of 242 failures named with and without it), no clean batch
    # blocked by it (0 of 103)
    unit_margin: float = 0.3
    # a distance from natural variation no clean batch reaches: beyond it, with no cause named, a change is a
    # failure (a blocking DRIFT). Measured as the natural distance of every clean batch of the three hourly and
    # daily tables of the real-data bench judged in time order (132 batches, `make bench-realdata`): at most
    # 7.6 (one zero-inflated column in one week), 4.3 (an angle column), 1.5 elsewhere; a feed thrown up or
    # down by 3 to 5 times its spread reads 15 to 30 (`tests/guard/checks/test_units.py`). LODO: decided on 79
    # of 103 clean batches; at most 5.6 (a monthly price column of an economics table), 1.9 in every other
    # domain; chosen without each domain 2.4 (without economics, whose 5.6 then blocks one of its clean batches)
    # to 6.9; 10 blocks no held-out clean batch; failures blocked 235 of 242 at the chosen values, 234 at 10
    unexplained: float = 10.0
    # the least |correlation| two numeric columns showed in every reference batch for the scale of one against the
    # other (`profiles.relations` "k:a|b") to say which of them was rescaled (guard.checks.units); chosen, not
    # tuned: r = 0.95 leaves 10% of one column's variance unexplained by the other, so the log ratio of their spreads
    # moves by sampling and by what the other does not explain, and not by the columns' levels. Corpus (`make
    # bench-corpus`, b967464): blocks none of 103 clean batches and names one more failure (a panel's feature x2.5
    # inside its own band); LODO (`benchmarks/policy_lodo.py`): no clean batch of any domain came to the rest of
    # the rule, so nothing chooses it and the shipped value stands
    pair_scale_correlation: float = 0.95
    # cadences a snapshot may span and still be judged as one batch: a longer one holds several batches'
    # natural variation at once, and an unexplained distance only warns; provenance: not measured (carried
    # over from guard.checks.units)
    multi_batch_cadences: float = 1.5

    # --- causes and hypotheses: a unit conversion fitted on a bare whole-table profile (guard.checks.units) --
    # scale tolerance of an affine fit for the label and columns with a point mass among the fitted quantiles;
    # measured on 40 seeds of the demo table (module docstring of guard.checks.units)
    identity_scale_tolerance: float = 0.15
    # scale tolerance of an affine fit for a continuous feature: clean batches stay within +-2.6% (40 seeds
    # of the demo table measured)
    feature_scale_tolerance: float = 0.04
    # offset tolerance of a continuous feature's fit, of the reference's 10-90% spread; measured on 40 seeds of
    # the demo table (module docstring of guard.checks.units)
    feature_offset_tolerance: float = 0.06
    # how near a fitted scale must come to a unit's factor (relative) for the unit to be named; measured on 40
    # seeds of the demo table (module docstring of guard.checks.units)
    match_scale_tolerance: float = 0.08
    # offset tolerance of the label's and point-mass columns' fit, of the reference's 10-90% spread; measured
    # on 40 seeds of the demo table (module docstring of guard.checks.units)
    offset_tolerance: float = 0.15
    # non-zero values, in the reference's and in the batch's sketch, needed to read a value grid from;
    # provenance: not measured (carried over from guard.checks.units)
    min_grid_values: int = 20
    # share of the batch's values off the reference's grid, for the grid to be evidence of a conversion;
    # provenance: not measured (carried over from guard.checks.units)
    grid_off: float = 0.5
    # share of the batch's values back on the grid once converted back from a unit (float rounding aside);
    # provenance: not measured (carried over from guard.checks.units)
    grid_on: float = 0.99

    # --- rule: schema (renames: guard.renames, guard.checks.schema) --------------------------------------------
    # share of sampled rows where neither the old nor the new column has a value, beyond the reference's own
    # null share, a rename may leave where the column's natural null share (guard.statistics.natural_null_share,
    # the nulls check's baseline) allows less: a bare reference without batches, a column never empty;
    # provenance: not measured (carried over from guard.renames)
    rename_null_slack: float = 0.01
    # least quantile tolerance of a renamed column against the old one, of its spread; provenance: not measured
    # (carried over from guard.checks.schema)
    rename_tolerance: float = 0.05
    # a batch's quantiles wander from the reference's by sampling alone, about spread / sqrt(rows): this many
    # such steps are allowed to a renamed column (inner quantiles only); provenance: not measured (carried over
    # from guard.checks.schema)
    rename_sampling: float = 2.5
    # sampled rows inside the reference's period needed to compare a renamed column with it; provenance: not
    # measured (carried over from guard.checks.schema)
    rename_min_period_rows: int = 30

    # --- rule: nulls (guard.checks.nulls) -----------------------------------------------------------------------
    # the least rise of a column's null share over the reference's rate (guard.statistics.null_rate) that is a
    # spike, however unlikely by chance: a point of the batch's rows; provenance: not measured (a floor of
    # meaning, under the 0.05 carried over from guard.checks.nulls, which decided no clean batch of the corpus)
    null_spike_min_increase: float = 0.01
    # the chance, chosen in advance and not fitted, that a clean batch's null share reaches its value by sampling
    # and the reference's batch-to-batch spread alone (guard.statistics.NullRate.tail), or that so many of its rows
    # hold a null in columns the reference never saw null (guard.statistics.NeverNull): one in a thousand
    null_false_alarm: float = 0.001

    # --- rule: volume (guard.checks.volume) ---------------------------------------------------------------------
    # fewer rows than this share of the expected rows (times the lowest kept rate) is a partial load. LODO:
    # decided on all 103 clean batches, none under 1.0 of its expected rows (times the lowest kept rate): chosen
    # 0.8 without every domain, and shipped at that value (it was 0.5, carried over from guard.checks.volume:
    # a batch missing 40% of its rows passed); neither 0.8 nor 0.5 blocks a held-out clean batch
    volume_min_row_fraction: float = 0.8
    # more rows than this multiple of the expected rows is a spike: on a log scale twice as far above as a drop
    # is below; a table loaded twice plus one more partition passes, one loaded three times does not; carried
    # over from guard.checks.volume. LODO: decided on all 103 clean batches, none over 1.0 of its expected rows
    # (times the highest kept rate): chosen 1.25 without every domain; neither blocks a held-out clean batch;
    # failures blocked 234 at both. On two tables of yearly batches of monthly rows the highest kept rate is
    # ~2.6e9 times the median (a kept batch spanning almost no time), so there the limit never binds
    volume_spike_factor: float = 3.0
    # a full grid (every kept batch k rows at each slot of one step, or the same k entities at one instant) may lack
    # this many rows and still be whole: one reading missed once (a local clock's hour that never was in UTC); two
    # are rows lost. LODO: the rows a clean batch of the corpus lacks of its full grid (see benchmarks/policy_lodo)
    volume_grid_slack_rows: int = 1
    # kept batches that must each be a full grid before a grid's count binds; provenance: not measured (the size
    # of the evidence: three batches of one shape, the least a pattern can be read from)
    volume_grid_batches: int = 3
    # how much a batch's time per slot may differ from the others' and still be one step: the months of a year's
    # batch average within 0.3% of each other's, a month of business days differs from the next by 5% or more;
    # provenance: not measured (a calendar's, not a statistic's edge)
    volume_grid_step_spread: float = 0.02

    # --- rule: domain (guard.checks.domain) ---------------------------------------------------------------------
    # share of the reference's range: a new batch's extreme further out than that warns; provenance: not
    # measured (carried over from guard.checks.domain); it only ever warns, so it decides no block and has no
    # LODO measurement
    domain_reference_margin: float = 0.25
    # letters a value needs before a slip of one of them reads as a known value written wrong (guard.spellings):
    # shorter values are codes, where one letter makes another code; provenance: not measured
    spelling_min_length: int = 4
    # the chance, chosen in advance and not fitted, that a clean batch holds so many rows of values new to a text
    # column whose kept batches never brought one (guard.checks.domain, guard.statistics.NeverSeen): one in a thousand
    category_false_alarm: float = 0.001

    # --- rule: freshness (guard.checks.freshness) ---------------------------------------------------------------
    # hours a label watermark may lie past `now` before it is a clock or timezone error; provenance: not
    # measured (carried over from guard.checks.freshness)
    clock_skew_hours: float = 3.0
    # reference spans (at least a year each) a timestamp may lie before or after the reference; provenance: not
    # measured (carried over from guard.checks.freshness)
    plausible_horizons: int = 10

    # --- rule: duplicates (guard.checks.duplicates) -------------------------------------------------------------
    # share of keyed rows that repeat an earlier row's key; carried over from guard.checks.duplicates. LODO:
    # decided on all 103 clean batches, none repeating a key or a whole row (rate 0): chosen 0 without every
    # domain; neither 0 nor 0.001 blocks a held-out clean batch; failures blocked 234 at both
    duplicate_rate_limit: float = 0.001
    # no key: the reference's distinct event times over its rows, for one row per instant; the sketch reads
    # 0.97 to 1.03 on the real hourly and daily tables, which hold exactly one (two rows per instant: 0.5)
    one_per_instant: float = 0.9

    # --- rule: drift (guard.checks.drift) -----------------------------------------------------------------------
    # largest CDF gap (or total variation) tolerated: a tenth of the mass moved; provenance: not measured
    # (carried over from guard.checks.drift)
    drift_threshold: float = 0.1
    # spread grown or shrunk by more than this factor (noise, clipping) is drift; provenance: not measured
    # (carried over from guard.checks.drift)
    stdev_ratio_limit: float = 1.15

    # --- rule: leakage (guard.checks.leakage) -------------------------------------------------------------------
    # a feature's correlation or mapping score with the label at or above this is target leakage; carried over
    # from guard.checks.leakage. LODO: decided (the rule without kept associations) on 27 clean batches of 4
    # tables; scores at most 0.55 (a category of a retail table), 0 in every other domain: chosen 0.69, and 0
    # without retail, which then blocks its 8 clean batches (the other domains give this score no evidence);
    # 0.98 blocks no held-out clean batch; failures blocked 236 at the chosen values, 234 at 0.98
    leakage_threshold: float = 0.98
    # a column outside the contract equal to the label on this share of sampled labelled rows is a copy of it;
    # provenance: not measured (carried over from guard.checks.leakage)
    copy_threshold: float = 0.99
    # sampled rows with both values needed before an association verdict (a correlation or a mapping);
    # provenance: not measured (carried over from guard.checks.leakage)
    leakage_min_rows: int = 30
    # on batches under `leakage_min_rows`, how unlikely equal values must be by chance before a column outside the
    # contract is named a copy of the label: a column independent of the label matches it on m rows with probability at most p^m, p the
    # largest share of one label value, so a copy needs m * ln(1/p) >= ln(1 / copy_chance) (8 rows of distinct
    # values, 20 of a fair binary label). Measured on the development corpus (`make bench-corpus`): a copy of
    # the label on daily and monthly batches of 12 to 31 rows was left unnamed under the 30-row rule for
    # associations; no clean batch of its 14 tables holds a column outside its contract
    copy_chance: float = 1e-6
    # share of rows whose value the other half saw, needed to score a mapping; provenance: not measured (carried
    # over from guard.checks.leakage)
    leakage_min_coverage: float = 0.5
    # rise of an association over the highest any one reference batch showed; carried over from
    # guard.checks.leakage. LODO: decided on 8 clean batches (floor and z reached), every rise at most 0 (a kept
    # batch as high): chosen 0 without every domain; neither 0 nor 0.2 blocks a held-out clean batch; 234 at both
    leakage_jump: float = 0.2
    # an association that nearly determines the label (natural associations reach 0.86 in one stretch of
    # batches of the real-data bench). LODO: decided on 1 clean batch, where it alone kept a block off (a health
    # table's day of the month at 0.68, 0.21 over its highest kept batch, z over 4): chosen 0.85 without every
    # other domain, 0.9 kept without health (no evidence); no held-out clean batch blocks at either
    leakage_jump_floor: float = 0.9
    # Fisher z of the rise over the merged reference's association, at the batch's rows; provenance: not
    # measured (carried over from guard.checks.leakage). LODO: decided on no clean batch, so nothing chooses it
    leakage_jump_z: float = 4.0

    # --- rule: sentinels (guard.checks.sentinels) ---------------------------------------------------------------
    # resolution steps (1 for integers) between 0 and a column's nearest value for its zeros to be weighed across
    # columns (guard.checks.sentinels.zeros): two significant figures of the column's own resolution, so 0 is no
    # neighbour of its values: not a count whose least value was 1 or 30 (a cloud ceiling of 30 m beside fog at 0),
    # but a price of 5.00, a count in the hundreds, a population; provenance: not measured (a floor of meaning,
    # chosen after a clean week of cloud ceilings at 0 among 30s blocked at 10: which columns are weighed, not
    # whether a batch blocks)
    sentinel_zero_apart_steps: float = 100.0
    # the chance, chosen in advance and not fitted, that a clean batch holds so many rows with a 0 in columns the
    # reference never held one in, far from their range (guard.statistics.NeverSeen): one in a thousand
    zero_false_alarm: float = 0.001
    # sampled rows a value must hold to be a point mass; provenance: not measured (carried over from
    # guard.checks.sentinels)
    sentinel_min_rows: int = 5
    # share of sampled rows a value must hold to be a point mass; provenance: not measured (carried over from
    # guard.checks.sentinels)
    sentinel_min_share: float = 0.005
    # reference sketch share at or under which a value counts as never held (new); provenance: not measured
    # (carried over from guard.checks.sentinels)
    sentinel_new_share: float = 0.001
    # a grown placeholder holds this many times its reference share (plus the growth margin); provenance: not
    # measured (carried over from guard.checks.sentinels)
    sentinel_growth_factor: float = 2.0
    # the share a grown placeholder must add over that, and over any one reference batch; provenance: not
    # measured (carried over from guard.checks.sentinels)
    sentinel_growth_margin: float = 0.1
    # a value the reference held this often or more is a legitimate mass (the zeros of a zero-inflated
    # column), never a grown placeholder; provenance: not measured (carried over from guard.checks.sentinels)
    sentinel_growth_base: float = 0.05
    # a new placeholder within this share of the reference's range width of its edge (or one step)...;
    # provenance: not measured (carried over from guard.checks.sentinels)
    sentinel_adjacent: float = 0.05
    # ...must outweigh the reference's share within this reach of the edge; provenance: not measured (carried
    # over from guard.checks.sentinels)
    sentinel_adjacent_window: float = 0.01
    # a placeholder-looking value is this many times more frequent than its neighbours (and than the
    # reference's values near the edge it sits at); provenance: not measured (carried over from
    # guard.checks.sentinels)
    sentinel_near_factor: float = 3.0
    # share added to the reference's values near that edge before comparing; provenance: not measured (carried
    # over from guard.checks.sentinels)
    sentinel_near_margin: float = 0.02
    # batch values on each side a placeholder-looking mass is compared with...; provenance: not measured
    # (carried over from guard.checks.sentinels)
    sentinel_neighbours: int = 2
    # ...within this share of the reference's range width; provenance: not measured (carried over from
    # guard.checks.sentinels)
    sentinel_neighbour_reach: float = 0.1
    # share of the values outside the reference's (or the contract's) range one code must hold; provenance:
    # not measured (carried over from guard.checks.sentinels)
    sentinel_one_code: float = 0.9
    # KS distance of the other values from the reference, for a far-outside mass to be a code; provenance: not
    # measured (carried over from guard.checks.sentinels)
    sentinel_rest_distance: float = 0.3
    # a frozen feed: this share of a batch's rows (at least frozen_rows) hold one value...; provenance: not
    # measured (carried over from guard.checks.sentinels)
    frozen_share: float = 0.9
    # rows a frozen value must hold; provenance: not measured (carried over from guard.checks.sentinels)
    frozen_rows: int = 20
    # ...or this share in one run in event-time order (the longest run of one value on a clean real batch is a
    # third of a batch: one column at its maximum for 41 of the 126 hours of a short week of the real-data bench)
    frozen_run_share: float = 0.5
    # ...where a run that long of a value at the reference's share (its upper bound) has under this chance of coming
    # about by chance (guard.statistics.run_chance): chosen in advance and not fitted, as `null_false_alarm` is; a
    # value repeated on two days of a small batch is a run by the share alone, not by its chance
    frozen_run_chance: float = 0.001
    # ...in a column where no reference batch's most frequent value held more than this share; provenance: not
    # measured (carried over from guard.checks.sentinels)
    frozen_batch_high: float = 0.5

    # --- rule: swaps (guard.checks.swaps) -----------------------------------------------------------------------
    # values of each column needed to compare two columns' distributions; provenance: not measured (carried
    # over from guard.checks.swaps)
    swap_min_rows: int = 20
    # KS distance each swapped column must sit from its own reference; provenance: not measured (carried over
    # from guard.checks.swaps)
    swap_self_distance: float = 0.3
    # ...and this many times further than from the other column's; provenance: not measured (carried over from
    # guard.checks.swaps)
    swap_cross_ratio: float = 3.0
    # reference rows needed to learn an order between two columns; provenance: not measured (carried over from
    # guard.checks.swaps)
    swap_min_order_rows: int = 50
    # the reference's share of rows in order, for a strict order to be learned...; provenance: not measured
    # (carried over from guard.checks.swaps)
    swap_order_held: float = 0.999
    # ...or for a mostly-held order, whose flip on at least this share of the batch is a whole swap;
    # provenance: not measured (carried over from guard.checks.swaps)
    swap_order_mostly: float = 0.9
    # a strict order broken on at least this share of rows: the whole columns are swapped; provenance: not
    # measured (carried over from guard.checks.swaps)
    whole_swap: float = 0.5
    # batch rows breaking an order needed to read a swap from it; provenance: not measured (carried over from
    # guard.checks.swaps)
    swap_min_broken_rows: int = 3
    # mean break over the reference's mean gap, (low, high), for broken rows to be swapped rows; provenance:
    # not measured (carried over from guard.checks.swaps)
    swap_gap_ratio: tuple[float, float] = (0.6, 2.5)
    # a whole reversal is a swap when, swapped back, the columns sit this much nearer the newest reference
    # batch (the sum of their medians' moves); provenance: not measured (carried over from guard.checks.swaps)
    swap_continuity: float = 2.0
    # a reference at least this long (330 days, in ms) held its strict orders through a whole yearly cycle;
    # provenance: not measured (carried over from guard.checks.swaps)
    swap_full_cycle_ms: int = 330 * 86_400_000
    # share of a column's batch values outside its reference range, for a swap read from ranges...;
    # provenance: not measured (carried over from guard.checks.swaps)
    swap_range_out: float = 0.5
    # ...and at most this share of either outside its range once swapped back (a new week may reach a little
    # past a year of weeks: the drill's coldest week of an hourly table, 5% of hours under its reference minimum)
    swap_range_back: float = 0.1
    # sum of squared differences of the two columns' correlations with the others, in the reference, for
    # correlation profiles to tell them apart; provenance: not measured (carried over from guard.checks.swaps)
    swap_profile_apart: float = 0.05
    # batch rows holding both numbers, for a batch correlation; provenance: not measured (carried over from
    # guard.checks.swaps)
    swap_min_pair_rows: int = 20
    # profiles apart by at least this many terms / rows: twice the expected sum of the squared sampling errors;
    # provenance: not measured (carried over from guard.checks.swaps)
    swap_profile_noise: float = 4.0

    # --- rule: timeshift (guard.checks.timeshift) ---------------------------------------------------------------
    # a shift is named only when at least this many hours (one hour is what daylight saving time does,
    # legitimately, to local activity recorded in UTC); provenance: not measured (carried over from
    # guard.checks.timeshift)
    min_shift_hours: int = 2
    # batch rows needed for the hour-of-day count evidence; provenance: not measured (carried over from
    # guard.checks.timeshift)
    shift_min_count_rows: int = 20
    # the batch matches the shifted reference within this total variation (and no roll 2 hours or more from it
    # does)...; provenance: not measured (carried over from guard.checks.timeshift); clean weeks of a year of orders
    # over a business day sit 0.09 from the unshifted reference (median; 0.17 at most), clean days of ~140 orders 0.22
    # (0.41 at most); moved 3 to 5 hours and read, no roll 2 hours or more from the reading comes within 0.28 of a week
    # or 0.22 of a day
    shift_count_match: float = 0.2
    # ...and better than the unshifted one by this much (a reading at 0 beats every shift of min_shift_hours or
    # more by as much; either is pinned where it beats the rolls an hour either side by as much too); provenance:
    # carried over from guard.checks.timeshift; on a year of orders over a business day (the corpus's retail
    # table's source, its 45 clean weeks and 330 clean days, each against the weeks or days before it) no shift of
    # 2 h or more beats the unshifted reference by more than -0.16 on a week and 0.05 on a day; moved 4 or 5 hours,
    # 179 of 180 weeks gain 0.3 or more (3 hours: 81 of 90), and no reading beats the rolls an hour either side by
    # more than 0.17 (the weeks' best roll is the true one on all 270, the days' on 77%: read within an hour only)
    shift_count_gain: float = 0.3
    # hours of the day a batch must cover for the diurnal evidence; provenance: not measured (carried over from
    # guard.checks.timeshift)
    shift_min_diurnal_hours: int = 18
    # variance of the reference's hourly means over the noise of an hourly mean: `make bench-timeshift` names
    # no shift on any of its 132 clean batches at 2.5, as at 8; at 8 a batch of ~170 rows an hour whose pattern
    # stands at 3x its noise (a correlation of 0.8 at the true offset against -0.2 unshifted) was left unanchored
    shift_min_signal_to_noise: float = 2.5
    # mean correlation with the shifted reference...; provenance: not measured (carried over from
    # guard.checks.timeshift)
    shift_diurnal_match: float = 0.7
    # ...better than with the unshifted one by this much (on clean real batches, weekly or a day each, no
    # offset of 2 h or more beats the unshifted one by more than 0.13: tests/guard/checks/test_timeshift.py)
    shift_diurnal_gain: float = 0.2
    # as much better, when a relation of the column moved by as many hours; provenance: not measured (carried
    # over from guard.checks.timeshift)
    shift_corroborated_gain: float = 0.1
    # share of reference rows on one hour offset (or two adjacent ones) for an hour-of relation to be learned;
    # provenance: not measured (carried over from guard.checks.timeshift)
    hour_of_learned: float = 0.99
    # share of batch rows within the learned offsets (+-1 h): the relation holds; provenance: not measured
    # (carried over from guard.checks.timeshift)
    hour_of_holds: float = 0.95
    # share of batch rows on the learned offsets moved by k: the relation moved by k; provenance: not measured
    # (carried over from guard.checks.timeshift)
    hour_of_moved: float = 0.9
    # share of batch rows on each of two learned offsets, for the batch to hold both daylight-saving regimes;
    # provenance: not measured (carried over from guard.checks.timeshift)
    dst_regime: float = 0.05
    # rows needed (reference and batch) to judge a timestamp relation, and batch rows for the hour-of-day count
    # evidence where the reference's rows all fall on one hour (each row a witness); provenance: not measured
    # (carried over from guard.checks.timeshift); on the corpus a year of monthly rows (12) moved by 4 or 5 hours
    # is named by it
    shift_min_relation_rows: int = 10

    # --- rule: relations (guard.checks.relations) ---------------------------------------------------------------
    # share of informative reference rows a relation must hold on to be learned; provenance: not measured
    # (carried over from guard.checks.relations)
    relation_held: float = 0.999
    # informative reference rows needed to learn a relation; provenance: not measured (carried over from
    # guard.checks.relations)
    relation_min_rows: int = 50
    # batch rows a relation must be broken on for a finding; provenance: not measured (carried over from
    # guard.checks.relations)
    relation_min_broken: int = 3
    # ...and this share of the tested rows; provenance: not measured (carried over from guard.checks.relations)
    relation_broken_share: float = 0.01
    # rows of a derived hour off every learned offset: more than the 5% the timestamp check allows; provenance:
    # not measured (carried over from guard.checks.relations)
    relation_departed_share: float = 0.05
    # departed rows needed to judge whether they follow the label; provenance: not measured (carried over from
    # guard.checks.relations)
    relation_leak_rows: int = 30
    # rows keeping a bound needed to fit each of its columns from the others; provenance: not measured (carried
    # over from guard.checks.relations)
    relation_fit_rows: int = 30
    # distinct labels (and values) over which a column that breaks a bound must follow the label...; `make
    # bench-leak-null` read none of 17,800 natural changes of an order on every real batch as leakage
    monotone_labels: int = 5
    # ...and pairs of rows with different labels, every one ordered as its labels (a natural relation orders
    # about 20 such pairs by chance: measured on the weeks of an hourly table of the real-data bench with values
    # lowered, raised or halved at random)
    monotone_pairs: int = 50
    # categories of a label over which the same is asked, each group in the order of its median; provenance:
    # not measured (carried over from guard.checks.relations)
    monotone_categories: int = 3


DEFAULT = Policy()
