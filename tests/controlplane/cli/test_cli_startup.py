"""The CLI starts without the libraries behind its commands: `kintsugi --help` or a mistyped option does not pay
for importing MLflow, scikit-learn and DataHub's SDK (about three seconds)."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd

URN = "urn:li:dataset:(urn:li:dataPlatform:file,shop.orders,PROD)"
HEAVY = ("mlflow", "sklearn", "datahub", "pyspark", "controlplane.frontdoor.services")


def test_building_the_app_and_its_help_imports_none_of_the_libraries_behind_the_commands() -> None:
    probe = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from controlplane.cli.main import app\n"
        "result = CliRunner().invoke(app, ['--help'])\n"
        "assert result.exit_code == 0, result.output\n"
        "assert 'init' in result.output and 'chaos' in result.output, result.output\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_command_reaches_the_module_behind_it_when_it_runs(tmp_path) -> None:
    """`contract infer` reads from the lazily imported `controlplane.onboard.contracts`: it proposes a contract."""
    data = tmp_path / "orders.parquet"
    pd.DataFrame({"order_id": [1, 2, 3], "distance_km": [1.5, 2.0, 7.25]}).to_parquet(data)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "controlplane",
            "contract",
            "infer",
            str(data),
            "--dataset",
            URN,
            "--unit",
            "distance_km=km",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "distance_km" in done.stdout and URN in done.stdout
