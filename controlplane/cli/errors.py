"""The one place the command line translates errors: one line on stderr — what was wrong; what to do — and exit 2.

Exit codes: 0 decided (promoted, the champion kept, unchanged, planned), 1 blocked (a verdict: a scheduler should
not retry), 3 a person must decide (paused, needs review), 2 an error (the line says what to do) — a bug
included: an exception outside the error tree is one line too (`error: unexpected <Type> in <command>: ...; report it with the run id [<id>]`),
never a traceback. Ctrl-C exits 130, the shell's code for an interrupt, with one line: a run it cut short is
left as a kill leaves it, for `kintsugi recover` (or the pipeline's next writer) to make consistent.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

import typer
import typer.main

from controlplane.errors import KintsugiError, report_fix, unexpected
from controlplane.vocab import EXIT_ERROR, EXIT_INTERRUPTED

__all__ = ["run_cli", "exit_code_of", "command_path", "unexpected_line"]


def exit_code_of(exc: KintsugiError) -> int:
    """Every error of the tree ends a command with exit 2: it is not a verdict on the data."""
    return EXIT_ERROR


def run_cli(app: typer.Typer) -> None:
    try:
        code = app(standalone_mode=False)  # click returns a command's Exit code instead of raising it
    except KintsugiError as exc:
        _fail(f"error: {exc}", exit_code_of(exc))
    except typer.Exit as exc:
        code = exc.exit_code
    except typer.Abort:
        _fail("aborted", EXIT_ERROR)
    except typer.TyperException as exc:  # usage errors and bad parameters
        _fail(f"error: {exc.format_message() if hasattr(exc, 'format_message') else exc}", EXIT_ERROR)
    except PermissionError as exc:  # a read-only workspace, say: still one line, still exit 2
        _fail(
            f"error: permission denied on {exc.filename or 'a workspace file'}; check the workspace's "
            "permissions, or pass --workspace DIR",
            EXIT_ERROR,
        )
    except KeyboardInterrupt:  # outside a command's body (typer turns one inside it into exit 130)
        code = EXIT_INTERRUPTED
    except Exception as exc:  # a bug: named on one line, with the run to report when one was under way
        _fail(unexpected_line(exc, command_path(app, sys.argv[1:])), EXIT_ERROR)
    if code == EXIT_INTERRUPTED:
        _fail(_interrupted_line(command_path(app, sys.argv[1:])), EXIT_INTERRUPTED)
    sys.exit(code if isinstance(code, int) else 0)


def _fail(line: str, code: int) -> None:
    typer.echo(line, err=True)
    sys.exit(code)


def unexpected_line(exc: BaseException, command: str) -> str:
    return f"error: {unexpected(exc, command)}; {report_fix(exc)}"


def _interrupted_line(command: str) -> str:
    return (
        f"error: interrupted in {command}; a run it cut short reads as interrupted until the pipeline's next "
        "command, or `kintsugi recover RUN_ID`, makes it consistent"
    )


def command_path(app: typer.Typer, argv: Sequence[str]) -> str:
    """The command the user ran (`run`, `contract apply`), read from the arguments with the app's own tree:
    the words that name a command, options (and their values) skipped."""
    try:
        command = typer.main.get_command(app)
    except Exception:  # the tree cannot be built: the first word is the best guess
        return next((word for word in argv if not word.startswith("-")), "kintsugi")
    words, tokens = [], iter(argv)
    for token in tokens:
        children = getattr(command, "commands", None)
        if children is None or token == "--":
            break
        if token.startswith("-"):
            if "=" not in token and _takes_value(command, token):
                next(tokens, None)
            continue
        if token not in children:
            break
        words.append(token)
        command = children[token]
    return " ".join(words) or command.name or "kintsugi"


def _takes_value(command: Any, option: str) -> bool:
    for param in getattr(command, "params", ()):
        if option in (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ())):
            return param.param_type_name == "option" and not (param.is_flag or param.count)
    return False
