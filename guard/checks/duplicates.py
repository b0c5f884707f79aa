"""Duplicate keys: rows repeating a primary key (a batch: its rows in the window; with the whole table's files, also
the batch rows whose key the rest of the table has). With no key declared, whole rows repeated in a batch whose
reference holds one row per instant (`_repeated_rows`).

The check reads no file: `repeats_asked` says what it will judge (pure, from the context), whoever builds the
context counts exactly that with `profiles.repeats.count_repeats` and hands it in as `GuardContext.repeats`
(`controlplane.stages.guarding.with_repeats_counted` does both), and the check judges the count. Counts missing,
or counted for another question, raise (`GuardContext.require_repeats`): a blocking check error, never a pass.
Why the key columns are read again rather than the row sample: `profiles.repeats`.

Closest call, on every batch it judges: the share of rows repeating a key (or a whole row) against
`duplicate_rate_limit`; with no key, the reference's distinct event times over its rows against `one_per_instant`,
deciding where whole rows were counted and repeat beyond the limit.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from guard.context import GuardContext
from guard.findings import ClosestCall, Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register
from profiles.profile import ColumnProfile
from profiles.repeats_types import HASHED_TYPES, KeyCount, RepeatsAsked

__all__ = ["check_duplicates", "repeats_asked"]


def repeats_asked(ctx: GuardContext) -> RepeatsAsked | None:
    """What `check_duplicates` will judge of `ctx`'s batch, for its builder to count (`profiles.repeats`): the
    rows repeating the declared key, in the batch and against the table's history (`ctx.table_paths`); with no
    key, whole rows repeated, only where the reference holds one row per instant and every column has a row hash
    (the expensive pass over every column is done only then). None: nothing to count (no snapshot or contract,
    a key column missing, which the schema check reports)."""
    if ctx.contract is None or ctx.snapshot is None:
        return None
    snapshot, keys = ctx.snapshot, ctx.contract.key_columns
    if keys:
        if any(k not in snapshot.profile.columns for k in keys):
            return None  # a key column missing: the schema check reports that
        return RepeatsAsked(
            tuple(keys), snapshot.files, snapshot.window, snapshot.profile.row_count, history=ctx.table_paths
        )
    if _one_per_instant(ctx) is None:
        return None
    if any(c.logical_type not in HASHED_TYPES for c in snapshot.profile.columns.values()):
        return None  # a nested column (a list, a struct) has no row hash: whole rows cannot be compared
    columns = tuple(snapshot.profile.columns)
    return RepeatsAsked(columns, snapshot.files, snapshot.window, snapshot.profile.row_count, whole_rows=True)


@register("duplicates", per_column=False)
def check_duplicates(ctx: GuardContext) -> Iterator[Finding | ClosestCall]:
    assert ctx.contract and ctx.snapshot
    asked = repeats_asked(ctx)
    if asked is None:
        yield from _instants_call(ctx, None)
        return
    count = ctx.require_repeats(asked)
    keyed = asked.columns[0] if len(asked.columns) == 1 and not asked.whole_rows else None
    yield ClosestCall("duplicate_rate_limit", keyed, count.rate, ctx.policy.duplicate_rate_limit)
    if asked.whole_rows:
        yield from _instants_call(ctx, count)
    if asked.whole_rows:
        yield from _repeated_rows(ctx, count)
        return
    keys = asked.columns
    if count.rate <= ctx.policy.duplicate_rate_limit:
        return
    across = f", {count.across_rows} of them a key the rest of the table has" if count.across_rows else ""
    yield _finding(
        ctx,
        keys[0] if len(keys) == 1 else None,
        keys,
        count,
        f"{count.rate:.2%} of rows ({count.duplicate_rows} of {count.rows_compared}"
        f"{'' if count.exact else ', a sample by key'}{across}) repeat a key of {list(keys)}; "
        f"the limit is {ctx.policy.duplicate_rate_limit:.1%}: a duplicated load?",
    )


def _instants_call(ctx: GuardContext, count: KeyCount | None) -> Iterator[ClosestCall]:
    """No key declared: the reference's distinct event times over its rows against `policy.one_per_instant`, deciding
    where whole rows were counted and repeat beyond `duplicate_rate_limit` (not counted, nothing can say)."""
    assert ctx.contract is not None
    time, reference = ctx.contract.event_timestamp_column, ctx.reference_profile
    known = reference.columns.get(time) if reference is not None and time is not None else None
    if ctx.contract.key_columns or known is None or known.distinct_count is None or not known.values:
        return
    decides = count is not None and count.rate > ctx.policy.duplicate_rate_limit
    yield ClosestCall(
        "one_per_instant", time, known.distinct_count / known.values, ctx.policy.one_per_instant, True, decides
    )


def _one_per_instant(ctx: GuardContext) -> tuple[str, ColumnProfile, float] | None:
    """The event time, its reference profile and distinct count, when the reference holds one row per instant of it
    (distinct times at least `policy.one_per_instant` of its rows, by its distinct-count sketch); else None."""
    assert ctx.contract is not None
    time, reference = ctx.contract.event_timestamp_column, ctx.reference_profile
    known = reference.columns.get(time) if reference is not None and time is not None else None
    distinct = known.distinct_count if known is not None else None
    if known is None or distinct is None or not known.values or distinct < ctx.policy.one_per_instant * known.values:
        return None
    assert time is not None
    return time, known, distinct


def _repeated_rows(ctx: GuardContext, count: KeyCount) -> Iterator[Finding]:
    """No key declared: a batch loaded twice repeats whole rows. Rows of the batch identical in every column to an
    earlier one are a duplicate load when the reference holds one row per instant of the event time (distinct
    times at least `policy.one_per_instant` of its rows, by its distinct-count sketch): by the batches that passed, two rows
    of one instant are not the data's nature, and two identical ones are one row twice. Healed by dropping the
    later copies, which loses nothing."""
    assert ctx.snapshot is not None
    instant = _one_per_instant(ctx)
    assert instant is not None  # whole rows are asked for only then
    time, known, distinct = instant
    if count.rate <= ctx.policy.duplicate_rate_limit:
        return
    yield _finding(
        ctx,
        time,
        list(ctx.snapshot.profile.columns),
        count,
        f"{count.rate:.2%} of rows ({count.duplicate_rows} of {count.rows_compared}) repeat an earlier row in every "
        f"column, where the reference holds one row per instant of {time!r} ({distinct:.0f} distinct in "
        f"{known.values} rows): a batch loaded twice? The later copies are dropped (no key is declared: every "
        "column is one).",
        whole_rows=True,
    )


def _finding(
    ctx: GuardContext,
    column: str | None,
    keys: Sequence[str],
    count: KeyCount,
    message: str,
    *,
    whole_rows: bool = False,
) -> Finding:
    assert ctx.snapshot is not None
    window = ctx.snapshot.window
    return make_finding(
        FindingKind.DUPLICATE_KEYS,
        ctx.dataset_urn,
        column,
        observed=round(count.rate, 6),
        expected=ctx.policy.duplicate_rate_limit,
        playbook="dedupe_keys",
        key_columns=list(keys),
        duplicate_rows=count.duplicate_rows,
        rows_compared=count.rows_compared,
        exact=count.exact,
        across_rows=count.across_rows,
        window=window.to_dict() if window else None,
        whole_rows=whole_rows,
        message=message,
    )
