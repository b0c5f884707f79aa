"""The profile engines side by side in one run, every figure from the path `kintsugi run` takes: the shipped guard
vs the scan floor (1M/10M/50M rows, wall and CPU, peak RSS), guard time vs history size, the spark engine vs arrow,
and whether the two engines draw the same sample.

    python benchmarks/engine_bench.py [--sizes 1000000,10000000,50000000] [--history 1,10,30] [--history-rows 200000]
                                      [--history-repeat 7] [--spark-rows 10000000] [--repeat 2] [--skip-spark]
                                      [--parity-only]

The pipeline, onboarded by the real CLI as a user would (setup, not timed): a 10-column table
(`guard_bench.write_table`: a string key, an event time one row a second, five numbers, two categories, a label)
of three days, `kintsugi init --key order_id --yes` on it, `kintsugi run` (a first champion; the newest day kept),
then a clean batch of N rows landed with `kintsugi land`. Every measurement runs in its own fresh child process
(imports excluded from the time, peak RSS = the child's VmHWM). Each of --repeat rounds runs the contenders back to
back, so a busy moment weighs on a round's contenders alike; a ratio is taken within each round, and the lines
`detect/floor`, `guard/floor`, `guard/pandera` print the median of the per-round ratios, wall and CPU, with their
range and the rounds' load (a round whose load passed the cores is counted). The contenders' own lines are each one's
best round.

- floor: pyarrow reads every column of the row groups holding the new rows (the rows the guard must judge), row
  group by row group, and computes null_count and pc.min_max.
- guard: the shipped guard, as `kintsugi run`'s detect calls it, on a copy of the workspace: the table pinned and
  its contract parsed beside the pin (`pin_reading_contract`, timed apart), the pinned file's block digests taken
  (`tables.readonce.digests_of`, detect's check, timed apart as verify), then `guard_table(ws, metadata, spec,
  pinned, now, engine=TableEngine.of(spec), keep_caches=True, contract_read=...)` reading through the door
  (`readonce.verified`: every block hashed as it is read; the figure: wall and CPU). Spark reads by path, outside
  the door: its verify is detect's `verify_file` after the guard. Detect is what every run pays: the pin, the
  verify and the guard, summed (`detect/floor`).
  The batch is clean: its verdict is printed, and anything but CLEAN is flagged as a failure of the bench.
- pandera (up to 10M rows): `pd.read_parquet` of the batch + the equivalent DataFrameSchema (as guard_bench).
- history: the loop's own guard of one new daily batch (--history-rows rows) landed after N kept daily batches,
  N = 1, 10, 30, in a demo workspace left as a run leaves it (warm) and without the caches it leaves (cold: the
  first run after `kintsugi init`, or `kintsugi guard`): the time, wall and CPU, should not grow with N. A guard of
  a day takes a fraction of a second, where a moment's load moves the best of a few runs by a fifth: the histories
  are all prepared first, then each of --history-repeat rounds runs every history warm and cold back to back, and
  `history warm 1->30` / `history cold 1->30` print the median of the per-round ratios.
- spark: the same guard with `engine: spark` on local[2] (session start-up apart) beside arrow at --spark-rows,
  same verdict expected (its CPU: this process, the JVM and its Python workers); and the two engines' snapshots
  of the batch as the guard reads them, compared: the same sample rows (`--parity-only`: this check alone,
  `make bench-parity`).

A warning is printed whenever the 1-minute load average exceeds the cores: other work then shares them, and wall
times are upper bounds (CPU times less so).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from guard_bench import _measure, run_pandera_once, write_table  # noqa: E402

KINTSUGI = str(Path(sys.executable).with_name("kintsugi"))
PIPELINE = "bench"
PANDERA_MAX_ROWS = 10_000_000  # pandera loads the whole table into pandas: not at 50M
HISTORY_DAYS = 3  # the onboarded table: three days, one row a second
TABLE_START = datetime(2025, 1, 1, tzinfo=timezone.utc)  # guard_bench.write_table's first event time


# --- the pipeline (setup, not timed) ---------------------------------------------------------------------------


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _kintsugi(*args: str) -> str:
    """The installed CLI, as a user runs it; a failure ends the bench with its output."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATAHUB_GMS_URL", "MLFLOW_TRACKING_URI", "KINTSUGI_HOME")}
    done = subprocess.run([KINTSUGI, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"kintsugi {args[0]} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def prepare_pipeline(folder: Path, rows: int, table_format: str = "parquet") -> dict[str, Any]:
    """A pipeline onboarded on three days of the table, its first run done, and a clean batch of `rows` rows landed
    (see the module's docstring), the table kept as one parquet file, a Delta table or an Iceberg table in the
    workspace's catalog (each landed batch one commit); returns what the children need (meta.json in `folder`):
    the row groups of the parquet table, or the data files of the format's table, that hold the new rows."""
    import pyarrow.parquet as pq

    from controlplane.stages.kept_reference import load_state
    from controlplane.workspace import Workspace

    history_rows = HISTORY_DAYS * 86_400
    table, batch, ws = folder / "table.parquet", folder / "batch.parquet", folder / "ws"
    write_table(table, history_rows, seed=1)
    write_table(batch, rows, seed=0, offset=history_rows)
    data = _as_format(table, ws, table_format)
    first_now = _iso(TABLE_START + timedelta(seconds=history_rows, hours=1))
    now = TABLE_START + timedelta(seconds=history_rows + rows - 1, hours=1)
    common = ("--workspace", str(ws))
    _kintsugi("init", PIPELINE, "--data", data, "--target", "eta_minutes", "--time-column", "event_ts",
              "--key", "order_id", "--now", first_now, "--yes", *common)  # fmt: skip
    _kintsugi("run", PIPELINE, "--now", first_now, *common)
    before = set(_data_files(ws, data)) if table_format != "parquet" else set()
    _kintsugi("land", PIPELINE, str(batch), "--now", _iso(now), *common)
    state = load_state(Workspace(ws), PIPELINE)
    assert state is not None and state.watermark_ms is not None
    meta: dict[str, Any] = {"table": str(table), "batch": str(batch), "now_ms": int(now.timestamp() * 1000)}
    if table_format != "parquet":  # the commit's new data files
        meta["files"] = sorted(set(_data_files(ws, data)) - before)
    else:
        source = pq.ParquetFile(table)
        column = source.schema_arrow.get_field_index("event_ts")
        meta["groups"] = [
            group
            for group in range(source.num_row_groups)
            if _max_ms(source.metadata.row_group(group).column(column).statistics) > state.watermark_ms
        ]
    (folder / "meta.json").write_text(json.dumps(meta))
    return meta


def _as_format(table: Path, ws: Path, table_format: str) -> str:
    """The parquet `table` kept in `table_format` (written once, setup); returns the spec's `data:` for it."""
    if table_format == "parquet":
        return str(table)
    import pyarrow.parquet as pq

    from demo.feature_tables import write_rows

    data = str(ws.parent / "delta") if table_format == "delta" else "iceberg:bench.features"
    write_rows(ws, data, pq.read_table(table), append=False)
    return data


def _data_files(ws: Path, data: str) -> list[str]:
    """The local paths of the data files of a Delta or Iceberg table's current version."""
    if data.startswith("iceberg:"):
        from tables.iceberg import workspace_catalog

        files = workspace_catalog(ws).load_table(data.removeprefix("iceberg:")).inspect.files()
        return [path.removeprefix("file://") for path in files.column("file_path").to_pylist()]
    from deltalake import DeltaTable

    return [uri.removeprefix("file://") for uri in DeltaTable(data).file_uris()]


def _max_ms(statistics: Any) -> float:
    if statistics is None or not statistics.has_min_max:
        return float("inf")  # unknown: the floor reads it, as the guard must
    return statistics.max.timestamp() * 1000


# --- the children ------------------------------------------------------------------------------------------


def _report(report: Any) -> dict[str, Any]:
    return {"verdict": report.verdict.value, "findings": [f"{f.kind.value}:{f.column}" for f in report.findings]}


def run_floor_once(folder: str) -> dict[str, Any]:
    """pyarrow over every column of the row groups holding the new rows (of a Delta or Iceberg table: the data files
    the batch's commit added): the least any guard of them reads."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    meta = json.loads((Path(folder) / "meta.json").read_text())

    def work() -> dict[str, Any]:
        nbytes, rows = 0, 0
        parts = [(meta["table"], meta["groups"])] if "groups" in meta else [(path, None) for path in meta["files"]]
        for path, groups in parts:
            parquet = pq.ParquetFile(path)
            for index in range(parquet.num_row_groups) if groups is None else groups:
                group = parquet.read_row_group(index)
                nbytes, rows = nbytes + group.nbytes, rows + group.num_rows
                for column in group.columns:
                    _ = column.null_count, pc.min_max(column)
        return {"table_mb": nbytes / 2**20, "rows": rows}

    return _measure(work)


def _tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and every live descendant (Spark's JVM and its Python workers),
    each with what its reaped children used: a spark guard's work is mostly outside this process."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the process ended meanwhile
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = sum(int(f) for f in fields[11:15]) / ticks  # utime stime cutime cstime
    tree, frontier = {os.getpid()}, [os.getpid()]
    while frontier:
        pid = frontier.pop()
        children = [child for child, parent in parents.items() if parent == pid and child not in tree]
        tree.update(children)
        frontier += children
    return sum(used.get(pid, 0.0) for pid in tree)


def _engine(name: str) -> Any:
    from controlplane.runs.engine import TableEngine

    return TableEngine("spark", "local[2]") if name == "spark" else TableEngine("arrow")


def run_guard_once(folder: str, engine_name: str) -> dict[str, Any]:
    """The shipped guard (see the module's docstring) on a copy of the prepared workspace."""
    from controlplane.datahub.connect import metadata_session
    from controlplane.spec import load_spec
    from controlplane.stages.detect import pin_reading_contract
    from controlplane.stages.guarding import guard_table
    from controlplane.stages.pin import verify_file
    from controlplane.workspace import Workspace
    from tables import readonce

    meta = json.loads((Path(folder) / "meta.json").read_text())
    engine = _engine(engine_name)
    with tempfile.TemporaryDirectory(prefix="engine-guard-") as tmp:
        ws = Workspace(Path(tmp) / "ws")
        shutil.copytree(Path(folder) / "ws", ws.root)
        spec = load_spec(ws, PIPELINE)
        started = time.perf_counter()
        if engine.spark:
            engine.session().range(1).collect()
        session_s = time.perf_counter() - started
        try:
            with metadata_session(ws) as metadata:
                started, cpu = time.perf_counter(), time.process_time()  # as detect: contract parsed during the pin
                pinned, contract = pin_reading_contract(ws, metadata, spec, ws.runs / "timed" / "snapshot")
                pin_s, pin_cpu_s = time.perf_counter() - started, time.process_time() - cpu
                started, cpu = time.perf_counter(), time.process_time()
                digests = None if engine.spark else readonce.digests_of(pinned.path(ws), pinned.table_hash)
                verify_s, verify_cpu_s = time.perf_counter() - started, time.process_time() - cpu

                def work() -> dict[str, Any]:
                    door = (
                        readonce.verified(pinned.path(ws), digests) if digests is not None else contextlib.nullcontext()
                    )
                    with door:
                        guarded = guard_table(
                            ws,
                            metadata,
                            spec,
                            pinned.path(ws),
                            meta["now_ms"],
                            engine=engine,
                            keep_caches=True,
                            contract_read=contract,
                        )
                    return {
                        **_report(guarded.report),
                        "new_rows": guarded.batch.profile.row_count if guarded.batch else 0,
                    }

                tree_before = _tree_cpu_seconds()
                result = _measure(work)
                if engine.spark:  # the JVM's and its Python workers' CPU too
                    result["cpu_s"] = _tree_cpu_seconds() - tree_before
        finally:
            engine.close()
        if engine.spark:  # read by path, outside the door: checked after
            started, cpu = time.perf_counter(), time.process_time()
            verify_file(ws, pinned.table, pinned.table_hash, "the guard")
            verify_s, verify_cpu_s = time.perf_counter() - started, time.process_time() - cpu
    detect = {
        "detect_s": pin_s + verify_s + result["seconds"],
        "detect_cpu_s": pin_cpu_s + verify_cpu_s + result["cpu_s"],
    }
    return {**result, **detect, "pin_s": pin_s, "verify_s": verify_s, "session_s": session_s}


def run_parity_once(folder: str, _: str) -> dict[str, Any]:
    """The new batch as the guard reads it (`guard_table`'s window, its engine's snapshot), by arrow and by spark:
    whether both draw the same sample rows, and the same profile counts."""
    from controlplane.datahub.connect import metadata_session
    from controlplane.runs.engine import TableEngine
    from controlplane.spec import load_spec
    from controlplane.stages.guarding import contract_keys
    from controlplane.stages.kept_reference import load_state, new_rows_window
    from controlplane.workspace import Workspace

    meta = json.loads((Path(folder) / "meta.json").read_text())
    ws = Workspace(Path(folder) / "ws")
    state = load_state(ws, PIPELINE)
    assert state is not None
    with metadata_session(ws, read_only=True) as metadata:
        keys = contract_keys(metadata, load_spec(ws, PIPELINE))
    window, table = new_rows_window(state), Path(meta["table"])
    found: dict[str, Any] = {}
    for rule, sampled_by in (("key", keys), ("whole row", ())):  # the contract's key; as a table without one
        snaps, seconds = {}, {}
        for name in ("arrow", "spark"):
            engine: TableEngine = _engine(name)
            try:
                if engine.spark:
                    engine.session().range(1).collect()
                started = time.perf_counter()
                snaps[name] = engine.snapshot(table, keys=sampled_by, window=window, batch_id="parity")
                seconds[name] = time.perf_counter() - started
            finally:
                engine.close()
        arrow, spark = snaps["arrow"], snaps["spark"]
        found[rule] = {
            "rows": arrow.profile.row_count,
            "sample_rows": len(arrow.sample),
            "identical": len(arrow.sample) > 0
            and bool(arrow.sample.reset_index(drop=True).equals(spark.sample.reset_index(drop=True))),
            "same_counts": _counts(arrow) == _counts(spark),
            "arrow_s": seconds["arrow"],
            "spark_s": seconds["spark"],
        }
    return found


def _counts(snapshot: Any) -> dict[str, tuple[Any, ...]]:
    return {n: (c.row_count, c.null_count, c.minimum, c.maximum) for n, c in snapshot.profile.columns.items()}


def run_history_once(path: str, _: str, *, cold: bool = False) -> dict[str, Any]:
    """The loop's own guard of one new batch (`controlplane.stages.guarding.guard_table`, as detect calls it) in a
    workspace prepared by `prepare_history`: a copy of the workspace is pinned as a run pins it, its contract parsed
    beside the pin (not timed), then the guard is timed on the pinned copy. `cold`: without the caches a previous
    run's guard left (the workspace's `cache/`: row groups' fingerprints, merged references), as the first run after
    `kintsugi init` or a `kintsugi guard` finds it."""
    from controlplane.datahub.connect import metadata_session
    from controlplane.spec import load_spec
    from controlplane.stages.detect import pin_reading_contract
    from controlplane.stages.guarding import guard_table
    from controlplane.workspace import Workspace
    from demo.seed import PIPELINE as DEMO_PIPELINE

    with tempfile.TemporaryDirectory(prefix="history-run-") as tmp:
        ws = Workspace(Path(tmp) / "ws")
        shutil.copytree(Path(path) / "ws", ws.root)
        if cold:
            shutil.rmtree(ws.cache, ignore_errors=True)
        spec = load_spec(ws, DEMO_PIPELINE)
        with metadata_session(ws) as metadata:
            started = time.perf_counter()
            pinned, contract = pin_reading_contract(ws, metadata, spec, ws.runs / "timed" / "snapshot")
            pin_s = time.perf_counter() - started

            def work() -> dict[str, Any]:
                guarded = guard_table(
                    ws, metadata, spec, pinned.path(ws), _history_now_ms(), keep_caches=True, contract_read=contract
                )
                batch = guarded.batch
                return {**_report(guarded.report), "new_rows": batch.profile.row_count if batch else 0}

            return {**_measure(work), "pin_s": pin_s}


CHILDREN = {
    "floor": lambda a: run_floor_once(a.path),
    "guard": lambda a: run_guard_once(a.path, a.engine),
    "pandera": lambda a: run_pandera_once(json.loads((Path(a.path) / "meta.json").read_text())["batch"]),
    "history": lambda a: run_history_once(a.path, a.engine),
    "history-cold": lambda a: run_history_once(a.path, a.engine, cold=True),
    "parity": lambda a: run_parity_once(a.path, a.engine),
}


# --- the parent ----------------------------------------------------------------------------------------


def load_note() -> str:
    """The 1-minute load average against the cores, with a warning when other work exceeds them."""
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    note = f"load average {load:.1f} on {cores} cores"
    if load > cores:
        note += f"  WARNING: the load exceeds the {cores} cores (other work shares them): wall times are upper bounds"
    return note


def run_child(kind: str, path: Path, engine: str = "arrow") -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--path", str(path), "--engine", engine]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    fastest = min(runs, key=lambda run: run["seconds"])
    least = {key: min(r[key] for r in runs) for key in ("cpu_s", "pin_s", "verify_s") if key in fastest}
    return {**fastest, **least, "peak_mb": max(r["peak_mb"] for r in runs)}


def rounds_of(kinds: list[tuple[str, str]], path: Path, repeat: int) -> list[dict[tuple[str, str], dict[str, Any]]]:
    """`repeat` rounds, each running every contender back to back (a busy moment slows a round's contenders alike),
    with the round's 1-minute load average under "load"."""
    rounds = []
    for _ in range(repeat):
        done: dict[Any, Any] = {(kind, engine): run_child(kind, path, engine) for kind, engine in kinds}
        done["load"] = os.getloadavg()[0]
        rounds.append(done)
    return rounds


def measure(kinds: list[tuple[str, str]], path: Path, repeat: int) -> dict[tuple[str, str], dict[str, Any]]:
    rounds = rounds_of(kinds, path, repeat)
    return {kind: best([r[kind] for r in rounds]) for kind in kinds}


def per_round(
    rounds: list[dict[Any, Any]], top: tuple[tuple[str, str], str, str], bottom: tuple[tuple[str, str], str, str]
) -> str:
    """The median and range of the per-round ratios of one contender's (wall, CPU) keys to another's: each round's
    two runs came back to back, so the machine's load that round weighs on both."""
    (a, a_wall, a_cpu), (b, b_wall, b_cpu) = top, bottom
    walls = [r[a][a_wall] / r[b][b_wall] for r in rounds]
    cpus = [r[a][a_cpu] / max(r[b][b_cpu], 1e-9) for r in rounds]
    loads = [r["load"] for r in rounds]
    busy = sum(load > (os.cpu_count() or 1) for load in loads)
    return (
        f"wall {statistics.median(walls):.2f}x ({min(walls):.2f}-{max(walls):.2f}) "
        f"cpu {statistics.median(cpus):.2f}x ({min(cpus):.2f}-{max(cpus):.2f}); {len(rounds)} rounds, load "
        f"{min(loads):.1f}-{max(loads):.1f}" + (f", {busy} beyond the cores" if busy else "")
    )


def _line(name: str, run: dict[str, Any], floor: dict[str, Any] | None) -> str:
    ratio = (
        f"  wall {run['seconds'] / floor['seconds']:5.2f}x  cpu {run['cpu_s'] / floor['cpu_s']:5.2f}x floor"
        if floor
        else ""
    )
    verdict = ""
    if "verdict" in run:
        verdict = f"  {run['verdict']} {run['findings'] or ''}"
        if run["verdict"] != "CLEAN":
            verdict += "  <- NOT CLEAN: the batch is clean, the guard must read it CLEAN"
    apart = f"  (pin {run['pin_s']:.2f} s, verify {run['verify_s']:.2f} s: apart)" if "pin_s" in run else ""
    return (
        f"    {name:<13} {run['seconds']:7.2f} s (cpu {run['cpu_s']:6.2f} s)  peak RSS {run['peak_mb']:6.0f} MB"
        f"{ratio}{verdict}{apart}"
    )


def section_size(rows: int, folder: Path, setup_s: float, repeat: int) -> None:
    kinds = [("floor", "arrow"), ("guard", "arrow")] + ([("pandera", "arrow")] if rows <= PANDERA_MAX_ROWS else [])
    rounds = rounds_of(kinds, folder, repeat)
    results = {kind: best([r[kind] for r in rounds]) for kind in kinds}
    floor = results[("floor", "arrow")]
    print(
        f"  {rows:>11,} new rows  (set up in {setup_s:.0f} s; the floor reads {floor['rows']:,} rows, "
        f"{floor['table_mb']:.0f} MB in memory)"
    )
    for kind, engine in kinds:
        print(
            _line(
                {"guard": "shipped guard"}.get(kind, kind), results[(kind, engine)], floor if kind != "floor" else None
            )
        )
    size = f"{rows / 1e6:g}M"
    guard, scan = (("guard", "arrow"), "seconds", "cpu_s"), (("floor", "arrow"), "seconds", "cpu_s")
    detect = (("guard", "arrow"), "detect_s", "detect_cpu_s")
    peak = max(r[("guard", "arrow")]["peak_mb"] for r in rounds)
    print(f"detect/floor {size}: {per_round(rounds, detect, scan)}; peak RSS {peak:.0f} MB")
    print(f"guard/floor {size}: {per_round(rounds, guard, scan)}")
    if ("pandera", "arrow") in kinds:
        print(f"guard/pandera {size}: {per_round(rounds, guard, (('pandera', 'arrow'), 'seconds', 'cpu_s'))}")
    print(f"    {load_note()}", flush=True)


def section_format(rows: int, folder: Path, table_format: str, setup_s: float, repeat: int) -> None:
    """Detect of the same clean batch landed as one commit of a Delta or Iceberg table, against the floor of the
    data files that commit added: the pin reads the version's files once (`tables.versioned`)."""
    kinds = [("floor", "arrow"), ("guard", "arrow")]
    rounds = rounds_of(kinds, folder, repeat)
    floor, guard = (best([r[kind] for r in rounds]) for kind in kinds)
    print(
        f"  {rows:>11,} new rows, one commit of the {table_format} table (set up in {setup_s:.0f} s; the floor reads "
        f"{floor['rows']:,} rows of the commit's files, {floor['table_mb']:.0f} MB in memory)"
    )
    print(_line("floor", floor, None))
    print(_line("shipped guard", guard, floor))
    scan, detect = (kinds[0], "seconds", "cpu_s"), (kinds[1], "detect_s", "detect_cpu_s")
    peak = max(r[kinds[1]]["peak_mb"] for r in rounds)
    print(f"detect/floor {rows / 1e6:g}M {table_format}: {per_round(rounds, detect, scan)}; peak RSS {peak:.0f} MB")
    print(f"    {load_note()}", flush=True)


def section_spark(rows: int, folder: Path) -> None:
    print(f"\n== spark engine (local[2]) vs arrow, the shipped guard at {rows:,} new rows (same verdict expected)")
    results = measure([("floor", "arrow"), ("guard", "arrow"), ("guard", "spark")], folder, 1)
    floor, arrow, spark = results[("floor", "arrow")], results[("guard", "arrow")], results[("guard", "spark")]
    for name, run in (("floor", floor), ("arrow guard", arrow), ("spark guard", spark)):
        print(_line(name, run, floor if run is not floor else None))
    same = (spark["verdict"], spark["findings"]) == (arrow["verdict"], arrow["findings"])
    print(
        f"    spark/arrow {spark['seconds'] / arrow['seconds']:.1f}x wall; spark session start-up "
        f"{spark['session_s']:.1f} s (not counted); same verdict and findings: {same}"
    )
    print(f"    {load_note()}", flush=True)


def section_parity(rows: int, folder: Path) -> None:
    print(f"\n== the two engines' samples of the {rows:,} new rows, as the guard reads them (TableEngine.snapshot)")
    for rule, found in run_child("parity", folder).items():
        print(
            f"    by {rule:<9}  arrow {found['arrow_s']:5.1f} s, spark {found['spark_s']:5.1f} s; "
            f"{found['sample_rows']:,}-row samples identical (same rows, order and values): {found['identical']}; "
            f"same exact counts: {found['same_counts']}"
        )
    print(f"    {load_note()}", flush=True)


HISTORY_ANCHOR = datetime(2026, 10, 1, tzinfo=timezone.utc)


def _history_now_ms() -> int:
    return int((HISTORY_ANCHOR + timedelta(hours=1)).timestamp() * 1000)


def prepare_history(folder: Path, kept: int, rows_per_day: int, days: Any) -> None:
    """A workspace as the loop leaves it after a run kept its batch, with `kept` daily batches in the reference and
    one more day landed: the demo estate, the delivery table written a day at a time (its own row groups per day),
    the reference established from its first `kept` days and taken back by one (as `kintsugi init` leaves the
    newest day to the first run), that day guarded by the loop's guard and kept as a passed batch is
    (`save_batch` with the keys its guard hashed: what a clean run's remember_reference does), then the next day
    landed (`kintsugi land`). The caches a run's guard keeps (row groups' fingerprints, the key index) are kept."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from controlplane.datahub.connect import metadata_session
    from controlplane.datahub.datasets import profile_mcps
    from controlplane.spec import load_spec
    from controlplane.stages.guarding import guard_table
    from controlplane.stages.kept_reference import establish, forget_after, load_state, save_batch
    from controlplane.stages.pin import append_batch, pin_table
    from controlplane.workspace import Workspace
    from demo.seed import FEATURE_TABLE, PIPELINE, seed_estate

    ws = Workspace(folder / "ws").ensure()
    seed_estate(ws, seed=7, anchor=HISTORY_ANCHOR)
    spec = load_spec(ws, PIPELINE)
    chosen = days[-(kept + 1) :]
    table = ws.data / "eta_features.parquet"
    schema = pa.Schema.from_pandas(chosen[0], preserve_index=False)
    with pq.ParquetWriter(table, schema) as writer:
        for day in chosen[:-1]:
            writer.write_table(pa.Table.from_pandas(day, schema=schema, preserve_index=False), row_group_size=100_000)
    establish(ws, spec, table, cadence="day")
    state = load_state(ws, PIPELINE)
    assert state is not None and len(state.batches) == kept
    newest_but_one = (
        None
        if kept == 1
        else json.loads((ws.references / PIPELINE / "batches" / f"{state.batches[-2]}.json").read_text())["end_ms"]
    )
    forget_after(ws, PIPELINE, kept - 1, newest_but_one)
    now_ms = _history_now_ms()
    with metadata_session(ws) as metadata:
        from controlplane.stages.kept_reference import load_reference

        reference = load_reference(ws, PIPELINE)
        if reference is not None:
            metadata.emit(profile_mcps(FEATURE_TABLE, reference.profile, now_ms), now_ms)
        pinned = pin_table(ws, spec, ws.runs / "previous" / "snapshot")
        guarded = guard_table(ws, metadata, spec, pinned.path(ws), now_ms, keep_caches=True)  # as detect calls it
        assert guarded.batch is not None, "the previous run guarded no new batch"
        state = load_state(ws, PIPELINE)
        assert state is not None
        save_batch(ws, PIPELINE, guarded.batch, state, keys=guarded.keys)  # as remember_reference keeps it
    shutil.rmtree(ws.runs / "previous")
    landed = folder / "landed.parquet"
    pq.write_table(pa.Table.from_pandas(chosen[-1], schema=schema, preserve_index=False), landed)
    append_batch(ws, spec, landed)
    landed.unlink()


def median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median wall and CPU of runs (the middle one, or the mean of the two in the middle)."""
    return {key: statistics.median(r[key] for r in runs) for key in ("seconds", "cpu_s")}


def section_history(counts: list[int], workdir: Path, repeat: int, rows_per_day: int) -> None:
    from demo.generate import generate_eta_features

    print(
        f"\n== the loop's guard (guard_table, as `kintsugi run` calls it) of one new {rows_per_day:,}-row daily batch "
        f"vs kept history (target: flat within 1.2x), warm (with the caches a run leaves) and cold (without them); "
        f"{repeat} rounds, each running every history back to back: the median of each, and of the per-round ratios"
    )
    frame = generate_eta_features(days=max(counts) + 1, seed=7, anchor=HISTORY_ANCHOR, rows_per_day=rows_per_day)
    day = frame["event_ts"].dt.floor("D")
    days = [part.reset_index(drop=True) for _, part in frame.groupby(day, sort=True)]
    del frame
    folders = {n: workdir / f"history-{n}" for n in counts}
    for n, folder in folders.items():
        folder.mkdir()
        prepare_history(folder, n, rows_per_day, days)
    rounds: list[dict[Any, Any]] = []
    for _ in range(repeat):  # each round: every history, warm then cold, back to back
        done: dict[Any, Any] = {(kind, str(n)): run_child(kind, folders[n]) for n in counts for kind in HISTORY_KINDS}
        done["load"] = os.getloadavg()[0]
        rounds.append(done)
    for folder in folders.values():
        shutil.rmtree(folder)
    for kind in HISTORY_KINDS:
        middle = {n: median([r[(kind, str(n))] for r in rounds]) for n in counts}
        base = middle[min(counts)]
        for n in counts:
            run, top = middle[n], best([r[(kind, str(n))] for r in rounds])
            print(
                f"    {kind.removeprefix('history-') if kind != 'history' else 'warm':<5} {n:>3} kept  "
                f"{run['seconds']:6.2f} s wall  {run['seconds'] / base['seconds']:5.2f}x   cpu {run['cpu_s']:6.2f} s  "
                f"{run['cpu_s'] / base['cpu_s']:5.2f}x   peak RSS {top['peak_mb']:5.0f} MB   (pin, not timed: "
                f"{top['pin_s']:.2f} s)  {top['verdict']} {top['findings'] or ''}"
            )
    low, high = str(min(counts)), str(max(counts))
    for kind, name in (("history", "warm"), ("history-cold", "cold")):
        ratio = per_round(rounds, ((kind, high), "seconds", "cpu_s"), ((kind, low), "seconds", "cpu_s"))
        print(f"history {name} {low}->{high}: {ratio} (target <= 1.2x)")
    print(f"    {load_note()}", flush=True)


HISTORY_KINDS = ("history", "history-cold")  # with the caches a run leaves, and without them


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000,50000000")
    parser.add_argument("--history", default="1,10,30")
    parser.add_argument("--history-rows", type=int, default=200_000, help="rows per kept daily batch")
    parser.add_argument("--spark-rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3, help="rounds per size (the median of per-round ratios)")
    parser.add_argument("--history-repeat", type=int, default=7, help="rounds of the history section (median)")
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--formats", default="delta,iceberg", help="table formats detect is also measured on")
    parser.add_argument("--format-rows", type=int, default=10_000_000, help="new rows of the formats' batch")
    parser.add_argument("--parity-only", action="store_true", help="only whether both engines sample alike")
    parser.add_argument("--child", choices=sorted(CHILDREN), help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--engine", default="arrow", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(CHILDREN[args.child](args)))
        return
    sizes = [] if args.parity_only else [int(s) for s in args.sizes.split(",") if s]
    history = [] if args.parity_only else [int(n) for n in args.history.split(",") if n]
    spark_rows = None if args.skip_spark else args.spark_rows
    print(
        f"engine benchmark: {args.repeat} rounds a size, contenders back to back in each (1 round for spark); the "
        "ratio lines are medians of per-round ratios (range in parentheses); each measurement in a fresh child; "
        f"peak = its VmHWM; {load_note()}"
    )
    with tempfile.TemporaryDirectory(prefix="engine-bench-") as tmp:
        workdir = Path(tmp)
        if sizes:
            print(
                "\n== the shipped guard (guard_table as `kintsugi run` calls it) of a clean batch vs the scan floor "
                "(target: <= 1.2x wall and CPU at 10M, peak < 1 GB at 50M)"
            )
        for rows in sorted(set(sizes) | ({spark_rows} if spark_rows else set())):
            folder = workdir / f"pipeline-{rows}"
            folder.mkdir()
            started = time.perf_counter()
            prepare_pipeline(folder, rows)
            setup_s = time.perf_counter() - started
            if rows > PANDERA_MAX_ROWS:
                (folder / "batch.parquet").unlink()
            if rows in sizes:
                section_size(rows, folder, setup_s, args.repeat)
            if rows == spark_rows:
                if not args.parity_only:
                    section_spark(rows, folder)
                section_parity(rows, folder)
            shutil.rmtree(folder)
        formats = [] if args.parity_only else [f for f in args.formats.split(",") if f]
        if formats:
            print("\n== detect of a clean batch landed as one commit of a table format, vs the floor of its files")
        for table_format in formats:
            folder = workdir / f"pipeline-{table_format}"
            folder.mkdir()
            started = time.perf_counter()
            prepare_pipeline(folder, args.format_rows, table_format)
            section_format(args.format_rows, folder, table_format, time.perf_counter() - started, args.repeat)
            shutil.rmtree(folder)
        if history:
            section_history(history, workdir, args.history_repeat, args.history_rows)


if __name__ == "__main__":
    main()
