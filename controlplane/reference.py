"""The reference a pipeline's data is compared with, established from the data as it is now.

One function, so the way a reference is kept can change in one place: today the profile of the pinned table is
written as DataHub's `datasetProfile` (as `kintsugi contract apply --reference` does), and every promoted run
replaces it with the profile of the data it passed (`stages.publish.remember_reference`).
"""
from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass

from controlplane.datahub.datasets import profile_mcps
from controlplane.datahub.port import MetadataPort
from controlplane.snapshot import pin_table
from controlplane.spec import PipelineSpec
from controlplane.stages.detect import read_pinned
from controlplane.workspace import Workspace

__all__ = ["Established", "establish_reference"]


@dataclass(frozen=True)
class Established:
    rows: int
    content_hash: str  # the table's content hash when its profile was taken


def establish_reference(ws: Workspace, spec: PipelineSpec, metadata: MetadataPort, now_ms: int) -> Established:
    """Pin the pipeline's table, profile it, and record the profile as the dataset's reference in DataHub."""
    ws.runs.mkdir(parents=True, exist_ok=True)
    folder = tempfile.mkdtemp(prefix=".reference-", dir=ws.runs)
    try:
        pinned = pin_table(ws, spec, ws.runs / folder / "pin")
        profile = read_pinned(ws, pinned).profile
        metadata.emit(profile_mcps(spec.feature_table, profile, now_ms), now_ms)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return Established(profile.row_count, pinned.content_hash)
