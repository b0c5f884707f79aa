"""The development corpus through the real CLI: clean batches in time order, then the drill's failures.

    python benchmarks/corpus_bench.py [--tables a,b] [--jobs 1] [--drill-jobs 1] [--no-drill] [--no-peers]
                                      [--json PATH] [--keep DIR]

For each table of `chaos.corpus.tables` (real public tables from many domains, shipped in pip packages, loaded offline),
in a scratch folder, as a new user would with no code:

1. `kintsugi init NAME --data FIRST.parquet --target T --time-column C [--key K] [--unit C=U] --yes` on the table's
   first `init_batches` batches, `--now` an hour after they end; then `kintsugi run` (a first champion). init takes
   no timestamp in a key: where the table's key holds its time column and init refuses it, init is run again with
   the key without it (what a user does next), and the refusal is kept in the row (`init_refused`);
2. for every following clean batch in time order: `kintsugi land NAME BATCH.parquet` an hour after the batch ends,
   then `kintsugi run NAME --json` an hour later. A clean batch the guard blocks at detect is a false block,
   whatever the heal then made of it (`ended_blocked` counts the runs that end BLOCKED); one that exits 2 (or
   crashes) is a run in error; `promoted` is a run promoted without a person; `kept` one whose candidate lost to
   the champion (a decision); `unchanged` one whose candidate would be fit on exactly the champion's rows and spec
   (the champion stands, no person asked); `decided` counts those three; a run that exits 3 waits for a person;
3. `kintsugi drill --pipeline NAME --json --scope both --controls 0`: every failure kind that applies to the
   contract, in the newest batch only and in all rows, through the real loop on scratch copies: blocked (a
   blocking finding), named right (kind, column, unit), healed (and verified) or quarantined, invented cells;
   then `--family badgers --scope batch`: the failures of a library nobody here wrote (`chaos.failures.thirdparty`: each
   generator on the columns it fits, at its defaults and at half of them), scored apart (`badgers*` columns, and
   per generator after the totals);
4. the peers on the same clean batches: pandera's inferred schema (`pandera.infer_schema` on the init data, its
   checks on the event time dropped, then `validate(lazy=True)`: blocked when it raises) and evidently's drift
   preset (`Report([DataDriftPreset()])`, reference the init data, every column but the event time: blocked when
   at least half of the columns drifted, its default).

init, land and run go through the real composition root in the worker's process (`controlplane.cli.main`, as
`tests/support.py` `whole_cli` does); the drill is the installed `kintsugi` in a subprocess. Tables run in
`--jobs` spawned processes. The bench never crashes as a whole: a table that errors is a row with its error.
Progress goes to stderr, one line per run; the per-table table and the totals to stdout; everything to --json.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from datetime import datetime, timezone
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from realdata_bench import drift_share  # noqa: E402

from chaos.corpus.tables import TABLES, CorpusBatch, CorpusTable  # noqa: E402

KINTSUGI = str(Path(sys.executable).with_name("kintsugi"))
HOUR = pd.Timedelta(hours=1)
COUNTS = (
    "clean_runs",
    "false_blocks",
    "ended_blocked",
    "guard_blocks",
    "errors",
    "decided",
    "promoted",
    "kept",
    "unchanged",
    "needs_review",
    "failures",
    "blocked",
    "named",
    "handled",
    "invented_cells",
    "pandera_blocks",
    "evidently_blocks",
    "badgers",
    "badgers_blocked",
    "badgers_named",
    "badgers_named_whole",
)


# --- the CLI ----------------------------------------------------------------------------------------------------


def cli(*args: str) -> tuple[int, str, str]:
    """`kintsugi ARGS` in this process; a crash is exit -1 with its traceback as stderr."""
    from controlplane.cli import main

    out, err, saved = io.StringIO(), io.StringIO(), sys.argv
    sys.argv = ["kintsugi", *args]
    code = 0
    try:
        with redirect_stdout(out), redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                main.main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except Exception:  # noqa: BLE001 - a crash of the CLI is a figure of the bench, not its end
        return -1, out.getvalue(), err.getvalue() + traceback.format_exc()
    finally:
        sys.argv = saved
    return code, out.getvalue(), err.getvalue()


def _iso(moment: pd.Timestamp) -> str:
    return pd.Timestamp(moment).tz_convert("UTC").isoformat()


def _say(table: str, line: str) -> None:
    print(f"[{datetime.now(timezone.utc):%H:%M:%S}] {table:<20} {line}", file=sys.stderr, flush=True)


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


# --- onboarding and the clean walk ------------------------------------------------------------------------------


def init_args(
    table: CorpusTable, key: tuple[str, ...], pipeline: str, data: Path, ws: Path, now: pd.Timestamp
) -> list[str]:
    keys = [a for k in key for a in ("--key", k)]
    units = [a for column, unit in table.units for a in ("--unit", f"{column}={unit}")]
    return [
        "init",
        pipeline,
        "--data",
        str(data),
        "--target",
        table.target,
        "--time-column",
        table.time_column,
        *keys,
        *units,
        "--now",
        _iso(now),
        "--yes",
        "--workspace",
        str(ws),
    ]


def run_once(table: str, pipeline: str, ws: Path, now: pd.Timestamp, label: str) -> dict[str, Any]:
    code, out, err = cli("run", pipeline, "--now", _iso(now), "--json", "--workspace", str(ws))
    status, findings, stage, record = "error", [], "", {}
    detect: dict[str, Any] = {}
    try:
        record = json.loads(out)
        status = str(record.get("status", "error"))
        findings = sorted(set(_blocking(record)))
        stage = str((record.get("events") or [{}])[-1].get("stage", ""))
        detect = next((e.get("evidence") or {} for e in record.get("events") or [] if e.get("stage") == "detect"), {})
    except (json.JSONDecodeError, AttributeError):
        pass
    error = code not in (0, 1, 3) or status in ("error", "failed")  # 3: paused for a person, a decision to make
    result = {
        "batch": label,
        "exit": code,
        "status": "error" if error and status not in ("failed",) else status,
        "findings": findings,
        "stage": stage,  # where it ended: a block at `promote` is the model gate (a regression), not the guard
        "outcome": _last_line(str(record.get("outcome", ""))),
        # at detect (`make bench-policy-lodo`): the blocking findings by check (a clean run may still promote, its
        # block healed), and the guard's statistics against its thresholds
        "detect_blocked_by": [
            {"check": f.get("check"), "kind": f.get("kind"), "column": f.get("column")}
            for f in detect.get("findings") or []
            if f.get("severity") == "block"
        ],
        "closest_calls": list(detect.get("closest_calls") or []),
    }
    if error:
        result["error"] = _last_line(err) or _last_line(out)
    _say(table, f"run {label}: exit {code} {result['status']} at {stage} {', '.join(findings)}" + _err(result))
    return result


def _err(result: dict[str, Any]) -> str:
    return f" ({result['error']})" if result.get("error") else ""


def _blocking(node: Any) -> Iterator[str]:
    """KIND:COLUMN of every blocking finding anywhere in a run's JSON."""
    if isinstance(node, dict):
        kind, severity = node.get("kind"), str(node.get("severity", "")).lower()
        if isinstance(kind, str) and severity in ("block", "blocking", "error", "critical"):
            yield f"{kind}:{node.get('column') or '-'}"
        for value in node.values():
            yield from _blocking(value)
    elif isinstance(node, list):
        for value in node:
            yield from _blocking(value)


