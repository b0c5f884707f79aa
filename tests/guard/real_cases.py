"""Real batches to inject failures into, each with a reference of the batches before it: a late-May week of
Greensboro's hourly TMY against the 12 weeks before (one season), and Seattle's December 2015 against the 13
months before (every season). `blocking_on` guards a frame as that batch and says what blocks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from chaos.corpus.falsealarms import load_batches
from chaos.corpus.realdata import DATASETS, RealDataset
from controlplane.stages.guarding import with_repeats_counted
from guard.context import GuardContext
from guard.contract import Contract
from guard.findings import GuardReport
from guard.kinds import FindingKind
from guard.runner import run_guard
from profiles.reference import Reference, build_reference
from profiles.snapshot import read_snapshot

__all__ = ["RealCase", "real_case", "whole_table_case", "guarded_on", "blocking_on"]


@dataclass(frozen=True)
class RealCase:
    dataset: RealDataset
    reference: Reference
    frame: pd.DataFrame  # the batch's rows, clean


def real_case(name: str, workdir: Path, reference: slice, batch: int, reference_cadence: str | None = None) -> RealCase:
    """The dataset's batch number `batch` (at its own cadence) against its batches `reference` (at
    `reference_cadence`, as `kintsugi init` keeps months where weeks are landed; default: the same)."""
    dataset = DATASETS[name]
    batches = load_batches(dataset, workdir)
    if reference_cadence is not None:
        (workdir / "reference").mkdir(exist_ok=True)
    kept_from = (
        batches if reference_cadence is None else load_batches(dataset, workdir / "reference", reference_cadence)
    )
    kept = [b.snapshot.batch for b in kept_from[reference] if b.snapshot.batch is not None]
    return RealCase(dataset, build_reference(kept), batches[batch].frame)


def whole_table_case(name: str, workdir: Path, reference: slice) -> RealCase:
    """The dataset's whole table as one batch, against its batches `reference` (a table rewritten at once)."""
    dataset = DATASETS[name]
    batches = load_batches(dataset, workdir)
    kept = [b.snapshot.batch for b in batches[reference] if b.snapshot.batch is not None]
    return RealCase(dataset, build_reference(kept), pd.concat([b.frame for b in batches], ignore_index=True))


def guarded_on(tmp_path: Path, case: RealCase, frame: pd.DataFrame, contract: Contract | None = None) -> GuardReport:
    """The guard's report when `frame` arrives as the case's batch (under the dataset's contract unless another is
    given)."""
    path = tmp_path / "batch.parquet"
    frame.to_parquet(path, index=False)
    snapshot = read_snapshot(path, time_column=case.dataset.time_column, batch_id="batch")
    contract = contract or case.dataset.contract()
    return run_guard(
        with_repeats_counted(GuardContext(contract.dataset_urn, contract, snapshot, case.reference, (), now_ms=0))
    )


def blocking_on(
    tmp_path: Path, case: RealCase, frame: pd.DataFrame, contract: Contract | None = None
) -> set[tuple[FindingKind, str | None]]:
    """(kind, column) of every blocking finding when `frame` arrives as the case's batch (`guarded_on`)."""
    return {(f.kind, f.column) for f in guarded_on(tmp_path, case, frame, contract).blocking}
