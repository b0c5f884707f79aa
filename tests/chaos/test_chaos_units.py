"""The unit injector on real conversions the demo table has no column for: C->F, usd->usd_cents,
fraction->percent, s->ms; the guard names the unit the data is really in."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from chaos.failures.injectors import unit_change
from chaos.failures.registry import Scenario
from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import ColumnContract, Contract
from guard.kinds import FindingKind, Severity
from guard.runner import run_guard
from profiles.snapshot import read_snapshot

URN = "urn:li:dataset:(urn:li:dataPlatform:file,chaos.synthetic,PROD)"
RNG = np.random.default_rng(11)
CLEAN = pd.DataFrame(
    {
        "temperature": RNG.normal(18.0, 6.0, 5000).round(2),
        "price": RNG.lognormal(2.5, 0.6, 5000).round(2),
        "share": RNG.beta(2.0, 5.0, 5000).round(4),
        "latency": RNG.gamma(2.0, 1.5, 5000).round(3),
    }
)
UNITS = {"temperature": "C", "price": "usd", "share": "fraction", "latency": "s"}


@pytest.mark.parametrize(
    "column, to_unit",
    [("temperature", "F"), ("temperature", "K"), ("price", "usd_cents"), ("share", "percent"), ("latency", "ms")],
)
def test_unit_change_is_named_by_the_guard(column, to_unit, tmp_path):
    contract = Contract(URN, tuple(ColumnContract(c, "number", unit=u) for c, u in UNITS.items()))
    scenario = Scenario(
        f"{column}_to_{to_unit}",
        "",
        FindingKind.UNIT_MISMATCH,
        (column,),
        True,
        1.0,
        "share",
        table=unit_change(to_unit),
        magnitude_is_share=True,
    )
    injected = scenario.table(CLEAN, scenario.target(contract, 0))
    assert injected.cells[column].all()
    report = run_guard(_context(contract, CLEAN, injected.frame, tmp_path))
    blocking = [f for f in report.findings if f.severity is Severity.BLOCK]
    assert [(f.kind, f.column, f.params.get("actual_unit")) for f in blocking] == [
        (FindingKind.UNIT_MISMATCH, column, to_unit)
    ]
    others = [f for f in report.findings if f not in blocking]
    assert {f.params.get("explained_by") for f in others} <= {f"unit_mismatch:{column}"}


def _context(contract: Contract, reference: pd.DataFrame, observed: pd.DataFrame, tmp_path) -> GuardContext:
    reference.to_parquet(tmp_path / "reference.parquet", index=False)
    observed.to_parquet(tmp_path / "observed.parquet", index=False)
    return with_repeats_counted(
        GuardContext(
            dataset_urn=URN,
            contract=contract,
            snapshot=read_snapshot(tmp_path / "observed.parquet"),
            reference=read_snapshot(tmp_path / "reference.parquet").profile,
            lineage=(),
            now_ms=0,
        )
    )
