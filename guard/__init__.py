"""The guard: pure, deterministic checks of a feature table against its contract.

`GuardContext` in (contract, reference profile, snapshot statistics, lineage),
`Finding`s and a `GuardReport` out. The only I/O is reading the parquet snapshot
(`guard.snapshot`).
"""
