"""The pipeline drill's units of work, each on its own fork of the base copy (`chaos.drill.copies`): one scenario in
one scope through the real loop, or one clean control. Each returns plain JSON-able facts, so the drill can
run them in worker processes; `judge_case` (pure) decides afterwards, against the clean control.

Scopes: `batch` corrupts only the newest batch (the rows after the reference's watermark), `all-rows` every
row of the table, history included. What the loop published is compared cell by cell with the clean table
and with the corrupted one (`invented_cells`): a heal may correct a value back or leave it as it came
(quarantined rows stay as they arrived), never put a third value in its place.
"""

from __future__ import annotations

import shutil
import time
from typing import Any

import numpy as np
import pandas as pd

from chaos.drill.copies import PipelineCopy, contract_of, fork, take_back, write_table
from chaos.drill.observe import Observed, errored, finding_label, observe
from chaos.errors import InjectionError
from chaos.failures.families import scenario_named
from chaos.failures.registry import Scenario
from controlplane.pipeline import run_pipeline
from controlplane.runs.journal import RunRecord
from controlplane.spec import load_spec
from controlplane.workspace import Workspace
from guard.contract import Contract
from guard.kinds import Severity
from profiles.relations import epoch_ms_of
from profiles.snapshot import read_frame

__all__ = [
    "SCOPES",
    "BATCH",
    "ALL_ROWS",
    "HEALED",
    "QUARANTINED",
    "BLOCKED",
    "INAPPLICABLE",
    "run_case",
    "run_control",
    "corrupt",
    "invented_cells",
    "expected_of",
    "judge_case",
    "held_right",
]

BATCH, ALL_ROWS = "batch", "all-rows"
SCOPES = (BATCH, ALL_ROWS)
HEALED, QUARANTINED, BLOCKED = "healed", "quarantined", "blocked"
INAPPLICABLE = "inapplicable"  # the scenario's injector refused the batch (a third-party generator's own limits)
_STOPPED = ("blocked", "failed", "error")


def expected_of(scenario: Scenario) -> str:
    """What the loop should do with the scenario's rows: correct them, set them aside, or stop."""
    if scenario.healable:
        return HEALED
    return QUARANTINED if scenario.quarantines else BLOCKED


def run_case(copy: PipelineCopy, name: str, scope: str, seed: int, keep: bool = False) -> dict[str, Any]:
    """Fork the base, make its newest batch new again, corrupt it (or every row), run the loop, gather the facts."""
    ws = fork(copy, f"{name}@{scope}-{seed}")
    facts: dict[str, Any] = {"scenario": f"{name}@{scope}", "name": name, "scope": scope, "seed": seed}
    started = time.monotonic()
    try:
        clean = take_back(ws, copy, copy.newest)
        spec = load_spec(ws, copy.pipeline)
        contract = contract_of(ws, spec)
        scenario = scenario_named(contract, spec, name)
        try:
            corrupted = corrupt(
                clean, scenario, contract, seed, scope, copy.batches[copy.newest].after_ms, copy.time_column
            )
        except InjectionError as exc:  # the scenario does not fit this batch: nothing was run
            _discard(ws, keep)
            return {**facts, **_errored(exc, ws), "status": INAPPLICABLE, "outcome": f"does not fit: {exc}"}
        write_table(spec.data, corrupted)
        record = run_pipeline(ws, spec, now_ms=copy.now_ms)
        seen = observe(ws, record, scenario, spec.feature_table)
        published = read_frame(spec.data)
    except Exception as exc:  # the loop breaking on a scenario is a result to record, not a reason to stop
        _discard(ws, keep)
        return {**facts, **_errored(exc, ws)}
    _discard(ws, keep)
    return {
        **facts,
        **_facts(scenario, seen, record),
        "invented_cells": invented_cells(published, clean, corrupted),
        "rows": {"table": len(clean), "corrupted": _corrupted_rows(clean, copy, scope)},
        "seconds": round(time.monotonic() - started, 3),
    }