def walk(table: CorpusTable, pipeline: str, folder: Path, ws: Path, batches: list[CorpusBatch]) -> dict[str, Any]:
    """init on the first batches, a first run, then land + run every later batch; the clean runs."""
    first = batches[: table.init_batches]
    data = folder / f"{table.name}.parquet"
    pd.concat([b.rows for b in first], ignore_index=True).to_parquet(data, index=False)
    found: dict[str, Any] = {}
    key = table.key
    code, out, err = cli(*init_args(table, key, pipeline, data, ws, first[-1].end + HOUR))
    if code != 0 and table.time_column in key and "is timestamp" in err + out:  # what a user does next
        found["init_refused"] = _last_line(err) or _last_line(out)
        key = tuple(k for k in key if k != table.time_column)
        code, out, err = cli(*init_args(table, key, pipeline, data, ws, first[-1].end + HOUR))
    found["key"] = list(key)
    _say(table.name, f"init on {len(first)} batches, key {', '.join(key) or 'none'}: exit {code}")
    if code != 0:
        found.update(error=f"init exited {code}: {_last_line(err) or _last_line(out)}", init_output=out[-2000:])
        return found
    first_run = run_once(table.name, pipeline, ws, first[-1].end + 2 * HOUR, f"{first[-1].batch_id} (init)")
    runs = []
    for i, batch in enumerate(batches[table.init_batches :]):
        path = folder / f"batch-{i:03d}.parquet"
        batch.rows.to_parquet(path, index=False)
        code, out, err = cli("land", pipeline, str(path), "--now", _iso(batch.end + HOUR), "--workspace", str(ws))
        if code != 0:
            runs.append({"batch": batch.batch_id, "exit": code, "status": "error", "error": f"land: {_last_line(err)}"})
            _say(table.name, f"land {batch.batch_id}: exit {code} {_last_line(err)}")
            continue
        runs.append(run_once(table.name, pipeline, ws, batch.end + 2 * HOUR, batch.batch_id))
    return {**found, "first_run": first_run, "runs": runs}


