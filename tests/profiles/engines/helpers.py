"""The demo table, its contract and a reference, built without the control plane."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pandas as pd

from controlplane.documents.odcs import parse_odcs
from demo.generate import generate_eta_features
from guard.contract import Contract
from tests.conftest import DEMO_NOW

ROOT = Path(__file__).resolve().parents[3]
NOW_MS = int((DEMO_NOW + timedelta(minutes=10)).timestamp() * 1000)
KEYS = ("order_id",)


def demo_contract() -> Contract:
    text = (ROOT / "demo" / "contracts" / "eta_features.odcs.yaml").read_text()
    return parse_odcs(text, "demo contract eta_features.odcs.yaml")


def demo_frame(seed: int) -> pd.DataFrame:
    return generate_eta_features(days=40, seed=seed, anchor=DEMO_NOW)