def corrupt(
    clean: pd.DataFrame,
    scenario: Scenario,
    contract: Contract,
    seed: int,
    scope: str,
    after_ms: int | None,
    time_column: str,
) -> pd.DataFrame:
    """The table with the scenario injected into its newest batch (rows after `after_ms`) or into every row."""
    assert scenario.table is not None
    target = scenario.target(contract, seed)
    if scope == ALL_ROWS:
        return scenario.table(clean, target).frame.reset_index(drop=True)
    new = _after(clean, time_column, after_ms)
    injected = scenario.table(clean.loc[new].reset_index(drop=True), target).frame
    return pd.concat([clean.loc[~new], injected], ignore_index=True)


def _after(frame: pd.DataFrame, time_column: str, after_ms: int | None) -> np.ndarray:
    stamps, present = epoch_ms_of(frame[time_column])
    return present & (stamps > after_ms) if after_ms is not None else np.ones(len(frame), dtype=bool)


def _corrupted_rows(clean: pd.DataFrame, copy: PipelineCopy, scope: str) -> int:
    if scope == ALL_ROWS:
        return len(clean)
    return int(_after(clean, copy.time_column, copy.batches[copy.newest].after_ms).sum())


def _facts(scenario: Scenario, seen: Observed, record: RunRecord) -> dict[str, Any]:
    blocking = [f for f in seen.findings if f.severity is Severity.BLOCK]
    detect = next((e for e in record.events if e.stage == "detect"), None)
    heal = next((e for e in record.events if e.stage == "heal"), None)
    quarantine = (heal.evidence.get("quarantine") or {}) if heal is not None and seen.healed else {}
    return {
        "status": seen.status,
        "outcome": seen.outcome,
        "findings": list(seen.labels),
        "detected": bool(blocking),
        "blocking": bool(blocking),
        "localized": any(scenario.localizes(f) for f in blocking),
        "blocked_by": [{"check": f.check, "kind": f.kind.value, "column": f.column} for f in blocking],
        "closest_calls": list(detect.evidence.get("closest_calls", [])) if detect is not None else [],
        "healed": seen.healed,
        "verified": seen.verified,
        "quarantined": int(quarantine.get("rows") or 0),
        "published": any(e.stage == "publish" for e in record.events),
        "promoted": seen.status == "promoted",
        "held": seen.status != "promoted",
        "incident_open": seen.incident_open,
        "heal_summary": seen.heal_summary,
    }


def _errored(exc: Exception, ws: Workspace) -> dict[str, Any]:
    return errored(exc, ws) | {
        "blocked_by": [],
        "closest_calls": [],
        "quarantined": 0,
        "published": False,
        "heal_summary": "",
        "invented_cells": 0,
        "rows": {},
    }


def run_control(copy: PipelineCopy, index: int, keep: bool = False) -> dict[str, Any]:
    """The clean batch `index` batches before the newest, as the new batch, through the loop. An alarm is the data
    side stopping it: a blocking finding, or a run that stopped before training. What the model gate then says
    is recorded, not counted: against a champion trained on later rows (an earlier batch), it means little."""
    batch = copy.newest - index
    ws = fork(copy, f"control-{index}")
    facts: dict[str, Any] = {"seed": 0, "batch_seed": index, "batch": copy.batches[batch].batch_id}
    started = time.monotonic()
    try:
        take_back(ws, copy, batch)
        spec = load_spec(ws, copy.pipeline)
        record = run_pipeline(ws, spec, now_ms=copy.now_at(batch))
        seen = observe(ws, record, None, spec.feature_table)
    except Exception as exc:  # recorded as an alarm: a clean batch must run through
        _discard(ws, keep)
        return {
            **facts,
            "status": "error",
            "outcome": _errored(exc, ws)["outcome"],
            "findings": [],
            "alarm": True,
            "blocking": True,
            "promoted": False,
            "warnings": [],
        }
    _discard(ws, keep)
    blocking = [finding_label(f) for f in seen.findings if f.severity is Severity.BLOCK]
    trained = any(e.stage == "train" for e in record.events)
    return {
        **facts,
        "status": seen.status,
        "outcome": seen.outcome,
        "findings": blocking,
        "warnings": [finding_label(f) for f in seen.findings if f.severity is not Severity.BLOCK],
        "alarm": bool(blocking) or (seen.status in _STOPPED and not trained),
        "blocking": bool(blocking),
        "trained": trained,
        "promoted": seen.status == "promoted",
        "seconds": round(time.monotonic() - started, 3),
    }