# --- the drill --------------------------------------------------------------------------------------------------


def drill(table: str, pipeline: str, ws: Path, jobs: int, out: Path, family: str = "ours") -> dict[str, Any]:
    """The drill of one family of failures: ours in the newest batch and in every row; badgers' in the newest
    batch (its generators corrupt a batch as it arrives)."""
    scope = "both" if family == "ours" else "batch"
    command = [KINTSUGI, "drill", "--pipeline", pipeline, "--workspace", str(ws), "--json", "--scope", scope]
    command += ["--controls", "0", "--jobs", str(jobs), "--out", str(out), "--family", family]
    log = out.with_suffix(".log")
    out.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as stderr:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    if done.returncode not in (0, 1):
        return {"error": f"drill exited {done.returncode}: {_last_line(log.read_text())}"}
    board = json.loads(done.stdout)
    cases = [_case(row) for row in board["scenarios"]]
    for case in cases:
        _say(
            table, f"drill {case['scenario']:<32} {case['status']:<12} blocked {case['blocked']} named {case['named']}"
        )
    return {
        "cases": cases,
        "invented_cells": board.get("invented_cells", 0),
        "skipped": [s["name"] for s in board.get("skipped", [])],
    }


def _case(row: dict[str, Any]) -> dict[str, Any]:
    run = row["runs"][0]
    return {
        "scenario": row["name"],
        "status": run["status"],
        "blocked": bool(run["detected"]),
        "named": bool(run["localized"]),
        "named_every_column": bool(run["localized"]) and _every_column_named(row["expected"], run["findings"]),
        "handled": bool((run["healed"] and run["verified"]) or run["quarantined"]),
        "passed": bool(run["passed"]),
        "error": run["status"] in ("error", "failed"),
        "inapplicable": run["status"] == "inapplicable",  # the injector refused the batch: not a failure scored
    }


def _every_column_named(expected: dict[str, Any], findings: list[str]) -> bool:
    """Each column a failure corrupted is named by a blocking finding of a kind that names it right (a failure of
    several columns, such as nulls in five of them, is named whole only when every one of them is); a finding of
    the whole batch, or of a key named whole, names them all."""
    kinds = expected.get("kinds") or [expected.get("kind")]
    blocking = {tuple(f.rsplit(":", 2)[:2]) for f in findings if f.endswith(":block")}
    whole = any((kind, "-") in blocking for kind in kinds)  # a finding of the batch, or of a key named whole
    return whole or all(any((kind, column) in blocking for kind in kinds) for column in expected.get("columns") or [])


# --- the peers --------------------------------------------------------------------------------------------------


def pandera_verdicts(init: pd.DataFrame, clean: list[pd.DataFrame], time_column: str) -> list[bool | None]:
    import pandera.pandas as pa

    try:
        inferred = pa.infer_schema(init)
        assert isinstance(inferred, pa.DataFrameSchema)
        schema = inferred.update_column(time_column, checks=[])
    except Exception:  # noqa: BLE001 - a peer that breaks gives no verdict
        return [None] * len(clean)
    verdicts: list[bool | None] = []
    for frame in clean:
        try:
            schema.validate(frame, lazy=True)
            verdicts.append(False)
        except pa.errors.SchemaErrors:
            verdicts.append(True)
        except Exception:  # noqa: BLE001
            verdicts.append(None)
    return verdicts


def evidently_verdicts(init: pd.DataFrame, clean: list[pd.DataFrame], time_column: str) -> list[bool | None]:
    import pandas.core.dtypes.common as common

    if not hasattr(common, "infer_dtype_from_object"):  # removed in pandas 3; evidently 0.7 imports it
        common.infer_dtype_from_object = lambda dtype: pd.api.types.pandas_dtype(dtype).type  # type: ignore
    try:
        from evidently import Report
        from evidently.presets import DataDriftPreset
    except Exception:  # noqa: BLE001 - the bench extra is not installed
        return [None] * len(clean)
    reference = init.drop(columns=[time_column])
    verdicts: list[bool | None] = []
    for frame in clean:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = Report([DataDriftPreset()]).run(
                    current_data=frame.drop(columns=[time_column]), reference_data=reference
                )
            share = drift_share(result.dict())
            verdicts.append(None if share is None else share >= 0.5)
        except Exception:  # noqa: BLE001
            verdicts.append(None)
    return verdicts


