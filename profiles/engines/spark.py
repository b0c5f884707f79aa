"""The spark engine: the same `Snapshot` as the arrow engine, computed with pyspark over a path or a table.

Spark reads and filters (the window) natively; every partition then runs the guard's own
`ProfileBuilder` over its rows as Arrow batches (`mapInArrow`), and the driver merges the partitions'
builders: exact counts, nulls, NaN, zeros, min/max and category counts add up; moments merge (Chan);
the KLL quantile sketches (DataSketches' byte format) and the HyperLogLog registers merge; the
key hashes concatenate (exact duplicate keys, 8 bytes a keyed row collected to the driver); the sample
is the rows of smallest (score, canonical row hash) over all partitions, the score a hash of the key
and the seed: the same rows as the arrow engine chooses, whatever the partitioning. The quantile
sketch of a batch read by Spark is another valid KLL of the same rows (rank error 1.33%, 99%
confidence, as DataSketches states for k=200); the profiled quantiles the checks compare come from the
sample, identical in both engines.

Sessions: `spark_session("local[2]")` starts a local JVM; `spark_session("sc://host:15002")` connects
to a Spark Connect server. The executors run this package's code: a local session uses this Python
(PYSPARK_PYTHON); a remote cluster needs `kintsugi` (with numpy, pyarrow, pandas) on its executors, or
`ship_guard(session)` to add the `guard` package as a Python artifact.
"""

from __future__ import annotations

import os
import pickle
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import pyarrow as pa

from profiles.engines.content import ContentDigest
from profiles.profile import TimeWindow
from profiles.profiler import ProfileBuilder
from profiles.snapshot import DEFAULT_SAMPLE_ROWS, Snapshot, SnapshotError, profiled_snapshot, sampled_keys

__all__ = [
    "spark_session",
    "spark_snapshot",
    "probe_spark",
    "read_frame",
    "local_parquet_files",
    "window_filter",
    "window_condition",
    "spark_content_hash",
    "NANOS_PREFIX",
    "ship_guard",
    "map_partitions",
    "SparkEngineError",
    "LOCAL_CONFIG",
]

_CHUNK_ROWS = 1 << 20  # rows profiled at once inside a partition (Arrow batches are gathered up to this)
_PART_SCHEMA = "part binary"
LOCAL_CONFIG = {
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    "spark.driver.memory": "2g",
}
NANOS_PREFIX = "__kintsugi_nanos__"  # read_frame(keep_nanos=True): a column's nanoseconds under the microsecond
CONNECT_PORT = 15002  # Spark Connect's default, when an sc:// URL names none
REACH_TIMEOUT_S = 5.0  # how long a Spark Connect server may take to accept a connection


class SparkEngineError(SnapshotError):
    """Spark could not be started, reached or asked; the message says what to do."""


def spark_session(
    master: str = "local[2]", *, app_name: str = "kintsugi-guard", config: dict[str, str] | None = None
) -> Any:
    """A Spark session: `local[N]` starts one here; `sc://host:port` connects through Spark Connect."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkEngineError(
            "pyspark is not installed: install the spark extra (pip install "
            "'kintsugi[spark]') or choose `engine: arrow`"
        ) from exc
    settings = {**LOCAL_CONFIG, **(config or {})}
    builder = SparkSession.builder.appName(app_name)
    if master.startswith("sc://"):
        _check_reachable(master)
        settings.pop("spark.driver.memory", None)
        builder = builder.remote(master)
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors run this package's code
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        for leftover in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):  # set by an earlier sc:// session
            os.environ.pop(leftover, None)
        settings["spark.api.mode"] = "classic"
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        return builder.getOrCreate()
    except Exception as exc:  # the JVM or the server: one error that names the fix
        raise SparkEngineError(
            f"cannot start or reach Spark at {master!r}: {type(exc).__name__}: {exc}; check "
            "Java 17+ (`java -version`) for local[N], or the Spark Connect URL"
        ) from exc


def _check_reachable(url: str) -> None:
    """Spark Connect's client retries a refused connection for minutes: ask the server's port once, briefly."""
    netloc = url[len("sc://") :].split("/", 1)[0]
    host, _, port = netloc.rpartition(":") if ":" in netloc else (netloc, "", str(CONNECT_PORT))
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_TIMEOUT_S).close()
    except (OSError, ValueError) as exc:
        raise SparkEngineError(
            f"cannot reach Spark Connect at {url!r} ({type(exc).__name__}: {exc}); start the "
            "Spark Connect server there, or fix the URL (sc://host:port)"
        ) from exc


def probe_spark(session: Any) -> dict[str, Any]:
    """What `kintsugi doctor` reports of a session: Spark's version, whether it is Spark Connect, and whether
    the executors run this package's code (a partition imports guard and hashes a row). Raises
    SparkEngineError, naming the fix, when the executors cannot."""

    def work(tables: Iterator[pa.Table]) -> dict[str, Any]:
        import profiles.engines.content as content

        rows = sum(t.num_rows for t in tables)
        return {"rows": rows, "hash": content.ContentDigest.of(pa.table({"x": [1]})).hash}

    try:
        version = session.version
        parts = map_partitions(session.range(1, numPartitions=1), work)
    except Exception as exc:
        raise SparkEngineError(
            f"Spark answers but its executors cannot run the guard ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}); install kintsugi (with numpy, "
            "pyarrow, pandas) on the executors or call ship_guard(session)"
        ) from exc
    expected = ContentDigest.of(pa.table({"x": [1]})).hash
    if not parts or parts[0]["hash"] != expected:
        raise SparkEngineError(
            "the executors hash rows differently from this driver: install the same kintsugi version on the executors"
        )
    connect = type(session).__module__.startswith("pyspark.sql.connect")
    return {"version": version, "connect": connect, "executors_run_guard": True}


def ship_guard(session: Any) -> None:
    """Add this `guard` package to a session's Python path on the executors (a remote cluster without it)."""
    root = Path(__file__).resolve().parents[1]
    folder = Path(tempfile.mkdtemp(prefix="kintsugi-guard-"))
    archive = shutil.make_archive(str(folder / "guard"), "zip", root_dir=root.parent, base_dir=root.name)
    before = set(sys.path)
    if hasattr(session, "addArtifacts"):
        session.addArtifacts(archive, pyfile=True)
    else:
        session.sparkContext.addPyFile(archive)
    # addPyFile also puts the archive on this (driver) process's path, ahead of the installed package: processes
    # spawned later (drill workers) would import `guard` from the zip, where its data files cannot be opened.
    # The driver runs the guard it already imported; only the executors need the archive.
    sys.path[:] = [entry for entry in sys.path if entry in before]