def invented_cells(published: pd.DataFrame, clean: pd.DataFrame, corrupted: pd.DataFrame) -> int:
    """Cells of the published table that hold neither the clean value nor the corrupted one at their row (by
    position and column name). A null never counts: a value withheld is not a value invented."""
    count = 0
    for column in published.columns:
        values = published[column].reset_index(drop=True)
        ok = values.isna().to_numpy().copy()
        for source in (clean, corrupted):
            if column in source.columns:
                ok |= _equal(values, source[column].reset_index(drop=True))
        count += int((~ok).sum())
    return count


def _equal(values: pd.Series, other: pd.Series) -> np.ndarray:
    """Row by row, whether `values` equals `other` (numbers to 1e-9 relative: a unit converted back is exact up
    to rounding); False past the end of `other`."""
    same = np.zeros(len(values), dtype=bool)
    n = min(len(values), len(other))
    a, b = values.iloc[:n], other.iloc[:n]
    try:
        if pd.api.types.is_numeric_dtype(a.dtype) and pd.api.types.is_numeric_dtype(b.dtype):
            same[:n] = np.isclose(
                a.to_numpy(dtype=float, na_value=np.nan),
                b.to_numpy(dtype=float, na_value=np.nan),
                rtol=1e-9,
                atol=1e-12,
            )
        else:
            same[:n] = (a == b).fillna(False).to_numpy(dtype=bool)
    except (TypeError, ValueError):  # incomparable types (text against times): not equal
        pass
    return same


def judge_case(run: dict[str, Any], scenario: Scenario, control_status: str | None) -> list[str]:
    """Why the loop fell short on this run; an empty list is a pass. A corrected batch should end as the clean
    one did (`control_status`: the clean newest batch's run, None when no control ran)."""
    where = f"{scenario.kind.value} on {'/'.join(scenario.columns) or 'the dataset'}"
    if run["status"] == "error":
        return [run["outcome"]]
    if not run["detected"]:
        return [f"missed: no blocking finding (expected {where}); the loop ended {run['status']}: {run['outcome']}"]
    reasons = []
    if not run["localized"]:
        reasons.append(f"misnamed: expected {where}, the guard said {', '.join(run['findings'])}")
    if run["invented_cells"]:
        reasons.append(f"{run['invented_cells']} published cell(s) hold a value neither clean nor as injected")
    expected = expected_of(scenario)
    if expected == HEALED:
        reasons += _heal_shortfalls(run, control_status)
    elif expected == QUARANTINED and not held_right(run, scenario):
        incident = "open" if run["incident_open"] else "not open"
        reasons.append(
            f"expected the rows quarantined with the incident left open; the loop ended {run['status']}"
            f" ({run['quarantined']} rows quarantined, incident {incident}): {run['outcome']}"
        )
    elif expected == BLOCKED and not held_right(run, scenario):
        reasons.append(
            f"expected BLOCKED with the incident left open; the loop ended {run['status']}: {run['outcome']}"
        )
    return reasons


def held_right(run: dict[str, Any], scenario: Scenario) -> bool:
    """Rows that cannot be corrected: quarantined with the incident left open; a failure no playbook may act on:
    BLOCKED with the incident left open."""
    if expected_of(scenario) == QUARANTINED:
        return bool(run["quarantined"]) and run["incident_open"]
    return run["status"] == "blocked" and run["incident_open"]


def _heal_shortfalls(run: dict[str, Any], control_status: str | None) -> list[str]:
    if not run["healed"]:
        return [f"not healed: {run['heal_summary'] or run['outcome']}"]
    if not run["verified"]:
        return [f"the heal did not verify: {run['outcome']}"]
    if control_status is not None and run["status"] != control_status:
        return [
            f"healed and verified, but the run ended {run['status']} where the clean batch's ended "
            f"{control_status}: {run['outcome']}"
        ]
    return []


def _discard(ws: Workspace, keep: bool) -> None:
    if not keep:
        shutil.rmtree(ws.root, ignore_errors=True)
