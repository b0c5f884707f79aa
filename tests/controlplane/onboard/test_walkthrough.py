"""The README's "Onboard your own pipeline" walkthrough, executed: its commands are parsed out of README.md (between
the walkthrough markers) and run in a fresh folder, so the README cannot drift from the CLI. The runs must say what
the README says: a first champion, a clean batch trained on, a renamed column found and healed."""

from __future__ import annotations

import shlex
from pathlib import Path

from controlplane.runs.journal import list_runs
from controlplane.workspace import Workspace

from onboard_support import cli

README = Path(__file__).resolve().parents[3] / "README.md"
START, END = "<!-- walkthrough:start -->", "<!-- walkthrough:end -->"


def walkthrough_commands(text: str) -> list[tuple[str, str]]:
    """("python", code) and ("kintsugi", command line) steps, in order, from the marked block of the README."""
    block = text.split(START, 1)[1].split(END, 1)[0]
    lines = block.split("```sh", 1)[1].split("```", 1)[0].splitlines()
    steps, index = [], 0
    while index < len(lines):
        line = lines[index].strip()
        index += 1
        if line.startswith("python - <<'EOF'"):
            end = lines.index("EOF", index)
            steps.append(("python", "\n".join(lines[index:end])))
            index = end + 1
            continue
        while line.endswith("\\"):
            line = line[:-1] + " " + lines[index].strip()
            index += 1
        if line:
            assert line.startswith("kintsugi "), f"the walkthrough runs python and kintsugi only: {line!r}"
            steps.append(("kintsugi", line))
    return steps


def test_the_readme_walkthrough_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KINTSUGI_HOME", raising=False)
    steps = walkthrough_commands(README.read_text())
    commands = [shlex.split(c)[1] for kind, c in steps if kind == "kintsugi"]
    assert commands == ["init", "run", "land", "run", "land", "run"]
    outputs = []
    for kind, step in steps:
        if kind == "python":
            exec(compile(step, "README walkthrough", "exec"), {"__name__": "__walkthrough__"})
            continue
        code, out, err = cli(*shlex.split(step, comments=True)[1:])
        assert code == 0, f"{step}\n{out}\n{err}"
        outputs.append(out)
    init, first, _, clean, _, broken = outputs
    assert "\nrecorded unitless: " in init
    assert "APPROVED v1" in first
    assert "detect   CLEAN" in clean and "train    trained" in clean
    assert "column 'wind' arrives as 'wind_speed'" in broken and "heal     healed" in broken
    assert "verify   CLEAN" in broken and "RESOLVED with heal notes" in broken
    ws = Workspace(tmp_path / ".kintsugi")
    statuses = [(r.kind.value if r.kind.command else "run", r.status.value) for r in list_runs(ws)]
    assert statuses == [
        ("init", "onboarded"),
        ("run", "promoted"),
        ("land", "landed"),
        ("run", "promoted"),
        ("land", "landed"),
        ("run", "promoted"),
    ], statuses
    import pyarrow.parquet as pq

    healed = pq.read_table(tmp_path / "seattle-weather.parquet")
    assert "wind_speed" not in healed.column_names and healed.column("wind").null_count == 0
