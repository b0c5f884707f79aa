"""The `kintsugi` command as a scheduler runs it, for the smoke tests."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

PIPELINE = "delivery-eta"
SERVED = re.compile(r"^  (without the gate|with Kintsugi|clean baseline): .*?(\d+\.\d+) min$", re.M)


def kintsugi(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """The `kintsugi` command of this interpreter's environment, as a scheduler would run it."""
    command = shutil.which("kintsugi", path=str(Path(sys.executable).parent)) or "kintsugi"
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=timeout, check=False)


def the_demo_shows_the_served_harm_once_and_quietly(out: str, err: str) -> None:
    """The closing table: each model's error on the next day's batch, measured; the timeline once; no warning."""
    assert "=== served the next day: 400 deliveries, ETA error (MAE, minutes) ===" in out, out[-1500:]
    served = {row: float(score) for row, score in SERVED.findall(out)}
    assert set(served) == {"without the gate", "with Kintsugi", "clean baseline"}, out[-1500:]
    assert served["with Kintsugi"] == served["clean baseline"]  # the loop healed the served batch exactly
    assert served["without the gate"] >= 1.5 * served["with Kintsugi"]  # a retrain that never saw metres, served them
    assert all(0 < score < 60 for score in served.values())
    # the champion named is the one that serves after the day's run: the version that run promoted, if it did
    named = re.search(r"with Kintsugi: the champion v(\d+) after the day's run", out)
    promoted = re.findall(r"^  outcome: APPROVED v(\d+)", out, re.M)
    assert named is not None and (not promoted or named.group(1) == promoted[-1]), out[-1500:]
    assert out.count("  detect   ") == 4  # four runs, each told once (the clean two, the poisoned, the next day)
    assert "Warning" not in err and "Warning" not in out, err[-1500:]
