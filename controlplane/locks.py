"""One run of a pipeline at a time, across processes: an exclusive advisory lock per pipeline."""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from typing import Iterator

from controlplane.errors import RunError
from controlplane.workspace import Workspace

__all__ = ["pipeline_lock"]


@contextmanager
def pipeline_lock(ws: Workspace, pipeline: str, holder: str) -> Iterator[None]:
    """Hold the pipeline's lock while running; a second holder is refused at once, never queued."""
    ws.runs.mkdir(parents=True, exist_ok=True)
    path = ws.runs / f".{pipeline}.lock"
    handle = open(path, "a+")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            other = handle.read().strip() or "another process"
            raise RunError(f"pipeline {pipeline!r} already has a run in progress ({other})",
                           "wait for it to finish, or check `kintsugi runs`") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"run {holder}, pid {os.getpid()}")
        handle.flush()
        yield
    finally:
        handle.close()