def read_frame(
    session: Any, source: str | Path | Sequence[str | Path], *, table: bool = False, keep_nanos: bool = False
) -> Any:
    """A DataFrame of parquet path(s), or of a catalog table when `table`.

    Spark reads no nanosecond timestamps (pandas writes them); for local files, such columns are read as
    longs and turned back into timestamps (truncated to microseconds, Spark's precision, as the content
    hash truncates them too). With `keep_nanos`, the nanoseconds truncated ride beside each such column, in
    `NANOS_PREFIX + name` (0-999), so that a writer can give the exact values back. A remote path with
    nanosecond timestamps fails: write microseconds.
    """
    if table:
        return session.table(str(source))
    paths = [str(source)] if isinstance(source, (str, Path)) else [str(p) for p in source]
    nanos = _nanosecond_columns(paths)
    if not nanos:
        return session.read.parquet(*paths)
    from pyspark.sql import functions as F

    session.conf.set("spark.sql.legacy.parquet.nanosAsLong", "true")
    frame = session.read.parquet(*paths)
    for name in nanos:
        nanos_ = F.col(f"`{name}`")
        if keep_nanos:
            frame = frame.withColumn(NANOS_PREFIX + name, F.pmod(nanos_, F.lit(1000)))
        micros = F.expr(f"(`{name}` - pmod(`{name}`, 1000)) div 1000")  # exact floor, in integers
        frame = frame.withColumn(name, F.when(nanos_.isNull(), None).otherwise(F.timestamp_micros(micros)))
    return frame


def local_parquet_files(paths: Sequence[str]) -> tuple[str, ...]:
    """Local folders expanded to the parquet files Spark reads in them (sorted; `_` and `.` names skipped),
    so that a snapshot names real files; other paths (remote, files) as given."""
    files: list[str] = []
    for path in paths:
        folder = Path(path)
        if not folder.is_dir():
            files.append(path)
            continue
        found = sorted(
            str(p)
            for p in folder.rglob("*.parquet")
            if not any(part.startswith(("_", ".")) for part in p.relative_to(folder).parts)
        )
        files.extend(found or [path])
    return tuple(files)


def _nanosecond_columns(paths: Sequence[str]) -> list[str]:
    """Columns stored as nanosecond timestamps, from the footer of the first local parquet file."""
    import pyarrow.parquet as pq

    first = Path(paths[0])
    if first.is_dir():
        found = sorted(
            p
            for p in first.rglob("*.parquet")
            if not any(part.startswith(("_", ".")) for part in p.relative_to(first).parts)
        )
        first = found[0] if found else first
    if not first.is_file():
        return []
    schema = pq.read_schema(first)
    return [f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.unit == "ns"]


def window_filter(frame: Any, window: TimeWindow) -> Any:
    """Rows whose time lies in (after_ms, through_ms]; a null time lies in no window."""
    return frame.where(window_condition(frame, window))


