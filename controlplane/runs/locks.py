"""Every writer of a pipeline, serialized across processes: one exclusive advisory lock per pipeline.

Run, approve, reject, undo, promote, recover, land, accept, watch and game days all take it. A second writer
is refused at once (never queued) with the holder named. The lock is an `flock`, so it dies with its process:
a run record still `running` whose pipeline lock is free (or held by another run) was interrupted.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from controlplane.errors import PipelineBusy
from controlplane.workspace import Workspace

__all__ = ["pipeline_lock", "lock_holder"]


def _lock_path(ws: Workspace, pipeline: str) -> Path:
    return ws.runs / f".{pipeline}.lock"


@contextmanager
def pipeline_lock(ws: Workspace, pipeline: str, holder: str) -> Iterator[None]:
    """Hold the pipeline's lock for `holder` (a run id or a command); a second writer is refused, and so is
    every writer of a workspace that cannot be written (one line, before anything is written)."""
    ws.check_writable()
    handle = open(_lock_path(ws, pipeline), "a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            other = handle.read().strip() or "another process"
            raise PipelineBusy(
                f"pipeline {pipeline!r} is busy ({other})", "wait for it to finish, or check `kintsugi runs`"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{holder}, pid {os.getpid()}")
        handle.flush()
        yield
    finally:
        handle.close()


def lock_holder(ws: Workspace, pipeline: str) -> str | None:
    """Who holds the pipeline's lock now (the text it wrote), or None when nobody does."""
    path = _lock_path(ws, pipeline)
    if not path.is_file():
        return None
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            return handle.read().strip() or "unknown"
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None
