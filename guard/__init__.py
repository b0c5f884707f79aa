"""The guard: pure, deterministic checks of a feature table against its contract.

`GuardContext` in (contract, reference, snapshot statistics, lineage), `Finding`s and a `GuardReport`
out. The only I/O is reading parquet (`profiles.snapshot`, `profiles.batches`, the duplicate-key count).

Batches: `profiles.snapshot.read_snapshot(paths, window=...)` profiles one batch's rows into mergeable
sketches (`profiles.profile.BatchProfile`, JSON round-trip); `profiles.batches.split_batches` cuts a table
into calendar batches in one pass; `profiles.reference.build_reference` merges the last clean batches'
profiles into the `Reference` a new batch is judged against.

Engines: `profiles.engines.snapshot("arrow" | "spark", ...)` computes the same snapshot with pyarrow in
this process or with Spark (local or Spark Connect), with the batch's key hashes from the same pass.
"""
