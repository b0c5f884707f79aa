"""The guard: pure, deterministic checks of a feature table against its contract.

`GuardContext` in (contract, reference, snapshot statistics, lineage), `Finding`s and a `GuardReport`
out. The only I/O is reading parquet (`guard.snapshot`, `guard.batches`, the duplicate-key count).

Batches: `guard.snapshot.read_snapshot(paths, window=...)` profiles one batch's rows into mergeable
sketches (`guard.profile.BatchProfile`, JSON round-trip); `guard.batches.split_batches` cuts a table
into calendar batches in one pass; `guard.reference.build_reference` merges the last clean batches'
profiles into the `Reference` a new batch is judged against.
"""
