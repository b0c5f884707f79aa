"""Profile engines: where a snapshot (profile + seeded sample + key hashes) is computed.

`arrow` (the default) streams parquet files through pyarrow in one process; `spark` computes the same
`Snapshot` with pyspark over a path or table, on a local session (`local[N]`) or a remote cluster
(`sc://host:port`, Spark Connect). The checks stay pure over the snapshot either way.

    from profiles.engines import snapshot
    snap = snapshot("arrow", paths, keys=("order_id",), window=window)
    snap = snapshot("spark", paths, keys=("order_id",), session=spark_session("local[2]"))

Submodules load lazily, so importing this package never starts a JVM nor imports pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["ENGINES", "DEFAULT_ENGINE", "snapshot", "engine_names"]

ENGINES = ("arrow", "spark")
DEFAULT_ENGINE = "arrow"

if TYPE_CHECKING:
    from profiles.snapshot import Snapshot


def engine_names() -> tuple[str, ...]:
    return ENGINES


def snapshot(engine: str, source: Any, **options: Any) -> Snapshot:
    """The snapshot of `source` computed by `engine` ("arrow" or "spark"); options as the engine takes them."""
    if engine == "arrow":
        from profiles.engines.arrow import arrow_snapshot

        return arrow_snapshot(source, **options)
    if engine == "spark":
        from profiles.engines.spark import spark_snapshot

        return spark_snapshot(source, **options)
    raise ValueError(f"unknown profile engine {engine!r}: use one of {', '.join(ENGINES)} (spec `engine:`)")