def peers(table: CorpusTable, batches: list[CorpusBatch]) -> dict[str, Any]:
    init = pd.concat([b.rows for b in batches[: table.init_batches]], ignore_index=True)
    clean = [b.rows for b in batches[table.init_batches :]]
    found: dict[str, Any] = {}
    for name, judge in (("pandera", pandera_verdicts), ("evidently", evidently_verdicts)):
        verdicts = judge(init, clean, table.time_column)
        found[name] = {"blocked": sum(v is True for v in verdicts), "errors": sum(v is None for v in verdicts)}
    return found


# --- one table, the totals --------------------------------------------------------------------------------------


def bench_table(
    name: str, drill_jobs: int, with_drill: bool, with_peers: bool, out: str, keep: str | None = None
) -> dict[str, Any]:
    """One table's row; never raises. `keep`: a folder where the table's scratch folder (its workspace after the
    clean walk, `KEEP/NAME/ws`) is kept, to drill or inspect it again; otherwise it is deleted."""
    started = time.monotonic()
    table = TABLES[name]
    row: dict[str, Any] = {"table": name, "domain": table.domain, "shape": table.shape, "cadence": table.cadence}
    try:
        batches = table.batches()
        row["batches"] = len(batches)
        if with_peers:
            row["peers"] = peers(table, batches)
        with _scratch(name, keep) as scratch:
            folder, pipeline = Path(scratch), name.replace("_", "-")
            ws = folder / "ws"
            row.update(walk(table, pipeline, folder, ws, batches))
            if with_drill and "error" not in row:
                row["drill"] = drill(name, pipeline, ws, drill_jobs, Path(out) / name / "board")
                row["badgers"] = drill(name, pipeline, ws, drill_jobs, Path(out) / name / "badgers", "badgers")
    except Exception as exc:  # noqa: BLE001 - a table that errors is a row with its error
        row["error"] = f"{type(exc).__name__}: {exc}"
        row["traceback"] = traceback.format_exc()[-3000:]
    row["seconds"] = round(time.monotonic() - started, 1)
    row["counts"] = counts(row)
    _say(name, f"done in {row['seconds']:.0f} s" + (f": {row['error']}" if row.get("error") else ""))
    return row


@contextmanager
def _scratch(name: str, keep: str | None) -> Iterator[str]:
    if keep is None:
        with tempfile.TemporaryDirectory(prefix=f"corpus-{name}-") as scratch:
            yield scratch
        return
    folder = Path(keep) / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    yield str(folder)


def _erred(run: dict[str, Any]) -> bool:
    """A run that ended in an error, or whose guard could not evaluate a check (a `check_error` finding fails closed,
    but it is the guard's error, not the data's)."""
    return run["status"] in ("error", "failed") or any(
        f.get("kind") == "check_error" for f in run.get("detect_blocked_by") or []
    )


def counts(row: dict[str, Any]) -> dict[str, int]:
    runs = row.get("runs", [])
    cases = [c for c in row.get("drill", {}).get("cases", []) if not c.get("inapplicable")]
    theirs = [c for c in row.get("badgers", {}).get("cases", []) if not c.get("inapplicable")]
    peer = row.get("peers", {})
    return {
        "clean_runs": len(runs),
        "false_blocks": sum(bool(r.get("detect_blocked_by")) for r in runs),  # the guard blocked a clean batch
        "ended_blocked": sum(r["status"] == "blocked" for r in runs),
        "guard_blocks": sum(r["status"] == "blocked" and r.get("stage") != "promote" for r in runs),
        "errors": sum(_erred(r) for r in runs) + sum(c["error"] for c in cases + theirs),
        "decided": sum(r["status"] in ("promoted", "kept", "unchanged") for r in runs),  # without a person
        "promoted": sum(r["status"] == "promoted" for r in runs),
        "kept": sum(r["status"] == "kept" for r in runs),  # the candidate lost: the champion stands
        "unchanged": sum(r["status"] == "unchanged" for r in runs),
        "needs_review": sum(r["status"] in ("needs-review", "paused") for r in runs),
        "failures": len(cases),
        "blocked": sum(c["blocked"] for c in cases),
        "named": sum(c["named"] for c in cases),
        "handled": sum(c["handled"] for c in cases),
        "invented_cells": int(row.get("drill", {}).get("invented_cells", 0)),
        "pandera_blocks": int(peer.get("pandera", {}).get("blocked", 0)),
        "evidently_blocks": int(peer.get("evidently", {}).get("blocked", 0)),
        "badgers": len(theirs),  # failures a library nobody here wrote made (chaos.failures.thirdparty), scored apart
        "badgers_blocked": sum(c["blocked"] for c in theirs),
        "badgers_named": sum(c["named"] for c in theirs),
        "badgers_named_whole": sum(c.get("named_every_column", False) for c in theirs),
    }


