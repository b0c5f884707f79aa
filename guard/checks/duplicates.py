"""Duplicate keys: rows repeating a primary key, counted by `profiles.repeats` from the snapshot's key columns (a
batch: its rows in the window; with the whole table's files, also the batch rows whose key the rest of the table
has). With no key declared, whole rows repeated in a batch whose reference holds one row per instant
(`_repeated_rows`). Why the key columns are read again rather than the row sample: `profiles.repeats`.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from guard.context import GuardContext
from guard.findings import Finding, make_finding
from guard.kinds import FindingKind
from guard.registry import register
from profiles.repeats import _FLAT, KeyCount, count_duplicate_keys

__all__ = ["check_duplicates"]


@register("duplicates", per_column=False)
def check_duplicates(ctx: GuardContext) -> Iterator[Finding]:
    assert ctx.contract and ctx.snapshot
    keys = ctx.contract.key_columns
    if not keys:
        yield from _repeated_rows(ctx)
        return
    if any(k not in ctx.snapshot.profile.columns for k in keys):
        return  # a key column missing: the schema check reports that
    snapshot = ctx.snapshot
    count = count_duplicate_keys(
        snapshot.files, keys, window=snapshot.window, expected_rows=snapshot.profile.row_count, history=ctx.table_paths
    )
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


def _repeated_rows(ctx: GuardContext) -> Iterator[Finding]:
    """No key declared: a batch loaded twice repeats whole rows. Rows of the batch identical in every column to an
    earlier one are a duplicate load when the reference holds one row per instant of the event time (distinct
    times at least `policy.one_per_instant` of its rows, by its distinct-count sketch): by the batches that passed, two rows
    of one instant are not the data's nature, and two identical ones are one row twice. Healed by dropping the
    later copies, which loses nothing."""
    assert ctx.contract and ctx.snapshot
    snapshot, time, reference = ctx.snapshot, ctx.contract.event_timestamp_column, ctx.reference_profile
    known = reference.columns.get(time) if reference is not None and time is not None else None
    distinct = known.distinct_count if known is not None else None
    if known is None or distinct is None or not known.values or distinct < ctx.policy.one_per_instant * known.values:
        return
    columns = list(snapshot.profile.columns)
    if any(c.logical_type not in _FLAT for c in snapshot.profile.columns.values()):
        return  # a nested column (a list, a struct) has no row hash: whole rows cannot be compared
    count = count_duplicate_keys(
        snapshot.files, columns, window=snapshot.window, expected_rows=snapshot.profile.row_count
    )
    if count.rate <= ctx.policy.duplicate_rate_limit:
        return
    yield _finding(
        ctx,
        time,
        columns,
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
