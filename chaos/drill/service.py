"""A drill as a service for the front doors that serve agents and browsers (the MCP server, the HTTP API).

A drill changes process-wide state (environment, thread limits), so it runs in a spawned child process; a
serving process, and the runs it is driving, are left alone. Progress lines come back as they are said.
"""

from __future__ import annotations

import multiprocessing
from queue import Empty
from typing import Any, Callable

from chaos import errors as chaos_errors
from controlplane import errors
from controlplane.errors import InputError, InternalError, KintsugiError

__all__ = ["drill"]


def drill(
    scenarios: list[str] | None = None,
    seeds: int = 1,
    controls: int = 2,
    sweep_seeds: int = 0,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """`chaos.drill.demo.run_drill` over scenarios x seeds in throwaway estates, never the workspace; the scoreboard.

    The defaults are a quick drill (one seed, two clean controls, no sweep)."""
    from chaos.drill.demo import DrillPlan, default_scenarios

    known = default_scenarios()
    unknown = sorted(set(scenarios or ()) - set(known))
    if unknown:
        raise InputError(f"unknown drill scenario(s): {', '.join(unknown)}", f"use some of: {', '.join(known)}")
    if not 1 <= seeds <= 10 or not 0 <= controls <= 50 or not 0 <= sweep_seeds <= seeds:
        raise InputError(
            f"seeds={seeds}, controls={controls}, sweep_seeds={sweep_seeds}",
            "use 1..10 seeds, 0..50 controls and at most `seeds` sweep seeds",
        )
    plan = DrillPlan(tuple(scenarios or known), tuple(range(1, seeds + 1)), controls, sweep_seeds)
    return _in_child_process(plan, say or (lambda _: None))


def _in_child_process(plan: Any, say: Callable[[str], None]) -> Any:
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    # not a daemon: the drill starts its own worker processes, which a daemonic process may not have
    child = context.Process(target=_drill_child, args=(plan, queue), name="kintsugi-drill", daemon=False)
    child.start()
    try:
        while True:
            try:
                kind, value = queue.get(timeout=1.0)
            except Empty:
                if not child.is_alive():
                    raise InternalError(
                        f"the drill process ended without a scoreboard (exit {child.exitcode})",
                        "check the server log; run `kintsugi drill` by hand to see why",
                    ) from None
                continue
            if kind == "say":
                say(value)
            elif kind == "done":
                return value
            else:
                raise _rebuilt(*value)
    finally:
        child.join(timeout=5)
        if child.is_alive():  # left behind (the caller stopped waiting): it must not outlive the request
            child.terminate()
            child.join(timeout=5)


def _rebuilt(code: str, message: str, fix: str) -> KintsugiError:
    """The child's error as the same class of the tree (by its code), or an InternalError."""
    classes = [getattr(module, name) for module in (errors, chaos_errors) for name in module.__all__]
    match = next((cls for cls in classes if getattr(cls, "code", None) == code), InternalError)
    return match(message, fix)


def _drill_child(plan: Any, queue: Any) -> None:
    from chaos.drill.demo import run_drill

    try:
        queue.put(("done", run_drill(plan, say=lambda line: queue.put(("say", line)))))
    except KintsugiError as exc:
        queue.put(("error", (exc.code, exc.message, exc.fix)))
    except Exception as exc:  # reported to the parent, which raises it in the error tree
        queue.put(
            (
                "error",
                (
                    "internal",
                    f"the drill failed: {exc.__class__.__name__}: {exc}",
                    "run `kintsugi drill` by hand to see the whole error",
                ),
            )
        )