def window_condition(frame: Any, window: TimeWindow) -> Any:
    """The Spark condition of `window_filter`: true for the rows in the window, false for the others."""
    from pyspark.sql import functions as F

    column = frame.schema[window.column].dataType.typeName()
    if column not in ("timestamp", "timestamp_ntz", "date"):
        raise SparkEngineError(
            f"the window's time column {window.column!r} is {column}, not a timestamp or date: "
            "cut batches on a time column"
        )
    stamp = F.col(window.column)
    millis = F.unix_date(stamp) * F.lit(86_400_000) if column == "date" else F.unix_millis(stamp)
    condition = stamp.isNotNull()
    if window.after_ms is not None:
        condition = condition & (millis > F.lit(int(window.after_ms)))
    if window.through_ms is not None:
        condition = condition & (millis <= F.lit(int(window.through_ms)))
    return condition


def map_partitions(frame: Any, work: Callable[[Iterator[pa.Table]], Any]) -> list[Any]:
    """Run `work` over each partition's rows (Arrow tables of up to _CHUNK_ROWS rows); collect its pickled
    results on the driver, in partition order. `work` runs on the executors: keep it importable."""

    def per_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        result = work(_gathered(batches))
        if result is not None:
            yield pa.RecordBatch.from_pydict({"part": [pickle.dumps(result, protocol=5)]})

    rows = frame.mapInArrow(per_partition, _PART_SCHEMA).collect()
    return [pickle.loads(row["part"]) for row in rows]


def _gathered(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.Table]:
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        pending.append(batch)
        rows += batch.num_rows
        if rows >= _CHUNK_ROWS:
            yield pa.Table.from_batches(pending)
            pending, rows = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def _arrow_schema(frame: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(frame.schema, timezone="UTC")


def spark_snapshot(
    source: str | Path | Sequence[str | Path],
    *,
    session: Any,
    keys: Sequence[str] = (),
    window: TimeWindow | None = None,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
    seed: int = 0,
    time_column: str | None = None,
    batch_id: str | None = None,
    table: bool = False,
) -> Snapshot:
    """The snapshot of the rows of `source` (in `window`), computed by Spark: see the module's docstring."""
    files = (str(source),) if isinstance(source, (str, Path)) else tuple(str(p) for p in source)
    if not table:
        files = local_parquet_files(files)
    try:
        frame = read_frame(session, source, table=table)
        if window is not None:
            frame = window_filter(frame, window)
        keys = sampled_keys(keys, frame.columns) or ()  # a key column missing: by whole row, as the arrow engine
        total = _row_count(frame, files, local=not table and window is None)
        schema = _arrow_schema(frame)
        builder = _profile(frame, schema, total, tuple(keys), sample_rows, seed)
        profile, sample = builder.finish()
    except SnapshotError:
        raise
    except Exception as exc:  # Spark's own errors (analysis, Py4J, Connect): fail closed, name the source
        raise SparkEngineError(
            f"spark could not profile {', '.join(files)}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}"
        ) from exc
    clock = window.column if window is not None else time_column
    return profiled_snapshot(
        files, schema, profile, sample, clock, window, batch_id, keys=builder.key_hashes(), engine="spark"
    )


def _row_count(frame: Any, files: Sequence[str], *, local: bool) -> int:
    """Rows to profile: from the parquet footers when every file is local and no window filters them (no
    Spark job), else counted by Spark."""
    import pyarrow.parquet as pq

    if local and files and all(Path(f).is_file() for f in files):
        return sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    return int(frame.count())


def _profile(
    frame: Any, schema: pa.Schema, total: int, keys: tuple[str, ...], sample_rows: int, seed: int
) -> ProfileBuilder:
    def work(tables: Iterator[pa.Table]) -> ProfileBuilder | None:
        builder = None
        for part in tables:
            if builder is None:
                builder = ProfileBuilder(
                    part.schema, total, sample_rows=sample_rows, seed=seed, keys=keys, strict_rows=False
                )
            builder.add(part)
        return builder

    merged = ProfileBuilder(schema, total, sample_rows=sample_rows, seed=seed, keys=keys, strict_rows=False)
    for part in map_partitions(frame, work):
        merged.merge(part)
    merged.strict_rows = True
    return merged


def spark_content_hash(frame: Any) -> str:
    """The order-independent content hash of a DataFrame's rows (`profiles.engines.content`), summed over
    partitions: equal to the arrow engine's for the same logical rows."""

    def work(tables: Iterator[pa.Table]) -> ContentDigest:
        digest = ContentDigest()
        for part in tables:
            digest = digest.merge(ContentDigest.of(part))
        return digest

    digest = ContentDigest()
    for part in map_partitions(frame, work):
        digest = digest.merge(part)
    return digest.hash
