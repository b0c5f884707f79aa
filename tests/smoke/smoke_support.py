"""The `kintsugi` command as a scheduler runs it, for the smoke tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def kintsugi(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """The `kintsugi` command of this interpreter's environment, as a scheduler would run it."""
    command = shutil.which("kintsugi", path=str(Path(sys.executable).parent)) or "kintsugi"
    return subprocess.run([command, *args], capture_output=True, text=True, timeout=timeout, check=False)
