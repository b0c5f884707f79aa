"""The `kintsugi` entry point: the app with every command group, plugins included."""

from __future__ import annotations

import inspect
import logging
import os
import warnings
from importlib.metadata import entry_points

import typer
from typer.core import TyperOption

from controlplane.cli import contract, datahub, models, onboard, runs, watch
from controlplane.cli.errors import run_cli

__all__ = ["app", "main", "build_app"]

log = logging.getLogger(__name__)
PLUGIN_GROUP = "kintsugi.commands"


def _flags_take_no_value() -> None:
    """typer 0.29's help shows every flag (`--json`, `--help`) as taking a `<bool>`: a flag takes no value, so
    it shows none."""
    shown = TyperOption.display_type_rich
    if getattr(shown, "_kintsugi", False):
        return

    def display_type_rich(self: TyperOption, ctx: typer.Context) -> str | None:
        return None if self.is_flag and not self.count else shown(self, ctx)

    display_type_rich._kintsugi = True  # type: ignore[attr-defined]
    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign,assignment]


def build_app() -> typer.Typer:
    _flags_take_no_value()
    app = typer.Typer(
        add_completion=False, no_args_is_help=True, help="Kintsugi: a self-healing continuous-training control plane."
    )
    for module in (runs, contract, models, datahub, onboard, watch):
        module.register(app)
    for plugin in sorted(entry_points(group=PLUGIN_GROUP), key=lambda p: p.name):
        try:
            plugin.load()(app)
        except ImportError as exc:  # a package left out of this install: its commands are simply absent
            log.warning("kintsugi commands %r not loaded: %s", plugin.name, exc)
    _summaries_on_one_line(app)
    return app


def _summaries_on_one_line(app: typer.Typer) -> None:
    """typer's rich help lists a command by its docstring's first paragraph but keeps that paragraph's line breaks
    (a sentence broken where the source wrapped it): each command's summary is that paragraph joined into one."""
    for command in app.registered_commands:
        if command.short_help is None and command.callback is not None and command.callback.__doc__:
            first = inspect.cleandoc(command.callback.__doc__).split("\n\n", 1)[0]
            command.short_help = " ".join(first.split())
    for group in app.registered_groups:
        if group.typer_instance is not None:
            _summaries_on_one_line(group.typer_instance)


def _quiet_libraries() -> None:
    """Third-party chatter (MLflow's table migrations, schema hints) is not the user's business."""
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3")  # a dead tracking server fails in seconds,
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")  # not after minutes of MLflow's own retries
    for name in ("mlflow", "alembic", "datahub", "urllib3"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)


app = build_app()


def main() -> None:
    _quiet_libraries()
    run_cli(app)
