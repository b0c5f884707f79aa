"""benchmarks/corpus_bench.py: a failure of several columns is named whole only when each of its columns is named by
a blocking finding of a kind that names it right."""

from __future__ import annotations

from benchmarks.corpus_bench import _every_column_named

NULLS = {"columns": ["a", "b"], "kind": "null_limit", "kinds": ["null_limit", "null_spike"]}


def test_every_column_of_a_failure_must_be_named_by_a_blocking_finding_of_a_right_kind() -> None:
    assert _every_column_named(NULLS, ["null_spike:a:block", "null_limit:b:block"])
    assert not _every_column_named(NULLS, ["null_spike:a:block"])  # one of two columns
    assert not _every_column_named(NULLS, ["null_spike:a:block", "null_spike:b:warn"])  # a warning names nothing
    assert not _every_column_named(NULLS, ["null_spike:a:block", "drift:b:block"])  # not its cause
    assert _every_column_named({"columns": [], "kind": "volume_drop"}, ["volume_drop:-:block"])
    keyed = {"columns": ["k1", "k2"], "kind": "duplicate_keys"}
    assert _every_column_named(keyed, ["duplicate_keys:-:block"])  # a key of two columns, named whole