def report(rows: list[dict[str, Any]]) -> list[str]:
    head = f"{'table':<20} {'domain':<12} {'shape':<14} {'cadence':<8} " + " ".join(f"{c[:9]:>9}" for c in COUNTS)
    lines = [head]
    for row in rows:
        c = row["counts"]
        line = f"{row['table']:<20} {row['domain']:<12} {row['shape']:<14} {row['cadence']:<8} "
        lines.append(
            line + " ".join(f"{c[k]:>9}" for k in COUNTS) + (f"  ERROR {row['error']}" if "error" in row else "")
        )
    total = {k: sum(r["counts"][k] for r in rows) for k in COUNTS}
    lines.append(f"{'total':<57}" + " ".join(f"{total[k]:>9}" for k in COUNTS))
    return lines + [""] + by_generator(rows)


def by_generator(rows: list[dict[str, Any]]) -> list[str]:
    """badgers' failures per generator and severity, over the tables: cases, blocked, named right, and the cases
    the generator refused (too few rows or values of the kind it draws: not scored)."""
    tally: dict[str, list[int]] = {}
    for row in rows:
        for case in row.get("badgers", {}).get("cases", []):
            counted = tally.setdefault(case["scenario"].split("@")[0], [0, 0, 0, 0])
            if case.get("inapplicable"):
                counted[3] += 1
                continue
            counted[0] += 1
            counted[1] += case["blocked"]
            counted[2] += case["named"]
    lines = [f"{'badgers scenario':<32} {'cases':>6} {'blocked':>8} {'named':>6} {'refused':>8}"]
    lines += [f"{name:<32} {c[0]:>6} {c[1]:>8} {c[2]:>6} {c[3]:>8}" for name, c in sorted(tally.items())]
    return lines if tally else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", default=",".join(TABLES), help="comma-separated corpus tables (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="tables benched at once, each in its own process")
    parser.add_argument("--drill-jobs", type=int, default=1, help="worker processes of each table's drill")
    parser.add_argument("--no-drill", action="store_true", help="clean batches only")
    parser.add_argument("--no-peers", action="store_true", help="without pandera and evidently")
    parser.add_argument("--json", type=Path, default=None, help="write every row here (default: in --out)")
    parser.add_argument("--out", type=Path, default=None, help="drill scoreboards and logs (default: a temp folder)")
    parser.add_argument("--keep", type=Path, default=None, help="keep each table's workspace here (KEEP/NAME/ws)")
    args = parser.parse_args()
    names = [n.strip() for n in args.tables.split(",") if n.strip()]
    unknown = [n for n in names if n not in TABLES]
    if unknown:
        raise SystemExit(f"no corpus table(s) {', '.join(unknown)}: choose among {', '.join(TABLES)}")
    out = args.out or Path(tempfile.mkdtemp(prefix="corpus-bench-"))
    out.mkdir(parents=True, exist_ok=True)  # the totals are written there at the end, with or without boards
    path = args.json or out / "corpus_bench.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    print(f"corpus bench: {len(names)} tables; {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; out {out}", flush=True)
    rows = bench_all(names, args, str(out))
    seconds = time.monotonic() - started
    print("\n".join(report(rows)) + f"\n\nwall time {seconds / 60:.1f} min", flush=True)
    path.write_text(json.dumps({"seconds": round(seconds, 1), "out": str(out), "tables": rows}, indent=2, default=str))
    print(f"wrote {path}")


def bench_all(names: list[str], args: argparse.Namespace, out: str) -> list[dict[str, Any]]:
    keep = str(args.keep.resolve()) if args.keep else None
    jobs = (args.drill_jobs, not args.no_drill, not args.no_peers, out, keep)
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=get_context("spawn")) as pool:
        futures = {name: pool.submit(bench_table, name, *jobs) for name in names}
        rows = []
        for name, future in futures.items():
            try:
                rows.append(future.result())
            except Exception as exc:  # noqa: BLE001 - a worker that died is that table's row
                table = TABLES[name]
                row = {"table": name, "domain": table.domain, "shape": table.shape, "cadence": table.cadence}
                row["error"] = f"worker died: {type(exc).__name__}: {exc}"
                rows.append({**row, "counts": counts(row)})
    return rows


if __name__ == "__main__":
    main()
