"""Chaos fixtures: the demo's clean table and contract, and a drill estate built once."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest


@pytest.fixture(scope="session")
def demo_clean(demo_run) -> pd.DataFrame:
    """The demo's table after its heal: clean, and exactly what its reference profile describes."""
    ws, _ = demo_run
    return pd.read_parquet(ws.data / "eta_features.parquet")


@pytest.fixture(scope="session")
def demo_contract(demo_run):
    from controlplane.datahub.connect import metadata_session
    from controlplane.documents.odcs import read_contract
    from demo.seed import FEATURE_TABLE

    ws, _ = demo_run
    with metadata_session(ws, read_only=True) as metadata:
        contract, _ = read_contract(metadata, FEATURE_TABLE)
    assert contract is not None
    return contract


@pytest.fixture(scope="session")
def drill_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One throwaway drill estate (seed 1) in the drill's own layout, shared by the drill tests."""
    from chaos.drill.demo import isolated
    from chaos.drill.estate import build_estate

    root = tmp_path_factory.mktemp("drill")
    with isolated():
        build_estate(root / "seed-1", 1)
    return root
