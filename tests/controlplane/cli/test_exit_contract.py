"""The exit-code contract: 0 decided, 1 blocked, 2 an error, 3 a person must decide. An error nobody foresaw (a bug)
ends every command with one line on stderr and exit 2, never a traceback; a run it interrupts reads back FAILED.

Every command is enumerated from the app itself (plugins included), so a new command cannot escape the test.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Callable, Iterator

import pytest
import typer
import typer.main

from controlplane.cli import main
from controlplane.runs.journal import load_run
from controlplane.takeback.recovery import needs_recovery
from controlplane.vocab import RunStatus
from tests.support import GUARD_AT, PIPELINE, champion, iso, kintsugi

Holder = Any  # a typer CommandInfo or TyperInfo: whatever holds the function a command runs


def _registered(app: typer.Typer, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, Holder]]:
    """(command path, holder) of every command a user can run: each command, each group that runs by itself."""
    for info in app.registered_commands:
        assert info.callback is not None
        yield " ".join((*prefix, info.name or typer.main.get_command_name(info.callback.__name__))), info
    for group in app.registered_groups:
        sub = group.typer_instance
        assert sub is not None and group.name
        path = (*prefix, group.name)
        if sub.registered_callback is not None and sub.info.invoke_without_command:
            yield " ".join(path), sub.registered_callback
        yield from _registered(sub, path)


def _click_paths(command: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """The same, read from the command tree click parses with: what typer built is what the test covers."""
    children = getattr(command, "commands", None)
    if children is None:
        yield " ".join(prefix), command
        return
    if prefix and command.invoke_without_command:
        yield " ".join(prefix), command
    for name, child in children.items():
        yield from _click_paths(child, (*prefix, name))


COMMANDS = dict(_registered(main.app))
CLICK = dict(_click_paths(typer.main.get_command(main.app)))


def test_every_command_is_enumerated_plugins_included():
    assert set(COMMANDS) == set(CLICK)
    assert {"run", "approve", "contract apply", "runs", "runs show", "demo", "chaos inject", "mcp", "serve"} <= set(
        COMMANDS
    )


def _required_args(path: str) -> list[str]:
    """Just enough to pass parsing: every required argument and option, with a value each type accepts."""
    args = path.split()
    for param in CLICK[path].params:
        if param.required:
            args += ["1"] if param.param_type_name == "argument" else [param.opts[0], "1"]
    return args


def _raising(fn: Callable[..., Any], error: BaseException) -> Callable[..., Any]:
    @functools.wraps(fn)  # the same signature: typer parses the same options
    def raising(*args: Any, **kwargs: Any) -> Any:
        raise error

    return raising


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_an_unexpected_error_is_one_line_and_exit_2(path, monkeypatch, capsys, tmp_path):
    holder = COMMANDS[path]
    monkeypatch.setattr(holder, "callback", _raising(holder.callback, RuntimeError("boom\n  at line 2")))
    monkeypatch.setenv("KINTSUGI_HOME", str(tmp_path))
    code, _, err = kintsugi(monkeypatch, capsys, *_required_args(path))
    assert code == 2, err
    assert "Traceback" not in err
    assert err.splitlines() == [f"error: unexpected RuntimeError in {path}: boom at line 2; report it with the run id"]


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys, tmp_path):
    holder = COMMANDS["guard"]
    monkeypatch.setattr(holder, "callback", _raising(holder.callback, KeyboardInterrupt()))
    code, _, err = kintsugi(monkeypatch, capsys, "guard", PIPELINE, "-w", str(tmp_path))
    assert code == 130 and "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("error: interrupted in guard; ") and "kintsugi recover RUN_ID" in line


def test_the_command_path_skips_options_and_their_values(monkeypatch, capsys, tmp_path):
    holder = COMMANDS["runs show"]
    monkeypatch.setattr(holder, "callback", _raising(holder.callback, ValueError("x" * 1000)))
    code, _, err = kintsugi(monkeypatch, capsys, "runs", "-w", str(tmp_path), "--pipeline", "show", "show", "r1")
    (line,) = err.splitlines()
    assert code == 2 and line.startswith("error: unexpected ValueError in runs show: xxx")
    assert len(line) < 400 and line.endswith("…; report it with the run id")


def _one_line(err: str, command: str) -> str:
    """The run id the one line of stderr names."""
    (line,) = err.splitlines()
    found = re.fullmatch(rf"error: unexpected RuntimeError in {command}: boom; report it with the run id (\S+)", line)
    assert found, line
    return found.group(1)


def test_a_run_that_fails_in_training_ends_failed_and_blocks_nothing(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy

    def train(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("controlplane.pipeline.train", train)
    code, out, err = kintsugi(monkeypatch, capsys, "run", PIPELINE, "-w", str(ws.root), "--now", iso(GUARD_AT))
    assert code == 2 and "Traceback" not in err + out
    record = load_run(ws, _one_line(err, "run"))
    assert record.status is RunStatus.FAILED
    assert record.outcome == "unexpected RuntimeError: boom"
    assert (record.events[-1].stage, record.events[-1].status) == ("error", "failed")
    assert not needs_recovery(record)  # every write it made is done: nothing for the next writer to roll back

    code, out, _ = kintsugi(monkeypatch, capsys, "runs", "show", record.run_id, "-w", str(ws.root), "--json")
    assert code == 0 and json.loads(out)["status"] == "failed"  # read back as FAILED, not running or interrupted
    code, out, _ = kintsugi(monkeypatch, capsys, "runs", "show", record.run_id, "-w", str(ws.root), "--decision")
    decision = json.loads(out)
    assert code == 0 and (decision["status"], decision["outcome"]) == ("failed", "unexpected RuntimeError: boom")
    assert len(out.encode()) < 2048 and decision["next"].startswith("get_run_detail(")
    code, out, err = kintsugi(
        monkeypatch, capsys, "run", PIPELINE, "-w", str(ws.root), "--now", iso(GUARD_AT), "--policy", "dry-run"
    )
    assert code == 0, err  # the next writer of the pipeline goes ahead
    assert load_run(ws, record.run_id).status is RunStatus.FAILED


def test_a_promote_that_fails_ends_failed(demo_copy, monkeypatch, capsys):
    ws, _ = demo_copy
    version = champion(ws)

    def move_champion(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("controlplane.champion.promote.move_champion", move_champion)
    code, _, err = kintsugi(
        monkeypatch, capsys, "promote", PIPELINE, str(version), "--reason", "by hand", "-w", str(ws.root)
    )
    assert code == 2
    record = load_run(ws, _one_line(err, "promote"))
    assert record.status is RunStatus.FAILED and record.outcome == "unexpected RuntimeError: boom"


def test_an_undo_that_fails_stays_undoing_and_undo_again_finishes_it(demo_copy, monkeypatch, capsys):
    """An undo is finished, never abandoned: an error mid-way leaves it `undoing` for the next writer."""
    ws, result = demo_copy
    run_id = result.healed.run_id

    def take_back(*args: Any, **kwargs: Any) -> int:
        raise RuntimeError("boom")

    with monkeypatch.context() as patched:
        patched.setattr("controlplane.takeback.recovery.take_back", take_back)
        code, _, err = kintsugi(monkeypatch, capsys, "undo", run_id, "-w", str(ws.root))
    assert code == 2 and _one_line(err, "undo") == run_id
    assert load_run(ws, run_id).status is RunStatus.UNDOING
    code, _, err = kintsugi(monkeypatch, capsys, "undo", run_id, "-w", str(ws.root))
    assert code == 0, err
    assert load_run(ws, run_id).status is RunStatus.UNDONE


def test_an_approve_refused_on_its_checkpoint_leaves_the_run_paused(demo_copy, monkeypatch, capsys):
    """A checkpoint that cannot be read refuses the approval before the run is claimed: it stays paused."""
    ws, result = demo_copy
    run_id, path = result.first.run_id, ws.run_dir(result.first.run_id) / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "status": "paused", "checkpoint": {"gate": "promote"}}))
    code, _, err = kintsugi(monkeypatch, capsys, "approve", run_id, "--reason", "ok", "-w", str(ws.root))
    assert code == 2 and len(err.splitlines()) == 1 and "checkpoint is unreadable" in err, err
    assert load_run(ws, run_id).status is RunStatus.PAUSED

    def load_checkpoint(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr("controlplane.pipeline.load_checkpoint", load_checkpoint)
    code, _, err = kintsugi(monkeypatch, capsys, "reject", run_id, "--reason", "no", "-w", str(ws.root))
    assert code == 2 and err.splitlines() == [
        "error: unexpected RuntimeError in reject: boom; report it with the run id"
    ]
    assert load_run(ws, run_id).status is RunStatus.PAUSED


@pytest.mark.parametrize("path", sorted(CLICK))
def test_every_command_takes_the_workspace(path):
    """README: every command takes --workspace (or KINTSUGI_HOME); a command without it could not be pointed at
    another workspace."""
    assert any("--workspace" in param.opts for param in CLICK[path].params), path
